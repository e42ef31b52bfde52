"""An air-gapped cluster's images from one mirror (`images.registry_mirror`): each image
reference keeps its path and loses its registry, through the chart values that name
registries (model/versions.py, CHART_IMAGE_VALUES), the operators' custom resources and the
program's own pods. Pure functions; without a mirror each returns its input."""

from __future__ import annotations

import copy
from typing import Any

from model.versions import CHART_IMAGE_VALUES, REGISTRY_KEY

# Docker's reference grammar (distribution/reference): a first component with a dot or a
# port, or `localhost`, is a registry; without one the image is on Docker Hub, and a
# one-component name there lives under `library/`.
_DOCKER_HUB_LIBRARY = "library"


def without_registry(reference: str) -> str:
    """`registry.k8s.io/kueue/kueue:v0.19.2` -> `kueue/kueue:v0.19.2`; `busybox:1.38.0` ->
    `library/busybox:1.38.0`."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return rest
    return reference if rest else f"{_DOCKER_HUB_LIBRARY}/{reference}"


def mirrored(reference: str | None, mirror: str | None) -> str | None:
    """An image reference (or a repository, with or without its tag) from the mirror."""
    if reference is None or mirror is None:
        return reference
    return f"{mirror}/{without_registry(reference)}"


def mirrored_values(chart: str, values: dict[str, Any], mirror: str | None) -> dict[str, Any]:
    """A release's values with every registry the chart names pointed at the mirror; the
    release's own values (tags, other keys) kept."""
    if mirror is None:
        return values
    merged = copy.copy(values)
    for path, upstream in CHART_IMAGE_VALUES[chart].items():
        *parents, leaf = path.split(".")
        node = merged
        for key in parents:
            node[key] = dict(node.get(key) or {})
            node = node[key]
        node[leaf] = mirror if upstream == REGISTRY_KEY else mirrored(upstream, mirror)
    return merged
