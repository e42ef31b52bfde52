"""Quota beyond the nominal: how far each ClusterQueue borrows from its cohort and lends to it
(`scheduling.cluster_queues[].borrowing_limit`, `.lending_limit`), and Kueue's two fair-sharing
mechanisms (`scheduling.fair_sharing`): among the cohort's ClusterQueues by weight, and among the
LocalQueues of one ClusterQueue by their recent usage (admission fair sharing).

Field names are Kueue v0.19.2's (kubernetes-sigs/kueue `8eab68778fc1`):
apis/kueue/v1beta2/clusterqueue_types.go `borrowingLimit`, `lendingLimit`, `fairSharing.weight`,
`admissionScope.admissionMode`; localqueue_types.go `fairSharing.weight`;
apis/config/v1beta2/configuration_types.go `fairSharing.preemptionStrategies`,
`admissionFairSharing.usageHalfLifeTime` / `usageSamplingInterval`.

Checked against the pools and the queues by `check_quota_sharing`, which PlatformConfig calls.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from model.config.base import DnsLabel, FieldProblem, FieldProblems, Int, Settings, shaped
from model.config.references import TEAM_NAMESPACE, refers

if TYPE_CHECKING:
    from model.config import PlatformConfig

# Kueue reads its durations as metav1.Duration, i.e. Go's time.ParseDuration: no days or weeks.
_GO_DURATION = re.compile(r"(?!$)(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
GoDuration = Annotated[
    str,
    shaped(
        _GO_DURATION.pattern,
        "a duration as Kueue reads it (Go's time.ParseDuration): hours, minutes and seconds, "
        "each at most once, e.g. 168h, 30m or 1h30m (no d or w)",
    ),
]
# The preemption strategies of Kueue's fair sharing, in the order Kueue's docs configure them
# (site/content/en/docs/concepts/preemption.md "Fair Sharing"; chart values.yaml at 0.19.2):
# a workload preempts another queue's only where that leaves its own share at most the other's,
# then where its share stays below the other's before preemption.
PREEMPTION_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
# The ClusterQueue admission mode that orders workloads by their LocalQueue's usage
# (apis/kueue/v1beta2/clusterqueue_types.go `AdmissionMode`).
USAGE_BASED = "UsageBasedAdmissionFairSharing"


def duration_seconds(duration: str) -> int:
    hours, minutes, secs = (int(n or 0) for n in _GO_DURATION.fullmatch(duration).groups())
    return hours * 3600 + minutes * 60 + secs


class AdmissionFairSharingSettings(Settings):
    """Kueue's admission fair sharing: a ClusterQueue admits first the workloads of the
    LocalQueue (team) that has used least lately, usage decaying by half every
    `usage_half_life`."""

    usage_half_life: GoDuration = Field(
        "168h",
        description="How long until a team's recorded usage counts half (Kueue "
        "`admissionFairSharing.usageHalfLifeTime`). Never 0: Kueue takes 0 as no usage at "
        "all, so every team ties and fair sharing silently does nothing (kubernetes-sigs/"
        "kueue#11134). Default a week, Kueue's own example for training workloads.",
    )
    usage_sampling_interval: GoDuration = Field(
        "5m",
        description="How often Kueue updates each team's usage (Kueue "
        "`admissionFairSharing.usageSamplingInterval`; its default).",
    )
    team_weights: dict[Annotated[DnsLabel, refers(TEAM_NAMESPACE)], Int] = Field(
        default_factory=dict,
        description="Per team (namespace), the weight of its LocalQueue: usage counts divided "
        "by it, so a team of weight 2 is served as if it had used half as much. Teams left out "
        "weigh 1; 0 puts a team behind every other.",
    )


class FairSharingSettings(Settings):
    """How the cohort's idle GPUs are shared out."""

    enabled: bool = Field(
        False,
        description="Kueue's fair sharing across the cohort (Configuration `fairSharing`): "
        "borrowed quota goes first to the ClusterQueue with the lowest share of what it "
        "borrows (divided by its cluster_queues[].fair_sharing_weight), and a queue under its "
        "fair share preempts the borrower above it. Off: the cohort lends in queue order.",
    )
    admission: AdmissionFairSharingSettings | None = Field(
        None,
        description="Order each ClusterQueue's pending workloads by their team's recent usage "
        "(Kueue admission fair sharing, on every ClusterQueue). Off: by priority, then age.",
    )


def _problems(cfg: PlatformConfig) -> list[FieldProblem]:
    sched = cfg.scheduling
    pools = {p.name: p for p in cfg.gpu_pools}
    found = []
    # A queue borrows only from others of its cohort that run here (a bursting queue's quota
    # is of its workers' flavor, never of this cluster's pools).
    local = [q for q in sched.cluster_queues if q.burst is None]
    for i, queue in enumerate(sched.cluster_queues):
        path = f"scheduling.cluster_queues[{i}]"
        for key in ("borrowing_limit", "lending_limit"):
            limits = getattr(queue, key) or {}
            if limits and queue.burst is not None:
                found.append(
                    FieldProblem(
                        f"{path}.{key}",
                        "the queue bursts to MultiKueue workers and holds none of this "
                        "cluster's pools, so it neither borrows nor lends them; remove it",
                    )
                )
                continue
            for pool, count in limits.items():
                if count < 0:
                    found.append(FieldProblem(f"{path}.{key}.{pool}", f"{count}; give 0 or more"))
                elif pool in pools and key == "lending_limit":
                    nominal = queue.nominal_gpus(pools[pool])
                    if count > nominal:
                        found.append(
                            FieldProblem(
                                f"{path}.lending_limit.{pool}",
                                f"{count} GPUs, more than the queue's nominal quota of {nominal} "
                                f"GPUs of pool {pool}: a queue lends only its own idle quota; "
                                f"give 0 to {nominal}",
                            )
                        )
        if queue.borrowing_limit and len(local) < 2:
            found.append(
                FieldProblem(
                    f"{path}.borrowing_limit",
                    f"queue {queue.name} is the only ClusterQueue of cohort {sched.cohort} that "
                    "runs here: there is no other queue to borrow from; remove it, or add the "
                    "queues that lend",
                )
            )
        if queue.fair_sharing_weight is not None and not sched.fair_sharing.enabled:
            found.append(
                FieldProblem(
                    f"{path}.fair_sharing_weight",
                    "Kueue reads it only with fair sharing on: set "
                    "scheduling.fair_sharing.enabled: true, or remove it",
                )
            )
    admission = sched.fair_sharing.admission
    if admission is not None:
        where = "scheduling.fair_sharing.admission"
        for key in ("usage_half_life", "usage_sampling_interval"):
            if duration_seconds(getattr(admission, key)) == 0:
                why = (
                    "Kueue then records no usage at all, so every team ties and admission "
                    "fair sharing silently does nothing (kubernetes-sigs/kueue#11134)"
                    if key == "usage_half_life"
                    else "Kueue refuses a sampling interval of 0 and does not start"
                )
                found.append(
                    FieldProblem(
                        f"{where}.{key}",
                        f"{getattr(admission, key)} is 0: {why}; give a positive duration, "
                        "e.g. 168h",
                    )
                )
        for team, weight in admission.team_weights.items():
            if weight < 0:
                found.append(
                    FieldProblem(f"{where}.team_weights.{team}", f"{weight}; give 0 or more")
                )
    return found


def check_quota_sharing(cfg: PlatformConfig) -> None:
    """Every problem of the queues' limits and weights, together."""
    problems = _problems(cfg)
    if problems:
        raise FieldProblems(problems)
