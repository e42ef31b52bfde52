"""EKS node auto repair per managed node group (provider aws only).

Facts from the EKS user guide, "Automatically repair nodes in EKS clusters": the node monitoring
agent sets the conditions below on each node; EKS repairs a node whose condition stays unhealthy
for the wait the page lists (AcceleratedHardwareReady 10 minutes, the others 30), by `Replace`
or, on managed node groups only, `Reboot`. An override applies to one condition and one reason
the agent reports, so "reboot only" can be said only for the reasons named.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from model.config.base import FieldProblem, Int, Settings, shaped
from model.config.bounds import MAX_CLUSTER_NODES

NodeCondition = Literal[
    "AcceleratedHardwareReady",
    "ContainerRuntimeReady",
    "KernelReady",
    "NetworkingReady",
    "StorageReady",
    "Ready",
]
RepairAction = Literal["Reboot", "Replace"]
UnhealthyReason = Annotated[
    str,
    shaped(
        r"[A-Z][A-Za-z0-9]{0,99}",
        "a reason as the node monitoring agent reports it: a capital letter, then letters and "
        "digits, e.g. NvidiaXID79Error",
    ),
]

# The AWS page's wait for AcceleratedHardwareReady, kept for the reboot overrides this program
# adds, so that a reboot comes no sooner than EKS's own repair would.
GPU_REPAIR_WAIT_MINUTES = 10
# GPU fault reasons the agent raises as AcceleratedHardwareReady conditions (its source names
# NvidiaXID79Error, GPU fallen off the bus, and NvidiaDoubleBitError as fatal; NvidiaXID64Error
# is the row-remapping failure). Where EKS would replace the node, a reserved group reboots it.
GPU_FAULT_REASONS = ("NvidiaXID79Error", "NvidiaXID64Error", "NvidiaDoubleBitError")


class RepairOverride(Settings):
    """One `nodeRepairConfigOverrides` entry: what EKS does for one condition and reason."""

    condition: NodeCondition = Field(description="The node condition the agent sets.")
    reason: UnhealthyReason = Field(description="The agent's reason, e.g. NvidiaXID79Error.")
    action: RepairAction = Field(description="Reboot (managed node groups only) or Replace.")
    wait_minutes: Int = Field(
        GPU_REPAIR_WAIT_MINUTES,
        ge=1,
        le=10080,
        description="Minutes the condition must last before EKS repairs (at most a week).",
    )


class NodeRepairSettings(Settings):
    """EKS node auto repair for one managed node group (`nodeRepairConfig`)."""

    enabled: bool = Field(
        True,
        description="Let EKS reboot or replace a node the node monitoring agent marks unhealthy.",
    )
    reboot_only: bool | None = Field(
        None,
        description="Reboot instead of replace on the GPU fault reasons in gpu_fault_reasons. "
        "Default: on for reservation and capacity_block groups, where a replacement may find "
        "no capacity; off otherwise. Other conditions keep EKS's own action.",
    )
    gpu_fault_reasons: list[UnhealthyReason] = Field(
        default_factory=lambda: list(GPU_FAULT_REASONS),
        min_length=1,
        description="AcceleratedHardwareReady reasons that reboot_only turns into Reboot.",
    )
    max_unhealthy_percentage: Int | None = Field(
        None,
        ge=1,
        le=100,
        description="Stop repairing when more than this percent of the group is unhealthy; "
        "unset: EKS's default. Exclusive with max_unhealthy_count.",
    )
    max_unhealthy_count: Int | None = Field(
        None,
        ge=1,
        le=MAX_CLUSTER_NODES,
        description="Stop repairing when more than this many nodes are unhealthy; at most the "
        "group's max_size. Exclusive with max_unhealthy_percentage.",
    )
    max_parallel_percentage: Int | None = Field(
        None,
        ge=1,
        le=100,
        description="Repair at most this percent of the unhealthy nodes at once; unset: EKS's "
        "default. Exclusive with max_parallel_count.",
    )
    max_parallel_count: Int | None = Field(
        None,
        ge=1,
        le=MAX_CLUSTER_NODES,
        description="Repair at most this many nodes at once; at most the group's max_size. "
        "Exclusive with max_parallel_percentage.",
    )
    overrides: list[RepairOverride] = Field(
        default_factory=list,
        description="Per condition and reason actions; they win over reboot_only's.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> NodeRepairSettings:
        for kind in ("unhealthy", "parallel"):
            if getattr(self, f"max_{kind}_percentage") and getattr(self, f"max_{kind}_count"):
                raise FieldProblem(
                    f"max_{kind}_count",
                    f"give max_{kind}_percentage or max_{kind}_count, not both: EKS takes one",
                )
        seen = set()
        for i, o in enumerate(self.overrides):
            if (o.condition, o.reason) in seen:
                raise FieldProblem(
                    f"overrides[{i}]",
                    f"{o.condition} with reason {o.reason} is overridden twice; keep one",
                )
            seen.add((o.condition, o.reason))
        if not self.enabled and self.model_fields_set - {"enabled"}:
            raise FieldProblem(
                "enabled",
                "false turns repair off, so the other node_repair keys would do nothing: "
                "remove them, or set enabled: true",
            )
        return self


def check_repair_fits(repair: NodeRepairSettings, max_size: int) -> None:
    """A count threshold above the group's size can never be reached: refuse it."""
    for key in ("max_unhealthy_count", "max_parallel_count"):
        value = getattr(repair, key)
        if value is not None and value > max_size:
            raise FieldProblem(
                f"node_repair.{key}",
                f"{value} is more nodes than the group's max_size {max_size}; give 1 to "
                f"{max_size}, or a percentage",
            )


def repair_overrides(repair: NodeRepairSettings, reboot_only: bool) -> list[RepairOverride]:
    """The overrides EKS gets: reboot_only's Reboot for each GPU fault reason, then the
    configured ones, which win for the same condition and reason."""
    chosen = {}
    if reboot_only:
        for reason in repair.gpu_fault_reasons:
            chosen[("AcceleratedHardwareReady", reason)] = RepairOverride(
                condition="AcceleratedHardwareReady", reason=reason, action="Reboot"
            )
    for o in repair.overrides:
        chosen[(o.condition, o.reason)] = o
    return list(chosen.values())
