"""A reserved node group's window: when its Capacity Block (or time-bounded capacity
reservation) starts and ends, and how the platform opens, drains and closes its Kueue flavor
around it (contract/reservation.py holds the phases; components/scheduling/reservation.py the
CronJobs that run them)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from contract.reservation import EKS_SCALE_DOWN_MINUTES, Window
from model.config.base import FieldProblem, Int, Settings
from model.config.bounds import INT32_MAX, WEEK_MINUTES

if TYPE_CHECKING:
    from model.config import PlatformConfig

# EC2 User Guide, "Find and purchase Capacity Blocks" (capacity-blocks-purchase): "All Capacity
# Blocks end at 11:30AM UTC" (their start and length vary with the offering).
CAPACITY_BLOCK_END_UTC = time(11, 30)


class ReservationWindowSettings(Settings):
    start: datetime = Field(
        description="When the reservation starts: UTC, ISO 8601 with its zone "
        "(2026-12-14T11:30:00Z)."
    )
    end: datetime = Field(
        description="When the reservation ends: UTC, ISO 8601 with its zone. A Capacity Block "
        "ends at 11:30 UTC."
    )
    instances: Int = Field(
        ge=1,
        le=INT32_MAX,
        description="How many instances the reservation holds: what was bought, and what is "
        "paid from start to end whether it runs or not (a Capacity Block and a capacity "
        "reservation are bought as a count of instances of one type: EC2 User Guide, "
        '"Capacity Blocks for ML" and "On-Demand Capacity Reservations"). The group\'s '
        "scaling.max_size may not exceed it.",
    )
    warmup_minutes: Int = Field(
        30,
        ge=0,
        le=WEEK_MINUTES,
        description="Minutes from the start during which the nodes join and pass the node-join "
        "check (which pulls the self-test image) before the pool's Kueue flavor opens. Default: "
        "the node-join check's own default limit on a node (selftest.node_join.timeout_minutes, "
        "30).",
    )
    drain_minutes: Int = Field(
        60,
        ge=1,
        le=WEEK_MINUTES,
        description="Minutes before the end at which the flavor stops admitting and the "
        "workloads on it are evicted (SIGTERM, their grace to checkpoint). On a Capacity Block "
        f"more than {EKS_SCALE_DOWN_MINUTES}: EKS scales the group to 0 {EKS_SCALE_DOWN_MINUTES} "
        "minutes before the end. Default 60: 20 minutes to checkpoint before that scale-down.",
    )
    on_drain: Literal["requeue", "hold"] = Field(
        "requeue",
        description="What drained workloads do: requeue (Kueue admits them again to the first "
        "other flavor their own ClusterQueue lists with quota left, never to a MultiKueue burst "
        "worker, as Kueue refuses a MultiKueue check on some flavors only; with none left they "
        "wait, pending, until the flavor reopens, and the plan warns reservation-drain-waits) "
        "or hold (deactivated until someone reactivates them). On a burst worker stack its "
        "workloads requeue on the worker, to its queue's other flavors.",
    )

    @field_validator("start", "end")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() != timedelta(0):
            raise ValueError(
                f"{value.isoformat()} is not in UTC: write it with its zone, as "
                "2026-12-14T11:30:00Z (the CronJobs run in Etc/UTC)"
            )
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _ordered(self) -> ReservationWindowSettings:
        if self.end <= self.start:
            raise FieldProblem(
                "end", f"{self.end.isoformat()} is not after start {self.start.isoformat()}"
            )
        minutes = (self.end - self.start).total_seconds() / 60
        if self.warmup_minutes + self.drain_minutes >= minutes:
            raise FieldProblem(
                "drain_minutes",
                f"warmup_minutes {self.warmup_minutes} + drain_minutes {self.drain_minutes} "
                f"leave no time open in a window of {minutes:g} minutes",
            )
        return self

    def window(self) -> Window:
        return Window(self.start, self.end, self.warmup_minutes, self.drain_minutes, self.on_drain)


def check_window(capacity: str, max_size: int, window: ReservationWindowSettings | None) -> None:
    """The rules between a group's capacity, its size and its window."""
    if window is None:
        return
    if capacity not in ("reservation", "capacity_block"):
        raise FieldProblem(
            "reservation_window",
            f"needs capacity: reservation or capacity_block, not {capacity}",
        )
    if capacity == "capacity_block" and window.end.timetz() != CAPACITY_BLOCK_END_UTC.replace(
        tzinfo=UTC
    ):
        raise FieldProblem(
            "reservation_window.end",
            f"{window.end.isoformat()} is not when a Capacity Block ends: every one ends at "
            "11:30 UTC (EC2 User Guide, Capacity Blocks); give the block's end date at 11:30:00Z",
        )
    if capacity == "capacity_block" and window.drain_minutes <= EKS_SCALE_DOWN_MINUTES:
        raise FieldProblem(
            "reservation_window.drain_minutes",
            f"{window.drain_minutes} does not drain before EKS scales a Capacity Block's group "
            f"to 0, {EKS_SCALE_DOWN_MINUTES} minutes before its end: give more than "
            f"{EKS_SCALE_DOWN_MINUTES}",
        )
    if max_size > window.instances:
        # The group launches only into its reservation, so nodes past its count are never
        # launched: such a size promises capacity that was not bought.
        raise FieldProblem(
            "scaling.max_size",
            f"{max_size} is more than the reservation holds, reservation_window.instances "
            f"{window.instances}: give a max_size of at most {window.instances}, or the "
            "instances the reservation was bought with",
        )


def check_reservation_windows(cfg: PlatformConfig) -> None:
    """What the reservation controller needs of the rest of the stack: Kueue, whose flavor it
    opens and closes, and the image it runs in (components/scheduling/reservation.py)."""
    for i, group in enumerate(cfg.gpu_node_groups):
        if group.reservation_window is None:
            continue
        if not cfg.scheduling.enabled:
            raise FieldProblem(
                f"gpu_node_groups[{i}].reservation_window",
                f"set on {group.name}, but scheduling is off: the window opens and closes the "
                "pool's Kueue flavor, and there is none; enable scheduling or remove the window",
            )
        if cfg.selftest.image is None:
            raise FieldProblem(
                f"gpu_node_groups[{i}].reservation_window",
                f"set on {group.name}, but selftest.image is not: the controller that opens, "
                "drains and closes the window runs in the self-test image; set selftest.image "
                "(docs/selftest.md) or remove the window",
            )
