"""A reserved pool's window (gpu_node_groups[].reservation_window): which phase it is in at a
given time and what the platform does about it. The program derives the CronJobs' schedules and
the cost estimate's paid-but-idle hours from it (components/scheduling/reservation.py,
model/cost.py); the controller those CronJobs run (bootstrap/selftest/reservation.py) calls
`actions` with the time it runs at. Every run reconciles to the phase of *now*, whichever
CronJob started it, so a late, missed or repeated run (a cron schedule has no year: it fires
again a year later) does the right thing or nothing.

Phases, in UTC:

    pending   before the window: no node of the reservation exists; the flavor is closed.
    warming   [start, start + warmup): the group's Auto Scaling group launches no instance
              before the reservation is active and scales up to the group's desired size once
              it is (EKS User Guide, capacity-blocks-mng.adoc), so the nodes join at the start;
              each one runs the node-join check (contract/node_join.py), pulling the self-test
              image as it runs it. The flavor stays closed: nothing lands on a node that has
              not passed.
    open      [start + warmup, end - drain): the flavor has its quota.
    draining  [end - drain, end): the flavor's quota is 0 (nothing more is admitted to it) and
              the workloads admitted to it are deactivated (Workload spec.active: false): Kueue
              evicts them, their pods get SIGTERM and their grace to checkpoint. `requeue`
              reactivates them once evicted, and Kueue admits them to the queue's other flavors;
              `hold` leaves them inactive until someone reactivates them.
    closed    from the end on: the flavor's quota is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

PHASES = ("pending", "warming", "open", "draining", "closed")
ON_DRAIN = ("requeue", "hold")
# EKS User Guide, "Create a managed node group with Capacity Blocks for ML"
# (latest/ug/ml/capacity-blocks-mng.adoc): EKS schedules a scale-down of the node group to 0
# forty minutes before the Capacity Block ends.
EKS_SCALE_DOWN_MINUTES = 40
# EC2 User Guide, "Monitor Capacity Blocks using EventBridge" (capacity-blocks-monitor): forty
# minutes before the end an event says the instances "will begin to terminate in 10 minutes",
# i.e. EC2 reclaims them from 30 minutes before the end.
EC2_RECLAIM_MINUTES = 30

# The controller's environment, set on its CronJobs by the program.
ENV_START, ENV_END = "RESERVATION_START", "RESERVATION_END"
ENV_WARMUP, ENV_DRAIN = "RESERVATION_WARMUP_MINUTES", "RESERVATION_DRAIN_MINUTES"
ENV_ON_DRAIN, ENV_FLAVOR = "RESERVATION_ON_DRAIN", "RESERVATION_FLAVOR"
# JSON: ClusterQueue name -> the flavor's open quota there (resource -> quantity).
ENV_QUOTAS = "RESERVATION_QUOTAS"
# Comma-separated: the namespaces whose Workloads may be on the flavor.
ENV_NAMESPACES = "RESERVATION_NAMESPACES"


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    warmup_minutes: int
    drain_minutes: int
    on_drain: str = "requeue"

    def transitions(self) -> dict[str, datetime]:
        """Each phase after `pending` -> when it begins."""
        return {
            "warming": self.start,
            "open": self.start + timedelta(minutes=self.warmup_minutes),
            "draining": self.end - timedelta(minutes=self.drain_minutes),
            "closed": self.end,
        }

    def phase(self, now: datetime) -> str:
        found = "pending"
        for name, at in self.transitions().items():
            if now >= at:
                found = name
        return found

    def paid_idle_hours(self) -> float:
        """Hours of the window no job can run in: warm-up and drain (which holds the time AWS's
        scale-down and reclaim take)."""
        return (self.warmup_minutes + self.drain_minutes) / 60

    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600


@dataclass(frozen=True)
class Actions:
    """What the controller makes true at a time: the flavor's quota open or 0, and whether the
    workloads admitted to the flavor are deactivated (and, for `requeue`, reactivated once
    Kueue has evicted them)."""

    phase: str
    flavor_open: bool
    evict: bool
    reactivate: bool


def actions(window: Window, now: datetime) -> Actions:
    phase = window.phase(now)
    evict = phase in ("draining", "closed")
    return Actions(phase, phase == "open", evict, evict and window.on_drain == "requeue")
