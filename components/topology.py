"""Kueue topology-aware scheduling (TAS), as pure builders: a `Topology` per family of pools
whose nodes carry the same network levels, the ResourceFlavor's `topologyName` for pools whose
jobs span nodes, and the pod-set annotation that asks Kueue to place a job's pods close.

- On AWS the levels are the instance topology labels EKS puts on nodes of the types that report
  a topology (infra/catalog.NETWORK_TOPOLOGY_LAYERS): `topology.k8s.aws/network-node-layer-1`
  (broadest) down to `-3`, or `-4` on four-layer types, then `kubernetes.io/hostname`.
- On an existing cluster, the rack / switch labels the admin names in
  `scheduling.topology_levels`, then `kubernetes.io/hostname`.
- Kueue's annotations (Kueue "Run Workloads with Topology-Aware Scheduling", v0.19.2):
  `kueue.x-k8s.io/podset-required-topology` (all pods in one domain of that level, or wait) and
  `kueue.x-k8s.io/podset-preferred-topology` (one domain if it fits, else the fewest).
  Kueue allows `kubernetes.io/hostname` only as the lowest level (v0.19.2 Topology schema).
"""

from __future__ import annotations

from typing import Any

from infra.catalog import NETWORK_TOPOLOGY_LAYERS
from infra.config import GpuPool, PlatformConfig
from infra.config.scheduling import HOSTNAME_LABEL

KUEUE = "kueue.x-k8s.io/v1beta2"
AWS_LAYER_LABEL = "topology.k8s.aws/network-node-layer-{}"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
ONPREM_TOPOLOGY = "onprem-network"
# Fabrics whose jobs span nodes: the pools worth placing close together.
MULTI_NODE_FABRICS = ("efa", "infiniband", "roce")


def aws_topology_name(layers: int) -> str:
    return f"aws-network-{layers}-layers"


def aws_topology(layers: int) -> tuple[str, tuple[str, ...]]:
    """The Topology (name, levels broadest first) of EKS nodes reporting `layers` network
    layers."""
    levels = tuple(AWS_LAYER_LABEL.format(n) for n in range(1, layers + 1))
    return aws_topology_name(layers), (*levels, HOSTNAME_LABEL)


def pool_topology(cfg: PlatformConfig, pool: GpuPool) -> tuple[str, tuple[str, ...]] | None:
    """The Topology (name, levels broadest first) of a multi-node pool's nodes; None for a pool
    whose jobs stay on one node, or whose nodes carry no topology labels. A pool of several
    instance types takes the levels every one of them carries."""
    if pool.fabric not in MULTI_NODE_FABRICS:
        return None
    if cfg.provider == "aws":
        layers = min(NETWORK_TOPOLOGY_LAYERS.get(t, 0) for t in pool.instance_types)
        return aws_topology(layers) if layers else None
    if not cfg.scheduling.topology_levels:
        return None
    return ONPREM_TOPOLOGY, (*cfg.scheduling.topology_levels, HOSTNAME_LABEL)


def topology(name: str, levels: tuple[str, ...]) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": label} for label in levels]},
    }


def topology_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """One Topology per family of pools, in the order the pools first name them."""
    found: dict[str, tuple[str, ...]] = {}
    for pool in cfg.gpu_pools:
        named = pool_topology(cfg, pool)
        if named is not None:
            found.setdefault(*named)
    return [topology(name, levels) for name, levels in found.items()]


def closest_level(levels: tuple[str, ...]) -> str:
    """The narrowest network level: the one just above a single host. Preferring it packs a job
    under one leaf switch (AWS: the bottom network node) when it fits, and under as few as
    possible when it does not."""
    return levels[-2] if len(levels) > 1 else levels[-1]


def placement(
    cfg: PlatformConfig, pool: GpuPool, required: bool = False, level: str | None = None
) -> dict[str, str]:
    """The pod-template annotation that asks Kueue to place a job's pods in one domain of
    `level` (default: the closest), preferred or required; none where the pool has no
    topology."""
    named = pool_topology(cfg, pool)
    if named is None:
        return {}
    levels = named[1]
    if level is not None and level not in levels:
        raise ValueError(
            f"topology level {level!r} is not one of pool {pool.name}'s: {', '.join(levels)}"
        )
    key = REQUIRED_ANNOTATION if required else PREFERRED_ANNOTATION
    return {key: level or closest_level(levels)}
