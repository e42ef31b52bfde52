"""The platform's goodput ledger: a job's allocation split into goodput and badput by cause, from
what the platform sees of it alone (Kueue's Workload conditions, JobSet restarts, its pods'
conditions, quarantines, checkpoint markers where known), so every job has one, trainkit or not.

What counts:
- The allocation is the wall time the job held quota: from each admission (Kueue's
  QuotaReserved) to its eviction or its end. GPU-seconds are that time × the job's GPUs.
- Queueing (before an admission, and after an eviction until the next one) is reported beside
  the allocation, not in it: the job held no GPU then (another job may have used them), so
  pricing it would bill a team for GPUs it did not have; it is a delay, not a cost.
- Provisioning: admitted → every pod scheduled (nodes found, scaled up).
- Image pull / init: scheduled → every pod's containers ready (pull, init containers, start).
- Restart: every allocated second from a failure or eviction until the group runs again,
  whatever it spent them on (a re-admission's provisioning and pull included).
- Failure: the running time since the last checkpoint, lost when the group failed. Known only
  where checkpoint markers are; without them the loss is unknown and not counted (goodput is
  then an upper bound), never guessed.
- Unrecorded: time whose split the cluster no longer holds (an earlier attempt's pods are
  deleted by its restart; Kueue keeps only the newest transition of each condition). Inside the
  allocation it is a cause of its own; outside it, beside queueing.
- Goodput: the rest, the group running.

Seconds are integers (metav1.Time is whole seconds), so goodput + Σ badput == allocation holds
exactly; trainkit's finer figures (`refine`) are exact Fractions of its float GPU-seconds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

# Event kinds, in the order the platform sees a job's life.
QUEUED = "queued"
ADMITTED = "admitted"
SCHEDULED = "scheduled"
RUNNING = "running"
CHECKPOINT = "checkpoint"
FAILED = "failed"
QUARANTINED = "quarantined"
EVICTED = "evicted"
UNRECORDED = "unrecorded"
FINISHED = "finished"
KINDS = (
    QUEUED, ADMITTED, SCHEDULED, RUNNING, CHECKPOINT, FAILED, QUARANTINED, EVICTED, UNRECORDED,
    FINISHED,
)  # fmt: skip

# Badput causes, in the allocation.
PROVISIONING = "provisioning"
PULL_INIT = "image pull / init"
RESTART = "restart"
FAILURE = "failure"
UNRECORDED_CAUSE = "unrecorded"
CAUSES = (PROVISIONING, PULL_INIT, RESTART, FAILURE, UNRECORDED_CAUSE)
# trainkit's refinement: what the process spent off its productive steps (module `refine`).
IN_PROCESS = "in the process (start-up, checkpoint saves, data stalls, unsaved tail)"

# A finished job's reason that lost its uncommitted work (Kueue WorkloadFinishedReasonFailed).
FAILED_REASON = "Failed"


@dataclass(frozen=True)
class Event:
    at: int  # Unix seconds
    kind: str
    reason: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"event kind {self.kind!r} is not one of {', '.join(KINDS)}")


@dataclass
class JobLedger:
    """One job's seconds by where they went. `failure_known` False: a failure happened with no
    checkpoint marker known, so its loss is in goodput (an upper bound)."""

    gpus: int
    goodput: int = 0
    badput: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))
    queueing: int = 0
    unrecorded_outside: int = 0
    failure_known: bool = True
    restarts: Counter[str] = field(default_factory=Counter)

    @property
    def allocation(self) -> int:
        return self.goodput + sum(self.badput.values())

    def gpu_seconds(self) -> dict[str, int]:
        """Goodput and each cause in GPU-seconds (allocation seconds × GPUs)."""
        return {"goodput": self.goodput * self.gpus} | {
            cause: seconds * self.gpus for cause, seconds in self.badput.items()
        }


# The states the job passes through; which bucket a second in each goes to.
_WAITING, _PROVISIONING, _PULLING, _RUNNING, _RESTARTING, _GONE, _DONE = range(7)
_ALLOCATED = (_PROVISIONING, _PULLING, _RUNNING, _RESTARTING)


def ledger(
    events: Iterable[Event], end: int, gpus: int, checkpoints_known: bool = False
) -> JobLedger:
    """The job's ledger from its events up to `end` (its finish, else now). `checkpoints_known`:
    the source records checkpoint markers, so a failure's loss can be measured."""
    timeline = sorted(events, key=lambda e: e.at)
    if timeline and timeline[-1].at > end:
        raise ValueError(f"an event at {timeline[-1].at} is after the ledger's end {end}")
    book = JobLedger(gpus=gpus)
    state, allocated_before, recovering = _WAITING, False, False
    uncommitted = 0  # running seconds since the last checkpoint
    at = timeline[0].at if timeline else end

    def spend(seconds: int) -> None:
        nonlocal uncommitted
        if state == _DONE:
            return
        if state == _WAITING:
            book.queueing += seconds
        elif state == _GONE:
            if allocated_before:
                book.badput[UNRECORDED_CAUSE] += seconds
            else:
                book.unrecorded_outside += seconds
        elif state == _RUNNING:
            book.goodput += seconds
            uncommitted += seconds
        elif state == _RESTARTING or recovering:
            book.badput[RESTART] += seconds
        elif state == _PROVISIONING:
            book.badput[PROVISIONING] += seconds
        elif state == _PULLING:
            book.badput[PULL_INIT] += seconds

    def lose() -> None:
        nonlocal uncommitted
        if checkpoints_known:
            book.goodput -= uncommitted
            book.badput[FAILURE] += uncommitted
        elif uncommitted:
            book.failure_known = False
        uncommitted = 0

    for event in timeline:
        spend(event.at - at)
        at = event.at
        holding = state in _ALLOCATED or (state == _GONE and allocated_before)
        if event.kind == ADMITTED and state in (_WAITING, _GONE):
            state, allocated_before = _PROVISIONING, True
        elif event.kind == SCHEDULED and state == _PROVISIONING:
            state = _PULLING
        elif event.kind == RUNNING and state in (_PROVISIONING, _PULLING, _RESTARTING):
            state, recovering = _RUNNING, False
        elif event.kind == CHECKPOINT:
            uncommitted = 0
        elif event.kind in (FAILED, QUARANTINED) and holding and state != _RESTARTING:
            lose()
            book.restarts[event.reason or event.kind] += 1
            state, recovering = _RESTARTING, True
        elif event.kind == EVICTED and (holding or state == _GONE):
            lose()
            book.restarts[f"evicted: {event.reason}" if event.reason else EVICTED] += 1
            state, recovering, allocated_before = _WAITING, True, False
        elif event.kind == UNRECORDED and state != _DONE:
            allocated_before = holding
            state = _GONE
        elif event.kind == FINISHED:
            if event.reason == FAILED_REASON and state == _RUNNING:
                lose()
            state = _DONE
    spend(end - at)
    return book


# ---------------------------------------------------------------------------- priced


def usd(gpu_seconds: int | Fraction, usd_per_gpu_hour: float) -> Fraction:
    """GPU-seconds at a GPU-hour price, exact (the price's float is taken as it is)."""
    return Fraction(gpu_seconds) * Fraction(usd_per_gpu_hour) / 3600


def team_totals(books: Iterable[JobLedger]) -> dict[str, int]:
    """A team's goodput and badput by cause in GPU-seconds: its jobs' sums (jobs differ in
    GPUs, so seconds do not add up across them; GPU-seconds do)."""
    totals: Counter[str] = Counter()
    for book in books:
        totals.update(book.gpu_seconds())
    return {key: totals[key] for key in ("goodput", *CAUSES)}


# ---------------------------------------------------------------------------- trainkit


class Disagreement(ValueError):
    """trainkit's figures claim more than the platform saw the group run; the message says by
    how much."""


@dataclass(frozen=True)
class Refined:
    """The platform's ledger in GPU-seconds with trainkit's split of the group's running time:
    goodput is trainkit's productive steps, failure its lost steps, and the rest of the running
    time `in_process`. Sums to the same allocation."""

    goodput: Fraction
    badput: dict[str, Fraction]

    @property
    def allocation(self) -> Fraction:
        return self.goodput + sum(self.badput.values())


def refine(book: JobLedger, productive: float, lost: Mapping[str, float]) -> Refined:
    """trainkit's ledger (bootstrap/trainkit/goodput.py `figures`: productive GPU-seconds, lost
    GPU-seconds by cause, over every attempt) refines the running time the platform saw (its
    goodput, any failure loss it measured, and the earlier attempts it no longer holds): that
    time bounds trainkit's productive time, and the difference is what the process spent off
    its steps (and, for unrecorded attempts, between them)."""
    figures = book.gpu_seconds()
    # The attempts the API no longer holds are in trainkit's ledger: their time is its to split.
    running = Fraction(figures["goodput"] + figures[FAILURE] + figures[UNRECORDED_CAUSE])
    steps, wasted = Fraction(productive), sum((Fraction(v) for v in lost.values()), Fraction(0))
    rest = running - steps - wasted
    if rest < 0:
        raise Disagreement(
            f"trainkit counts {float(steps + wasted):.0f} GPU-seconds of steps, "
            f"{float(-rest):.0f} more than the {float(running):.0f} the platform saw the group "
            "run: the two clocks disagree (a ledger from another job of the same name?)"
        )
    badput = {cause: Fraction(figures[cause]) for cause in CAUSES}
    badput[FAILURE] = wasted
    badput[UNRECORDED_CAUSE] = Fraction(0)
    badput[IN_PROCESS] = rest
    return Refined(goodput=steps, badput=badput)
