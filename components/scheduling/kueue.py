"""Kueue's objects over the GPU pools, as pure builders: a ResourceFlavor per pool (its node
labels and GPU taint), ClusterQueues in one cohort that lend idle quota, a LocalQueue named
`default` in each team namespace, the ProvisioningRequest admission check, and the chart's
values. components/scheduling/queues.py declares them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import yaml

from components.data.gpu_operator import advertised_resources as pool_resources
from components.scheduling.kueue_frameworks import INTEGRATIONS
from components.vocabulary import EFA_RESOURCE, GPU_TAINT, GPU_TOLERATION, KUEUE_API, rdma_resource
from model.catalog import CATALOG
from model.config import GpuPool, PlatformConfig
from model.config.fair_sharing import PREEMPTION_STRATEGIES, USAGE_BASED, FairSharingSettings
from model.config.scheduling import (
    LOCAL_QUEUE,
    ClusterQueueSettings,
    FlavorSettings,
    TeamSettings,
)
from model.dra import CHANNEL_QUOTA, kueue_device_class_mappings
from model.warning_kinds import warning

PROVISIONING_CHECK = "gpu-provisioning"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# All-or-nothing: the autoscaler provisions every node of the request or none, so a multi-node
# job never holds half its GPUs while it waits for the rest (cluster-autoscaler
# ProvisioningRequest docs, "best-effort-atomic-scale-up").
PROVISIONING_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
# The label the API server sets on every namespace, with its name.
NAMESPACE_LABEL = "kubernetes.io/metadata.name"


# ------------------------------------------------------------------------------ flavors


def node_size(pool: GpuPool, flavor: FlavorSettings) -> tuple[int, int] | None:
    """CPUs and memory (GiB) of one node of the pool, None where the stack does not say. On
    AWS the smallest of the pool's instance types, since the autoscaler may pick any of them."""
    if pool.instance_types:
        rows = [CATALOG[t] for t in pool.instance_types]
        return min(r.vcpus for r in rows), min(r.memory_gib for r in rows)
    if flavor.cpus_per_node is None or flavor.memory_gib_per_node is None:
        return None
    return flavor.cpus_per_node, flavor.memory_gib_per_node


def counts_cpu_and_memory(cfg: PlatformConfig) -> bool:
    """Whether every pool's node size is known, so that queues can hold CPU and memory."""
    sched = cfg.scheduling
    return all(node_size(p, sched.flavor(p.name)) is not None for p in cfg.gpu_pools)


def node_offer(pool: GpuPool, size: tuple[int, int] | None) -> dict[str, int]:
    """What one node of the pool offers Kueue: CPUs and memory (GiB) where counted, GPU
    resources, EFA devices; on an NVLink-domain pool one ComputeDomain channel, which each pod
    of a multi-node job claims (a pod a node): Kueue charges the claim to the channel class's
    mapping and admits nothing its queue does not cover (../shared/PINS.md "DRA quota")."""
    offer = {"cpu": size[0], "memory": size[1]} if size else {}
    offer.update(pool_resources(pool))
    if pool.efa_interfaces:
        offer[EFA_RESOURCE] = pool.efa_interfaces
    if pool.nvlink_domain_nodes is not None:
        offer[CHANNEL_QUOTA] = 1
    return offer


def uncounted_resources(cfg: PlatformConfig) -> list[str]:
    """Resource prefixes Kueue leaves to the scheduler. Kueue admits no workload that asks for
    a resource its queue does not cover: hugepages (EFA pods ask for hugepages-2Mi) and
    ephemeral storage are the node's business, not a team's quota; CPU and memory too where
    the nodes' sizes are unknown. The RDMA device is shared by every pod on a node
    (`rdmaHcaMax`), a node's business too: counted, no RDMA job would ever be admitted."""
    prefixes = ["ephemeral-storage", "hugepages-"]
    if cfg.fabric is not None:
        prefixes.append(rdma_resource(cfg.fabric))
    if not counts_cpu_and_memory(cfg):
        prefixes += ["cpu", "memory"]
    return sorted(prefixes)


def resource_flavor(pool: GpuPool, tainted: bool, topology: str | None = None) -> dict[str, Any]:
    """The pool's nodes, by the labels that select exactly them; Kueue adds them to admitted
    pods as a node selector. Where the platform taints the nodes (AWS; an existing cluster's
    taints are the admin's), the flavor records the taint and carries the matching toleration:
    Kueue adds it to the pods it admits here, so job authors need not, and with both set it
    does not test the taint at admission (v0.19.2 ResourceFlavor schema, `nodeTaints`)."""
    spec: dict[str, Any] = {"nodeLabels": dict(pool.node_selector)}
    if tainted:
        spec["nodeTaints"] = [dict(GPU_TAINT)]
        spec["tolerations"] = [dict(GPU_TOLERATION)]
    if topology is not None:
        # Kueue places the workloads it admits here by the Topology's levels (TAS).
        spec["topologyName"] = topology
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": pool.name},
        "spec": spec,
    }


# ------------------------------------------------------------------------------- queues


def queue_gpus(cfg: PlatformConfig) -> dict[str, dict[str, int]]:
    """ClusterQueue -> pool -> nominal GPUs; a queue that names none holds every pool, but a
    bursting queue none: its workloads run on MultiKueue workers."""
    return {
        q.name: {p.name: q.nominal_gpus(p) for p in cfg.gpu_pools}
        for q in cfg.scheduling.cluster_queues
    }


def quota(offer: dict[str, int], gpus: int, gpus_per_node: int) -> dict[str, str]:
    """Nominal quota for `gpus` physical GPUs of a pool: every resource in the node's
    proportion, rounded down so the quota never promises what the nodes lack."""
    share = Fraction(gpus, gpus_per_node)
    out = {name: str(math.floor(amount * share)) for name, amount in offer.items()}
    if "memory" in out:
        out["memory"] = f"{out['memory']}Gi"
    return out


def covered_resources(offers: Sequence[dict[str, int]]) -> list[str]:
    """One resource group covers every resource of every flavor (each flavor must list them
    all; one it lacks gets a quota of 0)."""
    found = {r for o in offers for r in o}
    counted = [r for r in ("cpu", "memory") if r in found]
    return [*counted, *sorted(found - {"cpu", "memory"})]


def pool_flavors(
    cfg: PlatformConfig, gpus: dict[str, int], offers: dict[str, dict[str, int]]
) -> dict[str, dict[str, str]]:
    """Flavor -> resource -> nominal quota of a queue over the stack's pools."""
    return {
        pool.name: quota(offers[pool.name], gpus[pool.name], pool.gpus_per_node)
        for pool in cfg.gpu_pools
    }


# The queue's settings in GPUs per pool, and the ClusterQueue field each becomes per resource.
LIMIT_FIELDS = {"borrowing_limit": "borrowingLimit", "lending_limit": "lendingLimit"}


def pool_limits(
    cfg: PlatformConfig, queue: ClusterQueueSettings, offers: dict[str, dict[str, int]]
) -> dict[str, dict[str, dict[str, str]]]:
    """Flavor -> ClusterQueue field (borrowingLimit, lendingLimit) -> resource -> amount: the
    queue's limits in GPUs, every resource in the pool's per-GPU proportion as its nominal
    quota is; a pool the queue leaves out has no limit."""
    found: dict[str, dict[str, dict[str, str]]] = {}
    for pool in cfg.gpu_pools:
        for key, name in LIMIT_FIELDS.items():
            gpus = (getattr(queue, key) or {}).get(pool.name)
            if gpus is not None:
                amounts = quota(offers[pool.name], gpus, pool.gpus_per_node)
                found.setdefault(pool.name, {})[name] = amounts
    return found


@dataclass(frozen=True)
class Sharing:
    """What a ClusterQueue borrows, lends and weighs beyond its nominal quota: `limits` as
    pool_limits gives them, its fair-sharing weight (None: Kueue's 1), and whether it orders
    its workloads by their LocalQueue's usage (admission fair sharing)."""

    limits: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    weight: int | None = None
    usage_based: bool = False


def cluster_queue(
    name: str,
    cohort: str,
    flavors: dict[str, dict[str, str]],
    checks: Sequence[dict[str, Any]],
    namespaces: Sequence[str],
    sharing: Sharing = Sharing(),
) -> dict[str, Any]:
    """A ClusterQueue over `flavors` (flavor -> resource -> nominal quota), with the admission
    checks it waits for (`admissionChecksStrategy.admissionChecks` entries)."""
    covered = covered_resources(list(flavors.values()))
    spec: dict[str, Any] = {
        "cohortName": cohort,
        "preemption": {
            "withinClusterQueue": "LowerPriority",
            # Quota lent to the cohort comes back on demand, whatever the borrower's
            # priority: that is what makes a nominal quota a guarantee.
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "Never"},
        },
    }
    # A stack without GPU pools has nothing to give quota of: the queue admits nothing.
    if flavors:
        spec["resourceGroups"] = [
            {
                "coveredResources": covered,
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {
                                "name": r,
                                "nominalQuota": amounts.get(r, "0"),
                                **{
                                    key: limit.get(r, "0")
                                    for key, limit in sharing.limits.get(flavor, {}).items()
                                },
                            }
                            for r in covered
                        ],
                    }
                    for flavor, amounts in flavors.items()
                ],
            }
        ]
    if sharing.weight is not None:
        spec["fairSharing"] = {"weight": sharing.weight}
    if sharing.usage_based:
        spec["admissionScope"] = {"admissionMode": USAGE_BASED}
    if namespaces:
        # Only the namespaces of the teams on this queue may submit to it; a queue without
        # teams (no selector: no namespace) only lends its quota to the cohort.
        spec["namespaceSelector"] = {
            "matchExpressions": [
                {"key": NAMESPACE_LABEL, "operator": "In", "values": sorted(namespaces)}
            ]
        }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": list(checks)}
    meta = {"name": name}
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": meta, "spec": spec}


def provisioning_check(provisioned_flavors: Sequence[str]) -> list[dict[str, Any]]:
    if not provisioned_flavors:
        return []
    return [{"name": PROVISIONING_CHECK, "onFlavors": sorted(provisioned_flavors)}]


def local_queue(team: TeamSettings, weight: int | None = None) -> dict[str, Any]:
    """The team's LocalQueue; `weight`: its admission fair-sharing weight (None: Kueue's 1)."""
    spec: dict[str, Any] = {"clusterQueue": team.cluster_queue}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": LOCAL_QUEUE, "namespace": team.name},
        "spec": spec,
    }


def provisioning_objects(managed: Sequence[str]) -> list[dict[str, Any]]:
    """The AdmissionCheck and the ProvisioningRequestConfig it names."""
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": PROVISIONING_CHECK},
            "spec": {
                "provisioningClassName": PROVISIONING_CLASS,
                "managedResources": sorted(managed),
            },
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "AdmissionCheck",
            "metadata": {"name": PROVISIONING_CHECK},
            "spec": {
                "controllerName": PROVISIONING_CONTROLLER,
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "ProvisioningRequestConfig",
                    "name": PROVISIONING_CHECK,
                },
            },
        },
    ]


def quota_warnings(cfg: PlatformConfig) -> list[str]:
    """Nominal quotas that add up to more GPUs than a pool holds at its largest: Kueue would
    admit workloads whose pods can never be scheduled."""
    per_queue = queue_gpus(cfg)
    found = []
    if not counts_cpu_and_memory(cfg):
        found.append(
            warning(
                "quota-gpus-only",
                "gpu-platform:scheduling.flavors: no cpus_per_node and memory_gib_per_node for "
                "every pool, so Kueue's queues count GPUs only and leave CPU and memory to the "
                "scheduler; give both for each pool to hold teams to CPU and memory quotas too",
            )
        )
    for pool in cfg.gpu_pools:
        total = sum(gpus[pool.name] for gpus in per_queue.values())
        if total > pool.max_gpus:
            shares = ", ".join(f"{q} {g[pool.name]}" for q, g in per_queue.items())
            found.append(
                warning(
                    "quota-over-pool",
                    f"gpu-platform:scheduling.cluster_queues: nominal quotas of pool {pool.name} "
                    f"add up to {total} GPUs ({shares}), but the pool holds at most "
                    f"{pool.max_gpus} ({pool.max_nodes} nodes x {pool.gpus_per_node}); Kueue "
                    "would admit workloads that can never run",
                )
            )
    return found


# The chart's default manager configuration (charts/kueue values.yaml at 0.19.2), which a value
# replaces whole: kept as it is but for the resources Kueue leaves uncounted, the namespaces it
# manages, the ClusterQueue resource metrics and the frameworks: only the kinds the platform submits
# (components/scheduling/kueue_frameworks.py), since a MultiKueue manager watches every enabled
# framework's kind on its workers.


def fair_sharing_config(sharing: FairSharingSettings) -> dict[str, Any]:
    """The Configuration's fair-sharing keys (Kueue v0.19.2 apis/config/v1beta2/
    configuration_types.go): `fairSharing` turns it on by being there (v1beta2 has no `enable`;
    pkg/scheduler/preemption/fairsharing/strategy.go `Enabled` is `!= nil`) and must list its
    preemption strategies (pkg/config/validation.go `validateFairSharing`);
    `admissionFairSharing` likewise, its half-life always set: Kueue defaults only the sampling
    interval, and a half-life of 0 records no usage (kubernetes-sigs/kueue#11134)."""
    found: dict[str, Any] = {}
    if sharing.enabled:
        found["fairSharing"] = {"preemptionStrategies": list(PREEMPTION_STRATEGIES)}
    if sharing.admission is not None:
        found["admissionFairSharing"] = {
            "usageHalfLifeTime": sharing.admission.usage_half_life,
            "usageSamplingInterval": sharing.admission.usage_sampling_interval,
        }
    return found


def manager_config(
    uncounted: Sequence[str],
    job_namespaces: Sequence[str],
    sharing: FairSharingSettings | None = None,
    device_classes: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`job_namespaces`: every namespace the platform's queued jobs run in
    (components/control/namespaces.job_namespaces); `device_classes`: DeviceClass -> quota name
    (model/dra.device_class_quota), where some pool allocates GPUs through DRA."""
    resources: dict[str, Any] = {"excludeResourcePrefixes": list(uncounted)}
    if device_classes:
        # A claim on an unmapped class leaves its workload inadmissible (kueue v0.19.2
        # pkg/dra/claims.go); the mapped names are ordinary quota in the DRA pools' flavors.
        resources["deviceClassMappings"] = kueue_device_class_mappings(device_classes)
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # The Queues dashboard's GPUs in use against quota: Kueue exports
        # kueue_cluster_queue_resource_usage and _nominal_quota only with this on (v0.19.2
        # cmd/kueue/main.go), a handful of series per queue, flavor and resource.
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {"frameworks": list(INTEGRATIONS)},
        # Kueue's own default manages every namespace but kube-system and kueue-system, and
        # it runs in the platform's namespace here: only the namespaces jobs run in are its
        # business, so no add-on pod ever waits on Kueue's webhooks. A job anywhere else is
        # never admitted: v0.19.2 reconciles only jobs this selects
        # (ManagedJobsNamespaceSelectorAlwaysRespected, GA and locked on; pkg/controller/
        # jobframework/reconciler.go "Namespace not opted in for Kueue management").
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {"key": NAMESPACE_LABEL, "operator": "In", "values": sorted(job_namespaces)}
            ]
        },
        "resources": resources,
        **fair_sharing_config(sharing or FairSharingSettings()),
    }


def kueue_values(
    node_selector: dict[str, str],
    uncounted: Sequence[str],
    job_namespaces: Sequence[str],
    sharing: FairSharingSettings,
    device_classes: dict[str, str] | None = None,
) -> dict[str, Any]:
    config = manager_config(uncounted, job_namespaces, sharing, device_classes)
    return {
        # Queue depth (kueue_pending_workloads) is what the queue-driven scalers read.
        "enablePrometheus": True,
        "controllerManager": {"nodeSelector": node_selector},
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config)},
    }
