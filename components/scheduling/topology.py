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

from components.vocabulary import KUEUE_API
from model.config import GpuPool, PlatformConfig
from model.config.scheduling import CLIQUE_LABEL, wanted_topology
from model.config.scheduling import topology_levels as pool_topology
from model.warning_kinds import warning

PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"


def label_command(levels: tuple[str, ...]) -> str:
    """How the admin puts the levels on one node of the pool (`kubectl label` takes
    key=value pairs): every level but the host's, which the kubelet sets."""
    pairs = " ".join(f"{level}=<{level.rsplit('/', 1)[-1]}>" for level in levels[:-1])
    return f"kubectl label node <node> {pairs}"


def _node_check(pool: GpuPool, levels: tuple[str, ...]) -> str:
    selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_selector.items()))
    return f"kubectl get nodes -l {selector} -L {','.join(levels[:-1])}"


def topology_report(cfg: PlatformConfig) -> dict[str, dict[str, Any]]:
    """For the plan, per multi-node pool with levels: which labels its nodes need, who puts
    them there, and whether Kueue places the pool's jobs by them yet."""
    found = {}
    for pool in cfg.gpu_pools:
        wanted = wanted_topology(cfg, pool)
        if wanted is None:
            continue
        levels = wanted[1]
        gfd = ", GPU Feature Discovery (the NVLink clique)" if CLIQUE_LABEL in levels else ""
        found[pool.name] = {
            "node_labels": list(levels),
            "labelled_by": f"EKS (instance topology labels){gfd} and the kubelet (hostname)"
            if cfg.provider == "aws"
            else f"the admin: `{label_command(levels)}` on every node; the kubelet (hostname)",
            "check": _node_check(pool, levels),
            "kueue_places_by_them": pool_topology(cfg, pool) is not None,
        }
    return found


def topology_warnings(cfg: PlatformConfig) -> list[str]:
    """The labels an existing cluster's multi-node pool must carry before Kueue may place by
    them: the admin applies them, then says so (Kueue's TAS skips a node that lacks any level,
    v0.19.2 pkg/util/tas/node.go NodeMatchesFlavor)."""
    found = []
    for name, row in topology_report(cfg).items():
        if row["kueue_places_by_them"] or cfg.provider == "aws":
            continue
        pool = next(p for p in cfg.gpu_pools if p.name == name)
        levels = tuple(row["node_labels"])
        selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_selector.items()))
        found.append(
            warning(
                "topology-labels-unapplied",
                f"gpu-platform:scheduling.topology_labels_applied: pool {name}'s nodes "
                f"({selector}) need the labels {', '.join(levels[:-1])} before Kueue may place "
                f"jobs by topology: on each node `{label_command(levels)}` (check with "
                f"`{row['check']}`), then set scheduling.topology_labels_applied: true. Until "
                "then Kueue admits by quota alone (docs/scheduling.md, Topology-aware placement)",
            )
        )
    return found


def topology(name: str, levels: tuple[str, ...]) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
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
    cfg: PlatformConfig,
    pool: GpuPool,
    required: bool = False,
    level: str | None = None,
    nodes: int = 1,
) -> dict[str, str]:
    """The pod-template annotation that asks Kueue to place a job's pods in one domain of
    `level` (default: the closest), preferred or required; none where the pool has no
    topology. On a pool of multi-node NVLink domains (GB200 NVL72), a job that fits in one
    domain requires it: NVLink between its nodes exists only inside one IMEX domain, and a
    preferred placement may split the job over two when a domain is busy. A job of more nodes
    than a domain holds can never be placed in one, so asking for that is refused."""
    named = pool_topology(cfg, pool)
    if named is None:
        return {}
    levels = named[1]
    if level is not None and level not in levels:
        raise ValueError(
            f"topology level {level!r} is not one of pool {pool.name}'s: {', '.join(levels)}"
        )
    domain = pool.nvlink_domain_nodes
    if domain is not None and CLIQUE_LABEL in levels:
        if level is None and nodes <= domain:
            level, required = CLIQUE_LABEL, True
        elif level is None:
            # Past one domain: as few domains as fit, under the closest network node.
            level = levels[levels.index(CLIQUE_LABEL) - 1]
        if level == CLIQUE_LABEL and required and nodes > domain:
            raise ValueError(
                f"a job of {nodes} nodes cannot be kept in one NVLink domain of pool "
                f"{pool.name} ({CLIQUE_LABEL}): at most {domain} nodes per IMEX domain "
                "(dra-driver-nvidia-gpu v0.4.1 cmd/compute-domain-controller/main.go); run "
                f"{domain} nodes or fewer, or let the job span domains over EFA"
            )
    key = REQUIRED_ANNOTATION if required else PREFERRED_ANNOTATION
    return {key: level or closest_level(levels)}
