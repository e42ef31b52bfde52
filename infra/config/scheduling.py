"""Scheduling config: Kueue's queues over the GPU pools, the teams that submit to them, and
whether Kueue asks the cluster-autoscaler for a workload's nodes before admitting it.

Checked against the pools and the provider by `check_scheduling`, which PlatformConfig calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, model_validator

from infra.config.base import DnsLabel, FieldProblem, Int, Settings, one_of

if TYPE_CHECKING:
    from infra.config import PlatformConfig

SHARED_QUEUE = "shared"


class ClusterQueueSettings(Settings):
    """One Kueue ClusterQueue: a share of the GPU pools, guaranteed, lent to the cohort when
    idle."""

    name: DnsLabel = Field(description="ClusterQueue name; teams point at it.")
    gpus: dict[DnsLabel, Int] | None = Field(
        None,
        description="Nominal quota per GPU pool, in physical GPUs; CPU, memory and EFA "
        "devices follow in the pool's per-GPU proportion. Pools left out get 0 (the queue "
        "may still borrow them). Default: every pool in full.",
    )

    @model_validator(mode="after")
    def _not_negative(self) -> ClusterQueueSettings:
        for pool, count in (self.gpus or {}).items():
            if count < 0:
                raise FieldProblem(f"gpus.{pool}", f"{count} GPUs; give 0 or more")
        return self


class TeamSettings(Settings):
    """A team: its own namespace, with a LocalQueue pointing at one ClusterQueue."""

    name: DnsLabel = Field(description="The team's namespace.")
    cluster_queue: DnsLabel = Field(
        SHARED_QUEUE, description="The ClusterQueue the team's LocalQueue submits to."
    )
    nvme_cache: bool = Field(
        True,
        description="Pods mount the node's NVMe cache (a hostPath volume): Pod Security "
        "enforces `privileged` in the namespace, since `baseline` forbids hostPath; "
        "`false` enforces `baseline`. Both warn and audit against `restricted`.",
    )


class FlavorSettings(Settings):
    """Per-pool settings of the pool's Kueue ResourceFlavor."""

    pool: DnsLabel = Field(description="The GPU pool (node group, or existing.gpu_pools name).")
    provisioning_request: bool | None = Field(
        None,
        description="Admit a workload only once the cluster-autoscaler has provisioned all "
        "of its nodes (ProvisioningRequest, all-or-nothing). Default: on for EFA pools, whose "
        "jobs span nodes; AWS with the autoscaler only.",
    )
    cpus_per_node: Int | None = Field(
        None,
        ge=1,
        description="Existing clusters only (AWS takes it from the instance catalog): CPUs "
        "of one node, for the CPU quota. Without it for every pool, Kueue counts neither CPU "
        "nor memory, only GPUs (the plan warns).",
    )
    memory_gib_per_node: Int | None = Field(
        None,
        ge=1,
        description="Existing clusters only: memory of one node in GiB, for the memory quota.",
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
        "a team, on the first ClusterQueue with the NVMe cache, unless listed here.",
    )
    flavors: list[FlavorSettings] = Field(
        default_factory=list, description="Per-pool flavor settings; pools left out take defaults."
    )

    @model_validator(mode="after")
    def _references(self) -> SchedulingSettings:
        queues = [q.name for q in self.cluster_queues]
        for key, names in (
            ("cluster_queues", queues),
            ("teams", [t.name for t in self.teams]),
            ("flavors", [f.pool for f in self.flavors]),
        ):
            for i, name in enumerate(names):
                if names.index(name) != i:
                    field = "pool" if key == "flavors" else "name"
                    raise FieldProblem(f"{key}[{i}].{field}", f"{name!r} is used twice")
        for i, team in enumerate(self.teams):
            try:
                one_of(team.cluster_queue, queues, "a ClusterQueue", "scheduling.cluster_queues")
            except ValueError as error:
                raise FieldProblem(f"teams[{i}].cluster_queue", str(error)) from None
        return self

    def flavor(self, pool: str) -> FlavorSettings:
        return next((f for f in self.flavors if f.pool == pool), FlavorSettings(pool=pool))

    def all_teams(self, training_namespace: str) -> list[TeamSettings]:
        """Every team, the training namespace first unless the stack lists it itself."""
        if any(t.name == training_namespace for t in self.teams):
            return list(self.teams)
        first = TeamSettings(name=training_namespace, cluster_queue=self.cluster_queues[0].name)
        return [first, *self.teams]


def check_scheduling(cfg: PlatformConfig) -> None:
    """Scheduling rules that need the pools and the provider."""
    sched = cfg.scheduling
    pools = [p.name for p in cfg.gpu_pools]
    where = "gpu_node_groups" if cfg.provider == "aws" else "existing.gpu_pools"
    for i, queue in enumerate(sched.cluster_queues):
        for pool in queue.gpus or {}:
            _known_pool(pool, pools, where, f"scheduling.cluster_queues[{i}].gpus.{pool}")
    for i, team in enumerate(sched.teams):
        if team.name == cfg.namespaces.system:
            raise FieldProblem(
                f"scheduling.teams[{i}].name",
                f"{team.name!r} is namespaces.system, the platform's add-ons' namespace; "
                "give the team a namespace of its own",
            )
    for i, flavor in enumerate(sched.flavors):
        path = f"scheduling.flavors[{i}]"
        _known_pool(flavor.pool, pools, where, f"{path}.pool")
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


def _known_pool(name: str, pools: list[str], where: str, path: str) -> None:
    try:
        one_of(name, pools, f"a GPU pool of this stack ({where})", "pools")
    except ValueError as error:
        raise FieldProblem(path, str(error)) from None
