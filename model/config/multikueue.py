"""MultiKueue config: a manager stack that dispatches admitted workloads to worker stacks, and
a worker stack that accepts them (Kueue "Setup a MultiKueue environment", v0.19.2).

The manager names its workers (`multikueue.workers`) and, per ClusterQueue, whether the queue
bursts to them (`scheduling.cluster_queues[].burst`); a worker says it serves
(`multikueue.serve_as_worker`). Checked against the rest of the stack by `check_multikueue`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from model.catalog import CATALOG
from model.config.base import DnsLabel, FieldProblem, InstanceTypeName, Int, Settings
from model.config.cost import Number
from model.config.nodes import CapacityType
from model.config.references import MULTIKUEUE_WORKER, names, refers

if TYPE_CHECKING:
    from model.config import PlatformConfig

# What MultiKueue does not do, and why a job that needs more than its JobSet cannot burst: it
# creates only the JobSet (and its Workload) on a worker, never what was applied beside it
# (Kueue v0.19.2 pkg/controller/jobs/jobset/jobset_multikueue_adapter.go, SyncJob;
# site/content/en/docs/tasks/manage/setup_dra.md, "MultiKueue considerations":
# "ResourceClaimTemplate and DeviceClass objects are not automatically synced").
NOT_COPIED = (
    "MultiKueue copies only the JobSet to a worker, not what is applied beside it (Kueue "
    "v0.19.2 pkg/controller/jobs/jobset/jobset_multikueue_adapter.go SyncJob; "
    "site/content/en/docs/tasks/manage/setup_dra.md, 'MultiKueue considerations')"
)

# The bursting ClusterQueue carries its budget here, where the policy pack (which sees the
# planned objects, not this model) checks that it has one.
BURST_BUDGET_ANNOTATION = "gpu-platform/burst-monthly-budget-usd"


class WorkerStack(Settings):
    """A worker the manager dispatches to: another stack of this project that serves as one."""

    name: Annotated[DnsLabel, names(MULTIKUEUE_WORKER)] = Field(
        description="The MultiKueueCluster's name on the manager; queues burst to it by this name."
    )
    stack: str = Field(
        description="The worker's fully qualified stack name for `pulumi.StackReference` "
        "(`<organization>/<project>/<stack>`); the offline plan plans the stack named by its "
        "last part from this project's stacks/ folder and stands its outputs in.",
        min_length=1,
    )

    @property
    def local_stack(self) -> str:
        """The stack of this project the offline plan and `python -m jobs` read for it."""
        return self.stack.rsplit("/", 1)[-1]


class MultiKueueSettings(Settings):
    """MultiKueue: dispatch workloads between this stack and others (a manager bursting to
    workers, e.g. on-prem to AWS)."""

    serve_as_worker: bool = Field(
        False,
        description="Accept workloads from a MultiKueue manager: declare the ServiceAccount and "
        "the RBAC Kueue's setup guide gives the manager on a worker, and export a kubeconfig "
        "for it as the secret output `multikueue_kubeconfig`. Provider aws only.",
    )
    workers: list[WorkerStack] = Field(
        default_factory=list,
        description="Worker stacks this stack may dispatch to (manager side). Each becomes a "
        "MultiKueueCluster whose kubeconfig comes from the worker's output through a "
        "StackReference.",
    )


class BurstSettings(Settings):
    """A ClusterQueue whose workloads MultiKueue dispatches to worker stacks. Kueue v0.19.2
    refuses a MultiKueue admission check on some flavors only (the queue goes inactive), so a
    bursting queue runs none of its workloads locally: teams submit to it to burst."""

    workers: list[Annotated[DnsLabel, refers(MULTIKUEUE_WORKER)]] = Field(
        min_length=1,
        description="Workers to dispatch to, most preferred first (multikueue.workers names).",
    )
    gpus: Int = Field(
        ge=1,
        description="GPUs the queue may hold on the workers at once: its quota on the manager, "
        "so the most it can spend.",
    )
    instance_type: InstanceTypeName = Field(
        description="The workers' GPU instance type: its CPUs, memory and EFA devices make the "
        "rest of the queue's quota, its price the burst estimate. Not a type whose nodes "
        "share an NVLink domain (p6e-gb200.36xlarge): its jobs' ComputeDomains would stay "
        "on the manager, since MultiKueue copies only the JobSet."
    )
    capacity: CapacityType = Field(
        "spot", description="How the workers buy that capacity, for the estimate."
    )
    monthly_budget_usd: Number = Field(
        gt=0,
        description="Monthly budget of the burst, required: a burst spends on another account "
        "with no local pool to bound it. The plan warns when the estimate at the queue's quota "
        "exceeds it (the policy rule burst-queue-has-budget checks the planned queue again).",
    )


def check_multikueue(cfg: PlatformConfig) -> None:
    """MultiKueue rules that need the rest of the stack."""
    mk = cfg.multikueue
    if (mk.serve_as_worker or mk.workers) and not cfg.scheduling.enabled:
        raise FieldProblem(
            "multikueue",
            "MultiKueue runs in Kueue, and scheduling.enabled is false; enable scheduling or "
            "remove multikueue",
        )
    if mk.serve_as_worker and cfg.provider != "aws":
        raise FieldProblem(
            "multikueue.serve_as_worker",
            "only with provider aws: the kubeconfig the worker exports needs the API endpoint "
            "EKS gives; an existing cluster's admin runs Kueue's create-multikueue-kubeconfig.sh",
        )
    bursting = [(i, q) for i, q in enumerate(cfg.scheduling.cluster_queues) if q.burst is not None]
    if mk.workers and not bursting:
        raise FieldProblem(
            "multikueue.workers",
            "workers given but no scheduling.cluster_queues[].burst sends them anything; give a "
            "queue burst.workers or remove multikueue.workers",
        )
    for i, queue in bursting:
        domain = CATALOG[queue.burst.instance_type].nvlink_domain_nodes
        if domain is not None:
            raise FieldProblem(
                f"scheduling.cluster_queues[{i}].burst.instance_type",
                f"{queue.burst.instance_type}, whose nodes share an NVLink domain of {domain}: "
                "a multi-node job there runs with a ComputeDomain applied beside its JobSet, "
                f"and {NOT_COPIED}, so its pods would wait on the worker for an IMEX channel "
                "no ComputeDomain makes; valid: an instance type whose NVLink ends at the node, "
                "or run the GB200 jobs on a queue of the worker stack itself",
            )
        if queue.gpus is not None:
            raise FieldProblem(
                f"scheduling.cluster_queues[{i}].gpus",
                "a bursting queue dispatches every workload to its workers (Kueue v0.19.2 "
                "refuses a MultiKueue check on some flavors only), so it holds no local pool; "
                "remove gpus, or put local quota on another queue",
            )
