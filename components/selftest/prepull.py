"""The warm-up's image pull: a new GPU node pulls the stack's training images (`images.prepull`
and the recipes image) while its node-join check runs (node_join.py), so a job's first pod there
starts without waiting minutes for a 10-20 GB image.

A DaemonSet per GPU pool, in the self-test's namespace, on every node of the pool: it tolerates
what every GPU node's DaemonSet does (the GPU taint, the node-join startup taint, the canary's),
so its pod starts as the node registers, and a canary node is measured pulling as a new node of
its pool is. Each image is an init container that exits at once
(`sh -c 'exit 0'`: the image must have `sh`); its one container is the pause image, which keeps
the pod, and with it the pulled images, in place: the kubelet's image garbage collection removes
only images no container uses (Kubernetes docs, "Garbage collection of unused containers and
images"). The pattern is JupyterHub's continuous image puller (jupyterhub/zero-to-jupyterhub-k8s,
jupyterhub/templates/image-puller/_helpers-daemonset.tpl).

No GPU, a few millicores, no account token, Pod Security `restricted`: it runs beside the jobs
and takes nothing from them."""

from __future__ import annotations

from typing import Any

from components.registry_mirror import image_route, mirrored
from components.scheduling.controller import RESOURCES
from components.scheduling.training_job import RUN_AS, security_context
from components.selftest.access import PART_OF
from components.vocabulary import GPU_NODE_DAEMONSET_TOLERATIONS
from model.config import GpuPool, PlatformConfig
from model.versions import PAUSE_IMAGE

POOL_LABEL = "gpu-platform/prepull-pool"
# A no-op every image with a shell has: the pull is the point, not the run.
NO_OP = ["sh", "-c", "exit 0"]


def daemon_set_name(pool: str) -> str:
    return f"prepull-{pool}"


def training_images(cfg: PlatformConfig) -> list[str]:
    """The images jobs on the stack's GPU pools run, as the cluster pulls them: `images.prepull`
    and the recipes image, through the mirror where one is set. The self-test image is not here:
    the node-join check pulls it on the same nodes."""
    listed = [*cfg.images.prepull, *([cfg.recipes.image] if cfg.recipes.image else [])]
    route = image_route(cfg)
    return [mirrored(image, route) for image in dict.fromkeys(listed)]


def _container(name: str, image: str, command: list[str] | None) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        **({"command": command} if command else {}),
        "resources": RESOURCES,
        "securityContext": security_context(),
    }


def daemon_set(cfg: PlatformConfig, pool: GpuPool, images: list[str]) -> dict[str, Any]:
    selector = {POOL_LABEL: pool.name}
    labels = {**PART_OF, **selector}
    pod = {
        "automountServiceAccountToken": False,
        "nodeSelector": dict(pool.node_selector),
        "tolerations": [dict(t) for t in GPU_NODE_DAEMONSET_TOLERATIONS],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "initContainers": [_container(f"pull-{i}", image, NO_OP) for i, image in enumerate(images)],
        "containers": [_container("pause", mirrored(PAUSE_IMAGE, image_route(cfg)), None)],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": daemon_set_name(pool.name),
            "namespace": cfg.namespaces.selftest,
            "labels": labels,
        },
        "spec": {
            "selector": {"matchLabels": selector},
            # A changed list pulls on every node at once: the pods hold no job's work.
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "100%"},
            },
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def prepull_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """A pre-puller per GPU pool; none where the stack names no training image."""
    images = training_images(cfg)
    if not images:
        return []
    return [daemon_set(cfg, pool, images) for pool in cfg.gpu_pools]
