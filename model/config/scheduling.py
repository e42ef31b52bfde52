"""Scheduling config: Kueue's queues over the GPU pools, the teams that submit to them, and
whether Kueue asks the cluster-autoscaler for a workload's nodes before admitting it.

Checked against the pools and the provider by `check_scheduling`, which PlatformConfig calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from model.catalog import NETWORK_TOPOLOGY_LAYERS
from model.config.base import DnsLabel, FieldProblem, Int, Reason, Settings, _label_problem
from model.config.cost import Number
from model.config.fair_sharing import FairSharingSettings
from model.config.idle_reclaim import IdleReclaimSettings, check_idle_reclaim
from model.config.multikueue import BurstSettings
from model.config.references import (
    CLUSTER_QUEUE,
    FLAVOR,
    GPU_POOL,
    K8S_NAMESPACE,
    PRIORITY_CLASS,
    TEAM_NAMESPACE,
    names,
    refers,
)
from model.config.team_access import TeamAccessSettings

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.pools import GpuPool

SHARED_QUEUE = "shared"
# The lowest level of every Kueue Topology (components/scheduling/topology.py): the kubelet sets it
# on every node, so no admin or provider has to.
HOSTNAME_LABEL = "kubernetes.io/hostname"
# The instance topology labels EKS puts on nodes of the types that report a topology
# (infra/catalog.NETWORK_TOPOLOGY_LAYERS), broadest first.
AWS_LAYER_LABEL = "topology.k8s.aws/network-node-layer-{}"
# GPU Feature Discovery (on in the GPU Operator chart, v26.7.0 values.yaml `gfd.enabled: true`)
# gives the nodes of one multi-node NVLink domain the same value, `<ClusterUUID>.<CliqueID>`
# (dra-driver-nvidia-gpu docs/prerequisites.md): the level that keeps a job inside one GB200
# NVL72 domain.
CLIQUE_LABEL = "nvidia.com/gpu.clique"
ONPREM_TOPOLOGY = "onprem-network"
# Fabrics whose jobs span nodes: the pools worth placing close together.
MULTI_NODE_FABRICS = ("efa", "infiniband", "roce")
# The LocalQueue the platform declares in every team namespace (components/scheduling/kueue.py), the
# one Kueue picks for a job that names no queue (LocalQueueDefaulting).
LOCAL_QUEUE = "default"


@dataclass(frozen=True)
class Priority:
    name: str
    value: int
    preemption_policy: str
    description: str


# Far below system-cluster-critical (2000000000) and system-node-critical, which stay as they
# are. No class is the global default: a default would reprioritise every add-on pod of the
# cluster. A pod without a class gets 0, below every class here, so a job that forgot its
# class is the first to yield, never the one that evicts.
PRIORITIES = (
    Priority(
        "production-training",
        100000,
        "PreemptLowerPriority",
        "Production training runs: preempt research and preemptible work.",
    ),
    Priority(
        "research",
        10000,
        "PreemptLowerPriority",
        "Research and experiments: preempt preemptible work only.",
    ),
    # Never preempts: opportunistic work fills idle GPUs and never evicts anyone to get them.
    Priority(
        "preemptible",
        1000,
        "Never",
        "Opportunistic work on idle GPUs: evicted first, evicts nobody.",
    ),
)


class ClusterQueueSettings(Settings):
    """One Kueue ClusterQueue: a share of the GPU pools, guaranteed, lent to the cohort when
    idle."""

    name: Annotated[DnsLabel, names(CLUSTER_QUEUE)] = Field(
        description="ClusterQueue name; teams point at it."
    )
    gpus: dict[Annotated[DnsLabel, refers(GPU_POOL)], Int] | None = Field(
        None,
        description="Nominal quota per GPU pool, in physical GPUs; CPU, memory and EFA "
        "devices follow in the pool's per-GPU proportion. Pools left out get 0 (the queue "
        "may still borrow them). Default: every pool in full.",
    )
    burst: BurstSettings | None = Field(
        None,
        description="Dispatch this queue's workloads to MultiKueue workers (multikueue.workers) "
        "instead of running them here.",
    )
    borrowing_limit: dict[Annotated[DnsLabel, refers(GPU_POOL)], Int] | None = Field(
        None,
        description="Most GPUs of each pool the queue may borrow from the rest of its cohort "
        "beyond its nominal quota (Kueue `borrowingLimit`; CPU, memory and EFA devices follow "
        "in the pool's per-GPU proportion); 0: never more than its own. Pools left out: as "
        "many as the cohort has idle.",
    )
    lending_limit: dict[Annotated[DnsLabel, refers(GPU_POOL)], Int] | None = Field(
        None,
        description="Most of the queue's idle nominal GPUs of each pool that the rest of the "
        "cohort may borrow (Kueue `lendingLimit`); the rest stays the queue's alone, however "
        "long it is idle. At most its nominal quota. Pools left out: all of it may be lent.",
    )
    fair_sharing_weight: Int | None = Field(
        None,
        ge=0,
        le=1000,
        description="With scheduling.fair_sharing.enabled: the queue's weight when the cohort "
        "shares out idle quota (Kueue ClusterQueue `fairSharing.weight`): its share of what it "
        "borrows is divided by it; 0 puts it behind every other queue. Default 1.",
    )

    @model_validator(mode="after")
    def _not_negative(self) -> ClusterQueueSettings:
        for pool, count in (self.gpus or {}).items():
            if count < 0:
                raise FieldProblem(f"gpus.{pool}", f"{count} GPUs; give 0 or more")
        return self

    def nominal_gpus(self, pool: GpuPool) -> int:
        """The queue's nominal GPUs of `pool`: none for a bursting queue, whose workloads run
        on MultiKueue workers; every GPU of the pool where the queue names no pools."""
        if self.burst is not None:
            return 0
        if self.gpus is None:
            return pool.max_gpus
        return self.gpus.get(pool.name, 0)


def _scheduled(cfg: PlatformConfig) -> bool:
    """A team's priority class is read only where Kueue and the classes are declared."""
    return cfg.scheduling.enabled


class TeamSettings(Settings):
    """A team: its own namespace, with a LocalQueue pointing at one ClusterQueue."""

    name: Annotated[DnsLabel, names(K8S_NAMESPACE, TEAM_NAMESPACE, joins="namespaces.training")] = (
        Field(description="The team's namespace.")
    )
    cluster_queue: Annotated[DnsLabel, refers(CLUSTER_QUEUE)] = Field(
        SHARED_QUEUE, description="The ClusterQueue the team's LocalQueue submits to."
    )
    priority_class: Annotated[DnsLabel, refers(PRIORITY_CLASS, when=_scheduled)] = Field(
        "research",
        description="The PriorityClass and Kueue WorkloadPriorityClass of the team's jobs "
        "(`python -m jobs submit --team`) unless the job names another.",
    )
    pod_security: Literal["restricted", "baseline"] = Field(
        "restricted",
        description='The Pod Security level the namespace enforces (Kubernetes "Pod Security '
        'Standards"). Every job the platform renders keeps to `restricted`; `baseline` lets '
        "the team's own images run as root, and needs pod_security_reason. Warn and audit "
        "stay at `restricted`. `privileged` is never offered to a team: it would let anyone "
        "who may create a pod in the namespace run a privileged, host-network pod on a GPU "
        "node.",
    )
    access: list[TeamAccessSettings] = Field(
        default_factory=list,
        description="Who may use the namespace, and nothing beyond it: IAM roles on AWS, "
        'groups on an existing cluster (docs/scheduling.md, "Team access"). Empty: only '
        "cluster admins.",
    )
    monthly_budget_usd: Number | None = Field(
        None,
        gt=0,
        le=1e12,
        description="The team's monthly budget in USD for its GPUs: alerts TeamBudgetNearlySpent "
        "at 80 % and TeamBudgetSpent at 100 % of it, on the month-to-date spend of its pods' "
        "GPU-hours at the pools' catalog prices (docs/cost.md). Default: no budget, no alert "
        "(provider aws only: an existing cluster's pools have no price).",
    )
    pod_security_reason: Reason | None = Field(
        None,
        min_length=1,
        description="Why the team needs `baseline` (required with it, refused without it): "
        "kept as the namespace's annotation gpu-platform/pod-security-reason.",
    )

    @model_validator(mode="after")
    def _reason_for_baseline(self) -> TeamSettings:
        if self.pod_security == "baseline" and not self.pod_security_reason:
            raise FieldProblem(
                "pod_security_reason",
                "pod_security baseline needs a reason: say why the team's pods cannot keep to "
                "restricted (e.g. a vendor image that runs as root)",
            )
        if self.pod_security == "restricted" and self.pod_security_reason:
            raise FieldProblem(
                "pod_security_reason", "only with pod_security baseline; restricted needs none"
            )
        return self


class FlavorSettings(Settings):
    """Per-pool settings of the pool's Kueue ResourceFlavor."""

    pool: Annotated[DnsLabel, refers(GPU_POOL), names(FLAVOR)] = Field(
        description="The GPU pool (node group, or existing.gpu_pools name)."
    )
    provisioning_request: bool | None = Field(
        None,
        description="Admit a workload only once the cluster-autoscaler has provisioned all "
        "of its nodes (ProvisioningRequest, all-or-nothing). Default: on for EFA pools, whose "
        "jobs span nodes; AWS with the autoscaler only.",
    )
    cpus_per_node: Int | None = Field(
        None,
        ge=1,
        le=65536,
        description="Existing clusters only (AWS takes it from the instance catalog): CPUs "
        "of one node, for the CPU quota. Without it for every pool, Kueue counts neither CPU "
        "nor memory, only GPUs (the plan warns).",
    )
    memory_gib_per_node: Int | None = Field(
        None,
        ge=1,
        le=2**20,
        description="Existing clusters only: memory of one node in GiB, for the memory quota "
        "and the memory a training pod takes per GPU: the node's, less 3 GiB for a kubelet's "
        "default reservations and 2 GiB for DaemonSets, shared out among its GPUs. Give the "
        "node's allocatable memory where its kubelet reserves more. Without it a pod takes "
        "16 GiB a GPU.",
    )


class JobSettings(Settings):
    """How every multi-node job the platform renders recovers: its JobSet's restart limit
    (components/scheduling/training_job.py) and trainkit's hang watchdog."""

    max_restarts: Int = Field(
        3,
        ge=0,
        le=100,
        description="Restarts of a job's whole group (JobSet `failurePolicy.maxRestarts`) "
        "after a rank fails or hangs, each from the last checkpoint; a disrupted pod (drain, "
        "preemption, spot reclaim) restarts it without counting, and a failure a restart "
        "cannot fix (bad arguments, an import error) fails it at once.",
    )
    hang_factor: Int = Field(
        10,
        ge=2,
        le=1000,
        description="trainkit's watchdog: a rank whose step has not advanced within this "
        "multiple of its recent step time dumps its stacks and the NCCL flight record and "
        "exits with the hang code, so that the group restarts.",
    )
    hang_ceiling_seconds: Int = Field(
        1800,
        ge=60,
        le=86400,
        description="trainkit's watchdog: the longest a step may take whatever its recent "
        "step time (the first steps, compilation, a checkpoint), in seconds.",
    )


class SchedulingSettings(Settings):
    """PriorityClasses, Kueue and team namespaces."""

    enabled: bool = Field(True, description="Install Kueue and declare the queues.")
    cohort: DnsLabel = Field(
        "gpu-platform",
        description="Cohort of every ClusterQueue: idle quota is lent among them.",
    )
    cluster_queues: list[ClusterQueueSettings] = Field(
        default_factory=lambda: [ClusterQueueSettings(name=SHARED_QUEUE)],
        min_length=1,
        description="ClusterQueues; default one shared queue holding every pool.",
    )
    teams: list[TeamSettings] = Field(
        default_factory=list,
        description="Team namespaces. The training namespace (namespaces.training) is always "
        "a team, on the first ClusterQueue, enforcing restricted, unless listed here.",
    )
    flavors: list[FlavorSettings] = Field(
        default_factory=list, description="Per-pool flavor settings; pools left out take defaults."
    )
    fair_sharing: FairSharingSettings = Field(
        default_factory=FairSharingSettings,
        description="How the cohort's idle GPUs are shared out among queues and teams.",
    )
    jobs: JobSettings = Field(
        default_factory=JobSettings,
        description="Restarts and hang detection of the jobs the platform renders.",
    )
    idle_reclaim: IdleReclaimSettings | None = Field(
        None,
        description="Deactivate idle workloads of the named queues or priority classes "
        "through Kueue (docs/scheduling.md). Unset: idle GPUs are only alerted.",
    )
    topology_levels: list[str] = Field(
        default_factory=list,
        max_length=15,
        description="Existing clusters: the node labels of the network's levels that the admin "
        "puts on the GPU nodes, broadest first (a spine switch label, then a rack label). "
        "Kueue's Topology for the InfiniBand and RoCE pools takes them, with "
        "kubernetes.io/hostname below, and jobs ask to be placed under one domain of the last. "
        "On AWS the levels are the instance topology labels EKS sets. Empty: no topology-aware "
        "placement on an existing cluster.",
    )
    topology_labels_applied: bool = Field(
        False,
        description="Existing clusters: every GPU node of the InfiniBand and RoCE pools carries "
        "every topology_levels label (the plan lists the `kubectl label` commands). Only then "
        "do the pools' Kueue flavors name the Topology: Kueue's topology-aware scheduling "
        "skips a node that lacks a level label, and places every workload of a queue whose "
        "flavors all name one, the self-test included, so unlabelled nodes would admit "
        "nothing. Until then Kueue admits by quota alone.",
    )

    def flavor(self, pool: str) -> FlavorSettings:
        return next((f for f in self.flavors if f.pool == pool), FlavorSettings(pool=pool))

    def all_teams(self, training_namespace: str) -> list[TeamSettings]:
        """Every team, the training namespace first unless the stack lists it itself."""
        if any(t.name == training_namespace for t in self.teams):
            return list(self.teams)
        first = TeamSettings(name=training_namespace, cluster_queue=self.cluster_queues[0].name)
        return [first, *self.teams]


def aws_topology(layers: int, clique: bool = False) -> tuple[str, tuple[str, ...]]:
    """The Topology (name, levels broadest first) of EKS nodes reporting `layers` network
    layers; with `clique`, nodes in multi-node NVLink domains, whose clique is the level just
    above the host: a domain's nodes sit in one UltraServer, under the network's layers."""
    levels = tuple(AWS_LAYER_LABEL.format(n) for n in range(1, layers + 1))
    if clique:
        return f"aws-network-{layers}-layers-nvlink", (*levels, CLIQUE_LABEL, HOSTNAME_LABEL)
    return f"aws-network-{layers}-layers", (*levels, HOSTNAME_LABEL)


def wanted_topology(cfg: PlatformConfig, pool: GpuPool) -> tuple[str, tuple[str, ...]] | None:
    """The Topology (name, levels broadest first) a multi-node pool's nodes are to carry; None
    for a pool whose jobs stay on one node, or whose nodes carry no such labels (AWS types
    without an EC2 topology, an existing cluster without topology_levels). A pool of several
    instance types takes the levels every one of them carries."""
    if pool.fabric not in MULTI_NODE_FABRICS:
        return None
    if cfg.provider == "aws":
        layers = min(NETWORK_TOPOLOGY_LAYERS.get(t, 0) for t in pool.instance_types)
        if not layers:
            return None
        return aws_topology(layers, clique=pool.nvlink_domain_nodes is not None)
    if not cfg.scheduling.topology_levels:
        return None
    return ONPREM_TOPOLOGY, (*cfg.scheduling.topology_levels, HOSTNAME_LABEL)


def topology_levels(cfg: PlatformConfig, pool: GpuPool) -> tuple[str, tuple[str, ...]] | None:
    """The Topology the pool's Kueue flavor names: the wanted one where its labels are known
    to be on the nodes. EKS sets them itself; on an existing cluster the admin says so
    (scheduling.topology_labels_applied), since Kueue skips every node that lacks one."""
    wanted = wanted_topology(cfg, pool)
    if wanted is None or cfg.provider == "aws" or cfg.scheduling.topology_labels_applied:
        return wanted
    return None


def provisioned(pool: GpuPool, flavor: FlavorSettings, autoscaled: bool) -> bool:
    """Whether Kueue waits for the autoscaler to provision a workload's nodes in this pool:
    on by default for EFA pools, whose jobs span nodes and are useless half-placed."""
    if not autoscaled:
        return False
    if flavor.provisioning_request is not None:
        return flavor.provisioning_request
    return pool.fabric == "efa"


def autoscaled(cfg: PlatformConfig) -> bool:
    """The platform's cluster-autoscaler sizes the GPU node groups (AWS only)."""
    return cfg.provider == "aws" and cfg.autoscaler.enabled


def scales_from_zero(cfg: PlatformConfig, pool: str) -> bool:
    """The pool's node group may have no node at all: min_size 0 under the autoscaler."""
    group = next((g for g in cfg.gpu_node_groups if g.name == pool), None)
    return autoscaled(cfg) and group is not None and group.scaling.min_size == 0


def _check_topology_provisioning(cfg: PlatformConfig) -> None:
    """Kueue's topology-aware scheduling places a workload only on nodes that exist (Kueue
    docs, "Topology Aware Scheduling", capacity calculation), so a TAS pool at zero nodes
    admits nothing and no pending pod ever asks the autoscaler for one: only the
    ProvisioningRequest admission check provisions first and places after ("ClusterAutoscaler
    support"; v0.19.2 pkg/scheduler/flavorassigner/tas_flavorassigner.go delays the topology
    request on a flavor with that check)."""
    sched = cfg.scheduling
    for pool in cfg.gpu_pools:
        if topology_levels(cfg, pool) is None or not scales_from_zero(cfg, pool.name):
            continue
        if provisioned(pool, sched.flavor(pool.name), autoscaled(cfg)):
            continue
        # Only a flavor that turns it off gets here: it is on by default for the EFA pools,
        # the only AWS pools with a topology.
        i = next(i for i, f in enumerate(sched.flavors) if f.pool == pool.name)
        raise FieldProblem(
            f"scheduling.flavors[{i}].provisioning_request",
            f"false, but pool {pool.name} scales from zero (min_size 0) and its flavor places "
            "jobs by topology, which Kueue does only on nodes that exist: at zero nodes nothing "
            "would be admitted and nothing would ask the autoscaler for a node; remove it (on "
            "by default for EFA pools) or give the group a min_size above 0",
        )


def check_scheduling(cfg: PlatformConfig) -> None:
    """Scheduling rules that need the pools and the provider."""
    sched = cfg.scheduling
    check_idle_reclaim(cfg)
    if sched.topology_labels_applied and cfg.provider == "aws":
        raise FieldProblem(
            "scheduling.topology_labels_applied",
            "only for existing clusters: on AWS EKS puts the topology labels on the nodes "
            "itself; remove it",
        )
    if sched.topology_levels and cfg.provider == "aws":
        raise FieldProblem(
            "scheduling.topology_levels",
            "only for existing clusters: on AWS the levels are the instance topology labels "
            "EKS puts on the nodes (topology.k8s.aws/network-node-layer-N); remove it",
        )
    # After the provider's refusals: their advice (remove it) is the one that holds on AWS,
    # where listing or fixing a level would only be refused next.
    if sched.topology_labels_applied and not sched.topology_levels:
        raise FieldProblem(
            "scheduling.topology_labels_applied",
            "true, but topology_levels names no label; list the labels the nodes carry, "
            "broadest first, or remove it",
        )
    for i, key in enumerate(sched.topology_levels):
        if key == HOSTNAME_LABEL:
            problem = f"{key} is added below the levels given; leave it out"
        elif key in sched.topology_levels[:i]:
            problem = f"{key!r} is listed twice; list each level once"
        else:
            problem = _label_problem(key, "")
        if problem:
            raise FieldProblem(f"scheduling.topology_levels[{i}]", problem)
    for i, flavor in enumerate(sched.flavors):
        path = f"scheduling.flavors[{i}]"
        if flavor.provisioning_request and cfg.provider != "aws":
            raise FieldProblem(
                f"{path}.provisioning_request",
                "true, but an existing cluster runs no cluster-autoscaler of this platform to "
                "answer ProvisioningRequests: workloads would wait forever; remove it",
            )
        if flavor.provisioning_request and not cfg.autoscaler.enabled:
            raise FieldProblem(
                f"{path}.provisioning_request",
                "true, but autoscaler.enabled is false: nothing would answer the "
                "ProvisioningRequests and workloads would wait forever",
            )
        for key in ("cpus_per_node", "memory_gib_per_node"):
            if cfg.provider == "aws" and getattr(flavor, key) is not None:
                raise FieldProblem(
                    f"{path}.{key}",
                    "only for existing clusters; on AWS the instance catalog gives it",
                )
    _check_topology_provisioning(cfg)
