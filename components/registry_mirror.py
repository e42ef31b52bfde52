"""Where the cluster pulls each image from instead of its upstream registry: one mirror for
every registry (`images.registry_mirror`, an air-gapped cluster's), or an ECR pull-through cache
rule's prefix per upstream registry the cache serves (`images.pull_through_cache`), and for
nvcr.io, which no rule can cache, the prefix of the ECR repositories NVIDIA's images are copied
into (components/data/pull_through_cache.py). Each image reference keeps its path and loses its
registry, through the chart values that name registries (model/versions.py,
CHART_IMAGE_VALUES and CHART_IMAGE_BLOCKS), the operators' custom resources and the program's
own pods. Pure functions; without a route each returns its input."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from model.config import PlatformConfig
from model.config.images import NVIDIA_COPY_PREFIX, NVIDIA_REGISTRY, PULL_THROUGH_UPSTREAMS
from model.image_reference import is_registry
from model.versions import CHART_IMAGE_BLOCKS, CHART_IMAGE_VALUES, REGISTRY_KEY

# Docker's reference grammar (distribution/reference): a first component with a dot or a
# port, or `localhost`, is a registry; without one the image is on Docker Hub, and a
# one-component name there lives under `library/`.
_DOCKER_HUB_LIBRARY = "library"
_DOCKER_HUB = "docker.io"


@dataclass(frozen=True)
class ImageRoute:
    """A mirror for every registry, or a base per upstream registry (others stay upstream)."""

    mirror: str | None = None
    # (upstream registry, `<account>.dkr.ecr.<region>.amazonaws.com/<prefix>`), pull-through.
    cached: tuple[tuple[str, str], ...] = ()
    # The same, for registries whose images are copied into ECR repositories under the prefix.
    copied: tuple[tuple[str, str], ...] = ()

    def base(self, registry: str) -> str | None:
        return self.mirror or dict(self.cached + self.copied).get(registry)


# What the callers hand over: a route, a mirror's `host[:port][/path]`, or None (upstream).
Route = ImageRoute | str | None


def _route(route: Route) -> ImageRoute | None:
    return ImageRoute(mirror=route) if isinstance(route, str) else route


def ecr_registry(account_id: str, region: str) -> str:
    return f"{account_id}.dkr.ecr.{region}.amazonaws.com"


def nvidia_copy_base(cfg: PlatformConfig) -> str | None:
    """`<account>.dkr.ecr.<region>.amazonaws.com/nvcr`: where NVIDIA's images are copied, on a
    stack with a pull-through cache."""
    cache = cfg.images.pull_through_cache
    if cache is None or cfg.aws is None:
        return None
    return f"{ecr_registry(cache.account_id, cfg.aws.region)}/{NVIDIA_COPY_PREFIX}"


def image_route(cfg: PlatformConfig) -> ImageRoute | None:
    """The stack's route: its mirror, or its pull-through cache rules' prefixes and, once
    NVIDIA's images are copied (`nvidia_copied`), their repositories' prefix."""
    if cfg.images.registry_mirror is not None:
        return ImageRoute(mirror=cfg.images.registry_mirror)
    cache, copy_base = cfg.images.pull_through_cache, nvidia_copy_base(cfg)
    if cache is None or copy_base is None:
        return None
    registry = ecr_registry(cache.account_id, cfg.aws.region)
    return ImageRoute(
        cached=tuple(
            (host, f"{registry}/{PULL_THROUGH_UPSTREAMS[host].prefix}")
            for host in cache.upstreams()
        ),
        copied=((NVIDIA_REGISTRY, copy_base),) if cache.nvidia_copied else (),
    )


def _split(reference: str) -> tuple[str | None, str]:
    """(registry or None for Docker Hub, the rest)."""
    first, _, rest = reference.partition("/")
    if rest and is_registry(first):
        return first, rest
    return None, reference


def registry_of(reference: str) -> str:
    """The registry an image reference (or a repository) names; Docker Hub's is docker.io."""
    return _split(reference)[0] or _DOCKER_HUB


def without_registry(reference: str) -> str:
    """`registry.k8s.io/kueue/kueue:v0.19.2` -> `kueue/kueue:v0.19.2`; `busybox:1.38.0` ->
    `library/busybox:1.38.0`, as is `docker.io/busybox:1.38.0`."""
    registry, rest = _split(reference)
    if registry not in (None, _DOCKER_HUB) or "/" in rest:
        return rest
    return f"{_DOCKER_HUB_LIBRARY}/{rest}"


def mirrored(reference: str | None, route: Route) -> str | None:
    """An image reference (or a repository, with or without its tag) as the route serves it."""
    route = _route(route)
    if reference is None or route is None:
        return reference
    base = route.base(registry_of(reference))
    return reference if base is None else f"{base}/{without_registry(reference)}"


def _set(values: dict[str, Any], path: str, value: str) -> None:
    """values[a][b][c] = value for `a.b.c`, copying each dict on the way."""
    *parents, leaf = path.split(".")
    node = values
    for key in parents:
        node[key] = dict(node.get(key) or {})
        node = node[key]
    node[leaf] = value


def mirrored_values(chart: str, values: dict[str, Any], route: Route) -> dict[str, Any]:
    """A release's values with every registry the chart names pointed where the route says;
    the release's own values (tags, other keys) kept. A value that names a registry alone
    serves every image of the chart, from upstreams a pull-through prefix each cannot share:
    only a mirror replaces it, and the cache points each image block of such a chart at its
    own prefix instead (a Docker Hub image gains `library/` where it lacks a namespace)."""
    route = _route(route)
    if route is None:
        return values
    merged = copy.copy(values)
    for path, upstream in CHART_IMAGE_VALUES[chart].items():
        if upstream == REGISTRY_KEY and route.mirror is None:
            continue
        _set(merged, path, route.mirror if upstream == REGISTRY_KEY else mirrored(upstream, route))
    if route.mirror is not None:
        return merged
    for path, upstream in CHART_IMAGE_BLOCKS.get(chart, {}).items():
        base = route.base(registry_of(upstream))
        if base is not None:
            _set(merged, f"{path}.registry", base)
            _set(merged, f"{path}.repository", without_registry(upstream))
    return merged


def repository_of(reference: str) -> str:
    """`nvcr.io/nvidia/k8s-device-plugin:v0.20.0` -> `nvidia/k8s-device-plugin`: the path
    without registry, tag or digest (Docker's reference grammar: a tag follows the last `:`
    after the last `/`, a digest the `@`)."""
    path = without_registry(reference).partition("@")[0]
    head, slash, last = path.rpartition("/")
    return f"{head}{slash}{last.partition(':')[0]}"


def nvidia_copies(references: list[str], cfg: PlatformConfig) -> list[tuple[str, str]]:
    """(nvcr.io source, ECR destination) for every NVIDIA image among `references`, sorted:
    one the stack still pulls from nvcr.io, or one it already pulls from the copy."""
    base = nvidia_copy_base(cfg)
    if base is None:
        return []
    pairs = set()
    for reference in references:
        if reference.startswith(f"{base}/"):
            source = f"{NVIDIA_REGISTRY}/{reference.removeprefix(f'{base}/')}"
        elif registry_of(reference) == NVIDIA_REGISTRY:
            source = reference
        else:
            continue
        pairs.add((source, f"{base}/{without_registry(source)}"))
    return sorted(pairs)
