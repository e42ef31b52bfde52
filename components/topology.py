"""Kueue topology-aware scheduling (TAS), as pure builders: a `Topology` per family of pools
whose nodes carry the same network levels, the ResourceFlavor's `topologyName` for pools whose
jobs span nodes, and the pod-set annotation that asks Kueue to place a job's pods close.

- On AWS the levels are the instance topology labels EKS puts on nodes of the types that report
  a topology (infra/catalog.NETWORK_TOPOLOGY_LAYERS): `topology.k8s.aws/network-node-layer-1`
  (broadest) down to `-3`, or `-4` on four-layer types, then `kubernetes.io/hostname`.
- On an existing cluster, the rack / switch labels the admin names in
  `scheduling.topology_levels`, then `kubernetes.io/hostname`, once the admin has put them on
  the nodes (`scheduling.topology_labels_applied`); until then the plan says which labels each
  pool's nodes need and how to apply them (`topology_warnings`). Kueue's TAS ignores a node that
  lacks a level label (v0.19.2 `pkg/util/tas/node.go`, `NodeMatchesFlavor`), and in a
  ClusterQueue whose flavors all name a Topology it places every workload by it, annotated or
  not (`pkg/scheduler/flavorassigner/tas_flavorassigner.go`, `isTASImplied`): a flavor over
  unlabelled nodes would admit nothing, the self-test included.
- Kueue's annotations (Kueue "Run Workloads with Topology-Aware Scheduling", v0.19.2):
  `kueue.x-k8s.io/podset-required-topology` (all pods in one domain of that level, or wait) and
  `kueue.x-k8s.io/podset-preferred-topology` (one domain if it fits, else the fewest).
  Kueue allows `kubernetes.io/hostname` only as the lowest level (v0.19.2 Topology schema).
"""

from __future__ import annotations

from typing import Any

from infra.config import GpuPool, PlatformConfig
from infra.config.scheduling import topology_levels as pool_topology
from infra.config.scheduling import wanted_topology

KUEUE = "kueue.x-k8s.io/v1beta2"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"


def label_command(levels: tuple[str, ...]) -> str:
    """How the admin puts the levels on one node of the pool (`kubectl label` takes
    key=value pairs): every level but the host's, which the kubelet sets."""
    pairs = " ".join(f"{level}=<{level.rsplit('/', 1)[-1]}>" for level in levels[:-1])
    return f"kubectl label node <node> {pairs}"


def topology_warnings(cfg: PlatformConfig) -> list[str]:
    """The labels each multi-node pool's nodes must carry before Kueue may place by them: an
    existing cluster's admin applies them (Kueue's TAS skips a node that lacks any level,
    v0.19.2 pkg/util/tas/node.go NodeMatchesFlavor), then says so."""
    found = []
    for pool in cfg.gpu_pools:
        wanted = wanted_topology(cfg, pool)
        if wanted is None or cfg.provider == "aws":
            continue
        levels = wanted[1]
        selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_selector.items()))
        labels = ", ".join(levels[:-1])
        check = f"kubectl get nodes -l {selector} -L {','.join(levels[:-1])}"
        if pool_topology(cfg, pool) is None:
            found.append(
                f"gpu-platform:scheduling.topology_labels_applied: pool {pool.name}'s nodes "
                f"({selector}) need the labels {labels} before Kueue may place jobs by "
                f"topology: on each node `{label_command(levels)}` (check with `{check}`), "
                "then set scheduling.topology_labels_applied: true. Until then Kueue admits "
                "by quota alone (docs/scheduling.md, Topology-aware placement)"
            )
        else:
            found.append(
                f"gpu-platform:scheduling.topology_levels: Kueue places pool {pool.name}'s jobs "
                f"by {labels}: a node ({selector}) that lacks any of them is never used "
                f"(`{label_command(levels)}`; check with `{check}`)"
            )
    return found


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
