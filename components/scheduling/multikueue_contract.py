"""What a MultiKueue worker stack exports and what its manager checks against it, before any
Secret reaches a cluster: the queue names MultiKueue dispatches to (the same ClusterQueue, and a
LocalQueue per team), the Kueue frameworks whose kinds it serves (each one's CRD installed:
JobSet's from the platform's release), and per GPU pool what a bursting queue counts on (the
instance type, the GPUs, the Topology levels the manager's flavor mirrors, whether its
GPUs are claimed through DRA). A worker not deployed
yet exports nothing, and says so.
"""

from __future__ import annotations

from typing import Any

from components.scheduling.kueue import queue_gpus
from components.scheduling.kueue_frameworks import INTEGRATIONS
from components.scheduling.topology import pool_topology
from model.catalog import CATALOG, NETWORK_TOPOLOGY_LAYERS
from model.config import PlatformConfig, stack_file
from model.config.multikueue import NOT_COPIED, BurstSettings
from model.config.scheduling import LOCAL_QUEUE, ClusterQueueSettings, aws_topology

# The worker stack's outputs the manager reads.
KUBECONFIG_OUTPUT = "multikueue_kubeconfig"
QUEUES_OUTPUT = "multikueue_queues"


def bursting(cfg: PlatformConfig) -> list[tuple[int, ClusterQueueSettings]]:
    return [(i, q) for i, q in enumerate(cfg.scheduling.cluster_queues) if q.burst is not None]


def burst_flavor_name(queue: str) -> str:
    return f"{queue}-burst"


def burst_topology(burst: BurstSettings) -> tuple[str, tuple[str, ...]] | None:
    """The Topology (name, levels) of the workers' nodes: what the worker's pools of the burst's
    type carry (components/topology.pool_topology: EFA nodes of a type that reports network
    layers), None where they carry none. The manager's flavor mirrors it, since Kueue matches a
    job's TAS request against the manager's flavor before the worker places it
    (pkg/scheduler/flavorassigner/tas_flavorassigner.go at v0.19.2, "Delay TAS when MultiKueue is
    used"; site/static/examples/multikueue/tas/manager-setup.yaml); the worker's export checks
    it (`offer_mismatches`)."""
    row = CATALOG[burst.instance_type]
    layers = NETWORK_TOPOLOGY_LAYERS.get(burst.instance_type, 0)
    if not layers or not row.efa_interfaces:
        return None
    return aws_topology(layers, clique=row.nvlink_domain_nodes is not None)


def queue_mismatches(cfg: PlatformConfig, worker: str, exported: Any) -> list[str]:
    """What the manager's bursting queues send to `worker` that the worker does not declare:
    MultiKueue creates the job in the same namespace, with the same LocalQueue, on the worker."""
    exported = exported or {}
    cluster_queues = set(exported.get("cluster_queues") or [])
    local_queues = set(exported.get("local_queues") or [])
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    found = []
    for i, queue in bursting(cfg):
        if worker not in queue.burst.workers:
            continue
        path = f"gpu-platform:scheduling.cluster_queues[{i}].burst.workers"
        if queue.name not in cluster_queues:
            found.append(
                f"{path}: bursts to worker {worker}, whose stack declares no ClusterQueue "
                f"{queue.name!r} (it declares: {', '.join(sorted(cluster_queues)) or 'none'}); "
                "declare it in the worker's scheduling.cluster_queues"
            )
        for team in (t for t in teams if t.cluster_queue == queue.name):
            wanted = f"{team.name}/{LOCAL_QUEUE}"
            if wanted not in local_queues:
                found.append(
                    f"{path}: team {team.name} submits to it, but worker {worker} declares no "
                    f"LocalQueue {wanted}; add team {team.name} on ClusterQueue {queue.name} "
                    "to the worker's scheduling.teams"
                )
    return found


def framework_mismatches(worker_index: int, worker: str, exported: dict[str, Any]) -> list[str]:
    """The manager's frameworks the worker does not serve. Kueue v0.19.2 watches each enabled
    framework's kind on every worker and fails the whole connection when one watch fails
    (pkg/controller/admissionchecks/multikueue/multikueuecluster.go,
    `updateConfigAndRefreshWatchers`), so a worker without the JobSet CRD would take no job at
    all, not even batch Jobs."""
    path = f"gpu-platform:multikueue.workers[{worker_index}].stack"
    if "frameworks" not in exported:
        return [
            f"{path}: worker {worker}'s {QUEUES_OUTPUT} lists no frameworks: an older version "
            "of this program deployed it, without JobSet, whose kind the manager's Kueue watches "
            "there; run `pulumi up` on it again"
        ]
    lacking = [f for f in INTEGRATIONS if f not in exported["frameworks"]]
    if not lacking:
        return []
    return [
        f"{path}: worker {worker} serves no {', '.join(lacking)} (it serves: "
        f"{', '.join(exported['frameworks']) or 'none'}), but this stack's Kueue runs "
        f"{', '.join(INTEGRATIONS)} and watches each kind on every worker; run `pulumi up` on "
        "the worker with this program's version"
    ]


def offer_mismatches(cfg: PlatformConfig, exported: dict[str, Any]) -> list[str]:
    """What the manager's bursting queues count on that their workers' pools (`exported`, by
    worker name) do not offer: nodes of `burst.instance_type`, `burst.gpus` GPUs of them, and
    the Topology levels the manager's flavor mirrors."""
    found = []
    for i, queue in bursting(cfg):
        burst, path = queue.burst, f"gpu-platform:scheduling.cluster_queues[{i}].burst"
        mirrored = burst_topology(burst)
        ours = list(mirrored[1]) if mirrored else []
        held = {}
        for worker in (w for w in burst.workers if w in exported):
            if "pools" not in exported[worker]:
                found.append(
                    f"{path}.workers: worker {worker}'s {QUEUES_OUTPUT} lists no pools: an "
                    "older version of this program deployed it; run `pulumi up` on it again"
                )
                continue
            pools = exported[worker]["pools"]
            fitting = [p for p in pools if burst.instance_type in p["instance_types"]]
            if not fitting:
                listed = ", ".join(f"{p['pool']} ({'/'.join(p['instance_types'])})" for p in pools)
                found.append(
                    f"{path}.instance_type: {burst.instance_type}, but worker {worker} has no "
                    f"pool of it (its pools: {listed or 'none'}); give the type of the worker's "
                    "GPU nodes"
                )
                continue
            held[worker] = int(sum(p["gpus"] for p in fitting))
            for pool in (p for p in fitting if p["topology"] != ours):
                found.append(
                    f"{path}.instance_type: the manager's flavor {burst_flavor_name(queue.name)} "
                    f"mirrors the topology levels of {burst.instance_type} with EFA "
                    f"({', '.join(ours) or 'none'}), but worker {worker}'s pool {pool['pool']} "
                    f"carries {', '.join(pool['topology']) or 'none'}: Kueue would match jobs "
                    "against levels the worker's nodes lack; give the worker's pool EFA or "
                    "burst.instance_type the worker's type"
                )
        if held and burst.gpus > sum(held.values()):
            shares = ", ".join(f"{w} {n}" for w, n in held.items())
            found.append(
                f"{path}.gpus: {burst.gpus}, but the workers' pools of {burst.instance_type} "
                f"hold at most {sum(held.values())} GPUs ({shares}); lower burst.gpus or let "
                "the workers' pools grow (their scaling.max_size)"
            )
    return found


def claim_mismatches(cfg: PlatformConfig, exported: dict[str, Any]) -> list[str]:
    """The workers' pools a bursting queue's flavor selects (nodes of `burst.instance_type`)
    that allocate GPUs through DRA: a job there claims them through a ResourceClaimTemplate
    applied beside its JobSet, which MultiKueue leaves on the manager, and the worker's Kueue,
    which reads each template from its own cluster to charge it (v0.19.2
    pkg/controller/core/workload_controller.go, dra.GetResourceRequestsForResourceClaimTemplates;
    pkg/dra/claims.go getClaimSpec), leaves the copy inadmissible. (A type whose nodes share an
    NVLink domain the config refuses already: check_multikueue.)"""
    files = {w.name: stack_file(w.local_stack) for w in cfg.multikueue.workers}
    found = []
    for i, queue in bursting(cfg):
        burst, path = queue.burst, f"gpu-platform:scheduling.cluster_queues[{i}].burst.workers"
        for worker in (w for w in burst.workers if w in exported):
            fitting = [
                p
                for p in exported[worker].get("pools") or ()
                if burst.instance_type in p["instance_types"]
            ]
            if any("gpu_allocation" not in p for p in fitting):
                found.append(
                    f"{path}: worker {worker}'s {QUEUES_OUTPUT} says not how its pools allocate "
                    "GPUs: an older version of this program deployed it; run `pulumi up` on it "
                    "again"
                )
                continue
            for pool in (p for p in fitting if p["gpu_allocation"] == "dra"):
                found.append(
                    f"{path}: bursts to worker {worker}, whose pool {pool['pool']} of "
                    f"{burst.instance_type} allocates its GPUs through DRA (gpu_allocation: dra "
                    f"in {files[worker]}): a job there claims them through a "
                    f"ResourceClaimTemplate applied beside its JobSet, and {NOT_COPIED}, so the "
                    "worker's Kueue finds no template and never admits it; valid: "
                    "gpu_allocation device_plugin on that pool, or a burst.instance_type of "
                    "the worker's device-plugin pools"
                )
    return found


def worker_problems(cfg: PlatformConfig, exported: dict[str, Any]) -> list[str]:
    """Every mismatch between the manager and its workers' stack outputs (`exported`: worker
    name -> `multikueue_queues`, None where the stack exports none)."""
    found = []
    for j, worker in enumerate(cfg.multikueue.workers):
        if exported.get(worker.name) is None:
            found.append(
                f"gpu-platform:multikueue.workers[{j}].stack: {worker.stack!r} exports no "
                f"{QUEUES_OUTPUT}: it is not deployed as a MultiKueue worker yet; set "
                "multikueue.serve_as_worker: true in that stack, run `pulumi up` on it, then "
                "on this one"
            )
            continue
        found += framework_mismatches(j, worker.name, exported[worker.name])
        found += queue_mismatches(cfg, worker.name, exported[worker.name])
    present = {w: e for w, e in exported.items() if e is not None}
    return found + offer_mismatches(cfg, present) + claim_mismatches(cfg, present)


def exported_queues(cfg: PlatformConfig) -> dict[str, Any]:
    """The queue names a manager's jobs may name here, the frameworks whose kinds this stack
    serves (its Kueue runs them, and every stack installs JobSet), and per GPU pool its instance
    types, the most GPUs the queues can hold there (the cohort's nominal quotas, at most the
    pool's size), the Topology levels its nodes carry and how it allocates GPUs (a DRA pool's
    jobs need a claim template MultiKueue does not copy): what a manager checks its bursts
    against."""
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    nominal = queue_gpus(cfg)
    pools = []
    for pool in cfg.gpu_pools:
        named = pool_topology(cfg, pool)
        held = sum(gpus[pool.name] for gpus in nominal.values())
        pools.append(
            {
                "pool": pool.name,
                "instance_types": list(pool.instance_types),
                "gpus": min(held, pool.max_gpus),
                "topology": list(named[1]) if named else [],
                "gpu_allocation": pool.gpu_allocation,
            }
        )
    return {
        "cluster_queues": sorted(q.name for q in cfg.scheduling.cluster_queues),
        "local_queues": sorted(f"{t.name}/{LOCAL_QUEUE}" for t in teams),
        "frameworks": list(INTEGRATIONS),
        "pools": pools,
    }
