"""Every image a stack will pull, each with the object that pulls it: the containers of every
pod template (rendered by the Helm releases or declared by the program), the component images
the operators' custom resources decide (ClusterPolicy, NicClusterPolicy, CephCluster, ...),
which no pod template names until the operator runs, and every image reference any other string
of an object names (model/image_reference.py): the Ceph CSI images Rook hands to
ceph-csi-operator in a ConfigMap (rook-ceph v1.20.6 templates/configmap.yaml,
`rook-csi-operator-image-set-configmap`), the config-reloader image prometheus-operator injects
(its `--prometheus-config-reloader` argument), the images the GPU and Network Operators read
from their environment. Written to out/<stack>/images.txt, the list an air-gapped cluster's
mirror must hold. With a pull-through cache, the NVIDIA images among them are copied into ECR
by out/<stack>/copy-nvidia-images.sh, written here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from model.image_reference import references_in

# Where each workload kind keeps its pod spec.
_POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
_TEMPLATE_PATH = ("spec", "template", "spec")  # Deployment, DaemonSet, StatefulSet, Job, ...
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = _dig(obj, _POD_SPEC_PATHS.get(obj.get("kind"), _TEMPLATE_PATH))
    return spec if isinstance(spec, dict) else None


def pod_images(obj: dict[str, Any]) -> list[str]:
    spec = pod_spec(obj) or {}
    return [
        c["image"]
        for key in _CONTAINER_LISTS
        for c in spec.get(key) or []
        if isinstance(c, dict) and isinstance(c.get("image"), str)
    ]


def component_image(block: dict[str, Any]) -> str | None:
    """An operator CR's component image: NVIDIA's operators split it into repository, image
    and version (a version that is a digest joins with @); others name it whole as `image`."""
    repository, image, version = (block.get(k) for k in ("repository", "image", "version"))
    if all(isinstance(v, str) and v for v in (repository, image, version)):
        joiner = "@" if version.startswith("sha256:") else ":"
        return f"{repository.rstrip('/')}/{image}{joiner}{version}"
    if isinstance(image, str) and ("/" in image or ":" in image) and repository is None:
        return image
    return None


def custom_resource_images(obj: dict[str, Any]) -> list[str]:
    found = []

    def walk(node: Any) -> None:
        # A component the CR turns off is never pulled (the AL2023 AMI brings the driver).
        if isinstance(node, dict) and node.get("enabled") is not False:
            image = component_image(node)
            if image:
                found.append(image)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(obj.get("spec"))
    return found


def object_label(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    scope = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {scope}{meta.get('name', 'unnamed')}"


def is_builtin(api_version: str) -> bool:
    """Kubernetes' own groups: the core group, unqualified groups (apps, batch, ...) and
    *.k8s.io, except the *.x-k8s.io groups SIG projects serve through CRDs (kueue, autoscaling)."""
    group = api_version.rpartition("/")[0]
    return "." not in group or (group.endswith(".k8s.io") and not group.endswith("x-k8s.io"))


def strings_of(value: Any) -> list[str]:
    """Every string value in an object, however deep (keys are names, not values)."""
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings_of(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings_of(item)]
    return [value] if isinstance(value, str) else []


# A CRD's schema describes images in prose and examples; it pulls none.
_NO_IMAGES = {"CustomResourceDefinition"}


def named_images(obj: dict[str, Any]) -> list[str]:
    """The image references an object's strings name, wherever they sit."""
    if obj.get("kind") in _NO_IMAGES:
        return []
    return [ref for text in strings_of(obj) for ref in references_in(text)]


def images_of(obj: dict[str, Any]) -> list[str]:
    if is_builtin(obj.get("apiVersion", "")):
        structured = pod_images(obj)
    else:
        structured = custom_resource_images(obj)
    return list(dict.fromkeys([*structured, *named_images(obj)]))


def image_lines(sources: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """`<image>  <Kind namespace/name> (<origin>)`, sorted and unique, from (origin, object)
    pairs; the origin is the Helm release that renders the object, or `declared`."""
    lines = set()
    for origin, obj in sources:
        for image in images_of(obj):
            lines.add(f"{image}  {object_label(obj)} ({origin})")
    return sorted(lines)


def write_images(lines: list[str], out_dir: Path) -> Path:
    path = out_dir / "images.txt"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def _copyable(reference: str) -> str:
    """skopeo's docker transport takes a tag or a digest, not both (containers-transports(5),
    `docker://docker-reference`): a pinned image is copied by its digest, which a copy to a
    digest reference keeps (containers/skopeo issue 1451)."""
    name, at, digest = reference.partition("@")
    if not at:
        return reference
    head, slash, last = name.rpartition("/")
    return f"{head}{slash}{last.partition(':')[0]}@{digest}"


def copy_script(stack: str, pairs: list[tuple[str, str]]) -> str:
    """A line a (source, destination): `--all` copies every platform of a multi-arch list and
    the list, `--preserve-digests` fails rather than change an image's digest (skopeo-copy(1),
    containers/skopeo docs/skopeo-copy.1.md); an image already there is left (its tag is
    immutable: ECR refuses a second push)."""
    lines = [
        "#!/bin/sh",
        f"# NVIDIA's images for stack {stack} into its ECR repositories, which `pulumi up`",
        "# creates; written by `python -m plan`. Needs skopeo logged in to nvcr.io (user",
        "# $oauthtoken, an NGC API key) and to the stack's ECR registry (docs/gpu-nodes.md).",
        "set -eu",
    ]
    for source, destination in pairs:
        src, dst = _copyable(source), _copyable(destination)
        lines.append(
            f"skopeo inspect --raw docker://{dst} >/dev/null 2>&1 || "
            f"skopeo copy --all --preserve-digests docker://{src} docker://{dst}"
        )
    return "".join(f"{line}\n" for line in lines)
