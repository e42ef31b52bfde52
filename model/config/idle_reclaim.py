"""Idle-GPU reclaim (`scheduling.idle_reclaim`): which admitted workloads the platform's
reclaimer deactivates once every GPU of their job has stayed under the idle threshold
(alerts.idle_utilisation_percent) for after_minutes, so that their quota returns to the cohort
(components/selftest/reclaim.py declares it; docs/scheduling.md, "Idle GPUs given back").

Production training is never reclaimed by default: a workload at the production-training
priority or above is skipped even in a listed queue, and naming that class is refused unless
allow_production says so. An idle production run is usually waiting on data or a checkpoint
write, and losing its place costs more than the GPUs it holds; the alert names it instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, model_validator

from model.config.alerts import seconds
from model.config.base import DnsLabel, FieldProblem, Int, Settings
from model.config.references import CLUSTER_QUEUE, PRIORITY_CLASS, refers

if TYPE_CHECKING:
    from model.config import PlatformConfig

PRODUCTION_PRIORITY_CLASS = "production-training"


class IdleReclaimSettings(Settings):
    """Deactivate idle workloads through Kueue (Workload `spec.active: false`): evicted with
    their pods' grace period (SIGTERM, a checkpoint), and held until their team reactivates
    them."""

    after_minutes: Int = Field(
        60,
        ge=5,
        le=10080,
        description="How long every GPU of a job stays under alerts.idle_utilisation_percent "
        "before its workload is deactivated (5-10080). At least alerts.idle_for, so the team "
        "was alerted first.",
    )
    cluster_queues: list[Annotated[DnsLabel, refers(CLUSTER_QUEUE)]] = Field(
        default_factory=list,
        description="ClusterQueues whose admitted workloads may be reclaimed.",
    )
    priority_classes: list[Annotated[DnsLabel, refers(PRIORITY_CLASS)]] = Field(
        default_factory=list,
        description="Priority classes whose workloads may be reclaimed, in any queue.",
    )
    allow_production: bool = Field(
        False,
        description="Reclaim production-training workloads too (otherwise skipped, and the "
        "class refused in priority_classes).",
    )

    @model_validator(mode="after")
    def _names_something(self) -> IdleReclaimSettings:
        if not self.cluster_queues and not self.priority_classes:
            raise FieldProblem(
                "cluster_queues",
                "empty, and so is priority_classes: name the ClusterQueues or priority classes "
                "whose idle workloads may be reclaimed, or remove idle_reclaim",
            )
        if PRODUCTION_PRIORITY_CLASS in self.priority_classes and not self.allow_production:
            i = self.priority_classes.index(PRODUCTION_PRIORITY_CLASS)
            raise FieldProblem(
                f"priority_classes[{i}]",
                f"{PRODUCTION_PRIORITY_CLASS}: production training is never reclaimed unless "
                "allow_production is true; remove it, or set allow_production: true",
            )
        return self


def check_idle_reclaim(cfg: PlatformConfig) -> None:
    """What the reclaimer needs of the rest of the stack: Kueue, the image it runs in, and an
    idle alert that fires before it acts."""
    reclaim = cfg.scheduling.idle_reclaim
    if reclaim is None:
        return
    if not cfg.scheduling.enabled:
        raise FieldProblem(
            "scheduling.idle_reclaim",
            "set, but scheduling.enabled is false: workloads are deactivated through Kueue; "
            "remove it or enable scheduling",
        )
    if cfg.selftest.image is None:
        raise FieldProblem(
            "scheduling.idle_reclaim",
            "set, but selftest.image is not: the reclaimer runs in the self-test image; "
            "set selftest.image or remove idle_reclaim",
        )
    if reclaim.after_minutes * 60 < seconds(cfg.alerts.idle_for):
        raise FieldProblem(
            "scheduling.idle_reclaim.after_minutes",
            f"{reclaim.after_minutes}, shorter than alerts.idle_for ({cfg.alerts.idle_for}): "
            "a job would be reclaimed before its team is alerted; give at least "
            f"{int(seconds(cfg.alerts.idle_for) // 60)}",
        )
