"""Moving a pool from the device plugin to DRA, as plans against the one before (issue 41 §1):
never in place, always in steps that each leave a node serving every queue.

A pool's GPU allocation is not changed on its running nodes. The device plugin and the DRA
driver never serve one node (../shared/PINS.md "Coexistence with the GPU Operator's device
plugin"), so the switch would relabel every node of the pool at once (its node group's labels:
`nvidia.com/gpu.deploy.device-plugin`), and every job running there would lose the GPUs it asked
for in the way it asked: `nvidia.com/gpu` requests on nodes that no longer advertise it, or
claims on nodes whose driver is not there yet. `python -m plan --against` refuses it and names
the path instead:

1. a new group beside the old one, `gpu_allocation: dra` (min_size 1: no scale from zero with
   claims): its nodes join, pass the node-join check, and its Kueue flavor gains quota in the
   DRA quota names (model/dra.device_class_quota) in every queue that lists the pool;
2. the queue's quota moved to it (`scheduling.cluster_queues[].gpus`, the old pool 0): Kueue
   admits nothing more to the old flavor, and checks quota only at admission (PINS.md "DRA quota
   (0.19.2)": "quota is checked at admission"), so what runs there runs to its end, nothing is
   evicted; with no new pod, the old nodes empty and cluster-autoscaler removes them;
3. the old group removed, once its jobs have finished.

Each step's plan is read against the one before: the steps it takes (`steps`), and a queue that
would be left with no pool already serving it (`gaps`): a pool new in this plan serves only once
its nodes join.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from components.selftest.node_join import daemon_set_name
from components.vocabulary import CANARY_LABEL
from model.config import PlatformConfig
from model.config.base import cpu_quantity
from model.config.gpu_operator import DEVICE_PLUGIN_DEPLOY_LABEL, DEVICE_PLUGIN_OFF
from model.config.pools import NODE_GROUP_LABEL
from model.dra import GPU_QUOTA, mig_quota
from plan.blast_radius import DAEMON_SET
from plan.diff import PreviousPlan
from plan.knock_on import NODE_GROUP

_CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
# The resources a GPU is charged as, on either path (model/dra.device_class_quota keeps the
# device plugin's names): whole GPUs, or MIG slices of a profile.
_MIG_PREFIX = mig_quota("")


def allocation(report: dict[str, Any]) -> str:
    """A pool's allocation as its plan's `gpu_pools` output says it: a DRA pool's nodes are those
    with the device plugin off (model/config/pools.py `_selector`)."""
    off = report.get("node_selector", {}).get(DEVICE_PLUGIN_DEPLOY_LABEL) == DEVICE_PLUGIN_OFF
    return "dra" if off else "device_plugin"


def _key_path(cfg: PlatformConfig, pool: str) -> str:
    for i, group in enumerate(cfg.gpu_node_groups):
        if group.name == pool:
            return f"gpu_node_groups[{i}].gpu_allocation"
    pools = cfg.existing.gpu_pools if cfg.existing else []
    i = next(i for i, p in enumerate(pools) if p.name == pool)
    return f"existing.gpu_pools[{i}].gpu_allocation"


def refusals(cfg: PlatformConfig, stack_file: str, previous: PreviousPlan) -> list[str]:
    """A pool of the earlier plan whose allocation this stack changes in place."""
    earlier = previous.outputs.get("gpu_pools") or {}
    found = []
    for pool in cfg.gpu_pools:
        if pool.name not in earlier:
            continue
        before = allocation(earlier[pool.name])
        if before == pool.gpu_allocation:
            continue
        found.append(
            f"{stack_file}: {_key_path(cfg, pool.name)}: {pool.gpu_allocation!r}, but pool "
            f"{pool.name} runs on {before} in the earlier plan: its nodes would switch at "
            "once, and every job there would lose its GPUs. Valid: keep "
            f"{before!r} here and move in steps, each a plan of its own: (1) add a new group "
            f"with gpu_allocation: {pool.gpu_allocation}, (2) move the queues' quota to it "
            f"(scheduling.cluster_queues[].gpus: {pool.name}: 0), (3) remove {pool.name} once "
            'its jobs have finished (docs/gpu-nodes.md, "Moving a pool to DRA")'
        )
    return found


def gpu_quota(resources: Iterable[dict[str, Any]]) -> dict[str, dict[str, Fraction]]:
    """ClusterQueue -> flavor -> nominal GPUs (or MIG slices) it holds there."""
    found: dict[str, dict[str, Fraction]] = {}
    for r in resources:
        if r["type"] != _CLUSTER_QUEUE:
            continue
        queue = found.setdefault(r["inputs"]["metadata"]["name"], {})
        for group in r["inputs"]["spec"].get("resourceGroups", []):
            for flavor in group.get("flavors", []):
                gpus = sum(
                    (
                        cpu_quantity(q["nominalQuota"])
                        for q in flavor.get("resources", [])
                        if q.get("nominalQuota") not in (None, "")
                        and (q["name"] == GPU_QUOTA or q["name"].startswith(_MIG_PREFIX))
                    ),
                    Fraction(0),
                )
                queue[flavor["name"]] = queue.get(flavor["name"], Fraction(0)) + gpus
    return found


def _min_size(resources: list[dict[str, Any]], pool: str) -> int:
    """The pool's own node group's min_size (its canary group aside); 0 on an existing
    cluster, whose nodes are the admin's."""
    for r in resources:
        labels = (r["inputs"].get("labels") or {}) if r["type"] == NODE_GROUP else {}
        if labels.get(NODE_GROUP_LABEL) == pool and CANARY_LABEL not in labels:
            return int(r["inputs"]["scalingConfig"]["minSize"])
    return 0


def _serving(quota: dict[str, Fraction], pools: Iterable[str]) -> list[str]:
    return sorted(p for p in pools if quota.get(p, 0) > 0)


def gaps(
    previous: PreviousPlan, current: list[dict[str, Any]], outputs: dict[str, Any]
) -> list[str]:
    """Each queue that some pool served before this plan and that no pool already there serves
    after it: until the new pools' nodes join (and pass the node-join check), nothing serves it."""
    earlier_pools = set(previous.outputs.get("gpu_pools") or {})
    now_pools = set(outputs.get("gpu_pools") or {})
    before, after = gpu_quota(previous.resources), gpu_quota(current)
    found = []
    for queue, quota in sorted(before.items()):
        served = _serving(quota, earlier_pools)
        if not served or queue not in after:
            continue
        if _serving(after[queue], earlier_pools & now_pools):
            continue
        new = _serving(after[queue], now_pools - earlier_pools)
        found.append(
            f"ClusterQueue {queue}: served by {', '.join(served)} before this plan, and by no "
            f"pool already there after it ({', '.join(new) or 'none'} new: serving only once "
            "their nodes join): add the new pool in one plan, move the quota in the next"
        )
    return found


def steps(
    previous: PreviousPlan, current: list[dict[str, Any]], outputs: dict[str, Any]
) -> list[str]:
    """What this plan does of a move between GPU allocations, pool by pool: a pool that joins
    beside one on the other allocation, a pool whose queues' quota moved away (drains), a pool
    removed."""
    earlier = previous.outputs.get("gpu_pools") or {}
    now = outputs.get("gpu_pools") or {}
    kinds = {allocation(r) for r in [*earlier.values(), *now.values()]}
    if len(kinds) < 2:
        return []
    before, after = gpu_quota(previous.resources), gpu_quota(current)
    found = []
    checks = {r["inputs"]["metadata"]["name"] for r in current if r["type"] == DAEMON_SET}
    for name in sorted(now.keys() - earlier.keys()):
        queues = sorted(q for q, quota in after.items() if quota.get(name, 0) > 0)
        check = daemon_set_name(name)
        tested = (
            f"its nodes pass the node-join check (DaemonSet {check}) before any job lands"
            if check in checks
            else "no node-join check tests its nodes (selftest.node_join): watch them join"
        )
        found.append(
            f"pool {name} joins on {allocation(now[name])}: {tested}; Kueue flavor {name} gains "
            f"quota in {', '.join(f'ClusterQueue {q}' for q in queues) or 'no ClusterQueue'}"
        )
    for name in sorted(now.keys() & earlier.keys()):
        had = sorted(q for q, quota in before.items() if quota.get(name, 0) > 0)
        has = [q for q in had if after.get(q, {}).get(name, 0) > 0]
        if had and not has:
            kept = _min_size(current, name)
            nodes = (
                f"its {kept} node(s) of min_size stay until the group is removed"
                if kept
                else "cluster-autoscaler removes its nodes as they empty"
            )
            found.append(
                f"pool {name} ({allocation(now[name])}) drains: Kueue admits nothing more to "
                f"flavor {name} (nominal quota 0 in {', '.join(had)}); what runs there runs to "
                f"its end (quota is checked at admission: nothing is evicted), and {nodes}"
            )
    for name in sorted(earlier.keys() - now.keys()):
        admitting = sorted(q for q, quota in before.items() if quota.get(name, 0) > 0)
        found.append(
            f"pool {name} ({allocation(earlier[name])}) is removed"
            + (
                f", while {', '.join(admitting)} still admitted to it in the earlier plan: any "
                "job running there is evicted; drain it first (its quota 0, one plan before)"
                if admitting
                else ": it admitted nothing in the earlier plan"
            )
        )
    return found


def migration_block(
    previous: PreviousPlan, current: list[dict[str, Any]], outputs: dict[str, Any]
) -> list[str]:
    """The diff's section: the steps, then any queue left unserved."""
    found = steps(previous, current, outputs)
    holes = gaps(previous, current, outputs)
    if not (found or holes):
        return []
    lines = ["GPU allocation (device plugin / DRA) steps:"]
    lines += [f"  - {line}" for line in found]
    lines += [f"  ! {line}" for line in holes]
    return lines
