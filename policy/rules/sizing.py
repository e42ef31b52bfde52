"""Sizing and cost rules, all advisory: they flag a choice worth a second look, never a
broken platform."""

from __future__ import annotations

from collections.abc import Iterator

from model.catalog import CATALOG
from model.config.multikueue import BURST_BUDGET_ANNOTATION
from policy.rules.base import Context, Subject, rule, truthy
from policy.rules.correctness import instance_types_of

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
STACK = "pulumi:pulumi:Stack"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
ADMISSION_CHECK = "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck"
# Kueue's MultiKueue admission check controller (v0.19.2 MultiKueueControllerName).
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# Host memory to hold pinned staging buffers, the data loader's prefetch and a checkpoint being
# written while the GPUs keep training: 1.5 x the GPUs' total memory (the issue's sizing list).
HOST_MEMORY_RATIO = 1.5


def _gpu_types(group: Subject, ctx: Context) -> list:
    if not truthy((group.props.get("labels") or {}).get("nvidia.com/gpu.present")):
        return []
    names = instance_types_of(group, ctx)
    return [CATALOG[n] for n in names if n in CATALOG and CATALOG[n].gpus]


@rule(
    "host-memory-per-gpu-memory",
    "advisory",
    [NODE_GROUP],
    "Host memory is at least 1.5 x the GPUs' total memory. Advisory: small single-GPU types "
    "(g5/g6 .xlarge, dev's spot group) have less and suit inference and tests.",
    "pick a larger type in gpu_node_groups[].instance_types",
    linked=True,
)
def host_memory_per_gpu_memory(r: Subject, ctx: Context) -> Iterator[str]:
    for row in _gpu_types(r, ctx):
        needed = HOST_MEMORY_RATIO * row.gpus * row.gpu_memory_gib
        if row.memory_gib < needed:
            yield f"{row.name}: {row.memory_gib} GiB host memory < {needed:g} GiB"


@rule(
    "vcpus-per-gpu",
    "advisory",
    [NODE_GROUP],
    "Enough vCPUs per GPU for data-loader workers and the launcher (policy.min_vcpus_per_gpu).",
    "pick a type with more vCPUs per GPU in gpu_node_groups[].instance_types, or lower "
    "policy.min_vcpus_per_gpu",
    linked=True,
)
def vcpus_per_gpu(r: Subject, ctx: Context) -> Iterator[str]:
    floor = ctx.settings.min_vcpus_per_gpu
    for row in _gpu_types(r, ctx):
        if row.vcpus / row.gpus < floor:
            yield f"{row.name}: {row.vcpus / row.gpus:g} vCPUs per GPU < {floor}"


@rule(
    "spot-outside-prod",
    "advisory",
    [NODE_GROUP],
    "Outside production, a GPU group that scales from zero (interruptible work) runs on spot. "
    "Advisory: the shipped staging stack keeps its EFA group on-demand.",
    "set gpu_node_groups[].capacity: spot",
    linked=True,
)
def spot_outside_prod(r: Subject, ctx: Context) -> Iterator[str]:
    scaling = r.props.get("scalingConfig") or {}
    if (
        not ctx.production
        and _gpu_types(r, ctx)
        and scaling.get("minSize", 0) == 0
        and r.props.get("capacityType") == "ON_DEMAND"
    ):
        yield "on-demand GPU group that scales from zero outside production"


@rule(
    "monthly-cost-within-budget",
    "advisory",
    [STACK],
    "The stack's estimated monthly cost at maximum size stays within its budget.",
    "raise cost.monthly_budget_usd, or lower gpu_node_groups[].scaling.max_size",
)
def monthly_cost_within_budget(r: Subject, ctx: Context) -> Iterator[str]:
    budget = ctx.monthly_budget_usd
    if budget is None:
        return
    if ctx.monthly_usd is None:
        yield "cost estimate unavailable: budget not checked"
    elif ctx.monthly_usd > budget:
        yield f"estimated ${ctx.monthly_usd:,.0f} a month, budget ${budget:,}"


def _multikueue_checks(ctx: Context) -> set[str]:
    return {
        (r.props.get("metadata") or {}).get("name")
        for r in ctx.of_type(ADMISSION_CHECK)
        if (r.props.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER
    }


@rule(
    "burst-queue-has-budget",
    "mandatory",
    [CLUSTER_QUEUE],
    "A ClusterQueue that bursts to other clusters through MultiKueue carries a monthly budget: "
    "its workloads run on capacity that is billed (spot, on-demand, Capacity Blocks).",
    "set scheduling.cluster_queues[].burst.monthly_budget_usd",
)
def burst_queue_has_budget(r: Subject, ctx: Context) -> Iterator[str]:
    strategy = (r.props.get("spec") or {}).get("admissionChecksStrategy") or {}
    names = {c.get("name") for c in strategy.get("admissionChecks") or []}
    bursts = sorted(n for n in names & _multikueue_checks(ctx) if n)
    if not bursts:
        return
    annotations = (r.props.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(BURST_BUDGET_ANNOTATION)
    try:
        budget = float(value) if value is not None else None
    except ValueError:
        budget = None
    if budget is None or budget <= 0:
        yield (
            f"bursts through {', '.join(bursts)} with no monthly budget "
            f"({BURST_BUDGET_ANNOTATION}: {value!r})"
        )


RULES = [
    host_memory_per_gpu_memory,
    vcpus_per_gpu,
    spot_outside_prod,
    monthly_cost_within_budget,
    burst_queue_has_budget,
]
