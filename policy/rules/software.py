"""Pinned software rules: every image and every Helm chart at a fixed version, so a plan
today and an apply next week install the same thing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from model.image_reference import references_in
from policy.rules.base import KUBERNETES_WORKLOADS, Context, Subject, rule

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# A ConfigMap can hand an operator the images it runs (Rook's Ceph CSI image set).
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def _images(value: Any) -> Iterator[str]:
    """Every image reference in a manifest or in Helm values: `image: repo:tag` strings,
    `image: {repository, tag}` objects, and the references any other string names (an env
    value, an argument, a ConfigMap's data: model/image_reference.py)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "image" and isinstance(item, str):
                yield item
            elif key == "image" and isinstance(item, dict) and "tag" in item:
                yield f"{item.get('repository') or '(chart default image)'}:{item.get('tag')}"
            else:
                yield from _images(item)
    elif isinstance(value, list):
        for item in value:
            yield from _images(item)
    elif isinstance(value, str):
        yield from references_in(value)


def _unpinned(image: str) -> str | None:
    """Why `image` is not pinned, or None: a digest pins it; a tag pins it unless it is
    `latest`, which names whatever was pushed last."""
    if "@sha256:" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last or last.endswith(":"):
        return "has no tag or digest"
    return "is :latest" if last.endswith(":latest") else None


@rule(
    "images-pinned",
    "mandatory",
    [*KUBERNETES_WORKLOADS, HELM_RELEASE, CONFIG_MAP],
    "Every image is pinned to a tag or digest, never latest; the charts' rendered pods and the "
    "images their ConfigMaps name too.",
    "set the tag in model/versions.py (or selftest.image for the self-test)",
    rendered=True,
)
def images_pinned(r: Subject, ctx: Context) -> Iterator[str]:
    source = r.props.get("values") if r.type == HELM_RELEASE else r.props
    for image in _images(source or {}):
        why = _unpinned(image)
        if why:
            yield f"image {image} {why}"


@rule(
    "helm-charts-pinned",
    "mandatory",
    [HELM_RELEASE],
    "Every Helm chart is pinned to a version.",
    "pin the chart in model/versions.py",
)
def helm_charts_pinned(r: Subject, ctx: Context) -> Iterator[str]:
    version = str(r.props.get("version") or "")
    if not version or version == "latest" or any(c in version for c in "*^~><x"):
        yield f"chart {r.props.get('chart')} is not pinned (version {version or 'unset'})"


RULES = [images_pinned, helm_charts_pinned]
