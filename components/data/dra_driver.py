"""NVIDIA's DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu, chart 0.4.1), installed
where some GPU pool allocates its GPUs through it (`gpu_allocation: dra`) or shares a multi-node
NVLink domain (GB200 NVL72: ComputeDomains for its multi-node jobs), with its kubelet plugin
only on those pools' nodes, where the GPU Operator's device plugin is off
(model/dra.py), and a DeviceClass per MIG profile those pools cut, so that Kueue can charge a
MIG claim to its profile (model/dra.device_class_quota).

The chart refuses GPU allocation unless `gpuResourcesEnabledOverride` says the device plugin is
off where its kubelet plugin runs (templates/validation.yaml); the nodes' labels make that true.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.base import PlatformComponent, plane_labels
from components.context import StackContext
from components.data.gpu_operator import installs_driver
from components.helm import pinned_release, privileged_namespace
from components.kubernetes_object import KubernetesObject
from components.vocabulary import GPU_NODE_DAEMONSET_TOLERATIONS
from model.config import GpuPool, PlatformConfig
from model.dra import (
    NAMESPACE,
    compute_domain_pools,
    dra_mig_profiles,
    dra_pools,
    driver_pools,
    mig_class,
    mig_class_selector,
    resource_api_version,
)

CHART = "dra-driver-nvidia-gpu"
# Where the NVIDIA driver's files sit on the host (chart values.yaml `nvidiaDriverRoot`): the
# AL2023 NVIDIA AMI installs it on the root; the GPU Operator's driver container under
# /run/nvidia/driver (../shared/PINS.md, "Chart values that matter").
HOST_DRIVER_ROOT = "/"
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"

# --------------------------------------------------------------------------- pure builders


def kubelet_plugin_affinity(pools: Sequence[GpuPool]) -> dict[str, Any]:
    """Required node affinity: a node of one of the pools the driver serves (model/dra.
    driver_pools), by all of its selector's labels (on a DRA pool they include the device
    plugin's switch set off). It replaces the chart's default terms,
    which match every NVIDIA node, device plugin or not (values.yaml `kubeletPlugin.affinity`):
    node selector terms are ORed, the expressions within one ANDed."""
    terms = [
        {
            "matchExpressions": [
                {"key": key, "operator": "In", "values": [value]}
                for key, value in sorted(pool.node_selector.items())
            ]
        }
        for pool in driver_pools(pools)
    ]
    required = {"nodeSelectorTerms": terms}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def helm_values(cfg: PlatformConfig, add_on_nodes: dict[str, str]) -> dict[str, Any]:
    """The chart's values (../shared/charts/dra-driver-nvidia-gpu/0.4.1/values.yaml)."""
    pools = cfg.gpu_pools
    gpus = bool(dra_pools(pools))
    operator_driver = cfg.installs("gpu_operator") and installs_driver(
        cfg.gpu_operator, cfg.provider == "aws"
    )
    return {
        # The DRA pools' nodes carry nvidia.com/gpu.deploy.device-plugin=false: the one case in
        # which the chart allows GPU allocation (templates/validation.yaml).
        "gpuResourcesEnabledOverride": gpus,
        # GPUs only where some pool allocates them through DRA: an NVLink pool keeps its GPUs
        # on the device plugin and takes only ComputeDomain channels from the driver (the EKS
        # UltraServer page's values: gpus off, computeDomains on).
        "resources": {
            "gpus": {"enabled": gpus},
            "computeDomains": {"enabled": bool(compute_domain_pools(pools))},
        },
        # An offline render always finds v1 among its capabilities; the cluster's minor decides.
        "resourceApiVersion": resource_api_version(cfg.cluster.kubernetes_version),
        "nvidiaDriverRoot": OPERATOR_DRIVER_ROOT if operator_driver else HOST_DRIVER_ROOT,
        "kubeletPlugin": {
            # A list: Helm replaces the chart's one toleration with these, which cover every
            # taint a GPU node carries (the GPU taint, node-join's, a canary's).
            "tolerations": [dict(t) for t in GPU_NODE_DAEMONSET_TOLERATIONS],
            "affinity": kubelet_plugin_affinity(pools),
        },
        # The ComputeDomain controller (with an NVLink pool) is no GPU workload: on
        # the add-on nodes, without the control-plane tolerations EKS has no use for (the EKS
        # UltraServer page clears them too).
        "controller": {"nodeSelector": dict(add_on_nodes), "tolerations": []},
    }


def mig_device_classes(pools: Sequence[GpuPool], api_version: str) -> list[dict[str, Any]]:
    """One DeviceClass per MIG profile the DRA pools cut (model/dra.mig_class)."""
    return [
        {
            "apiVersion": api_version,
            "kind": "DeviceClass",
            "metadata": {"name": mig_class(profile), "labels": plane_labels("data")},
            "spec": {"selectors": [{"cel": {"expression": mig_class_selector(profile)}}]},
        }
        for profile in dra_mig_profiles(pools)
    ]


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class DraDriverArgs:
    context: StackContext
    cfg: PlatformConfig
    add_on_nodes: dict[str, str]
    after: Sequence[pulumi.Resource] = ()
    # False where the cluster runs its own driver (existing.addons.dra_driver): no namespace
    # and no release; the MIG DeviceClasses are the platform's either way.
    install: bool = True


class DraDriver(PlatformComponent):
    """The driver's release in its own privileged namespace (its kubelet plugin mounts the
    host's driver and kubelet directories), and the MIG profiles' DeviceClasses after it.
    What the platform relies on in a driver the cluster runs itself is
    infra/existing_addons._dra_driver_needs."""

    PLANE = "data"

    def __init__(self, name: str, args: DraDriverArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        env = args.context.env
        before: list[pulumi.Resource] = list(args.after)
        outputs = {}
        if args.install:
            namespace = privileged_namespace(
                f"{env}-ns-{NAMESPACE}", NAMESPACE, plane_labels("data"), self
            )
            release = pinned_release(
                f"{env}-{CHART}",
                CHART,
                NAMESPACE,
                helm_values(args.cfg, args.add_on_nodes),
                self.child(depends_on=[namespace, *args.after]),
                context=args.context,
            )
            before, outputs = [release], {"release": release.name}
        api = resource_api_version(args.cfg.cluster.kubernetes_version)
        for obj in mig_device_classes(args.cfg.gpu_pools, api):
            KubernetesObject(
                f"{env}-deviceclass-{obj['metadata']['name']}",
                obj,
                self.child(depends_on=before),
            )
        self.register_outputs(outputs)
