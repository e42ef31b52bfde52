"""The platform's goodput ledger (jobs/ledger.py, issue 40 §4): a hand-worked timeline, the
invariants as properties over seeded random timelines (goodput + Σ badput == the allocation's
wall time exactly; a failure never raises goodput; no failure or restart leaves only
provisioning and pull badput; no cause negative), and trainkit's figures refining the same
allocation."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from jobs import ledger
from jobs.ledger import Event

# A hand-worked job on 8 GPUs, seconds from its submission:
#      0 queued
#    300 admitted            queueing 300 (outside the allocation)
#    420 every pod scheduled provisioning 120
#    600 every pod ready     image pull / init 180
#   1800 checkpoint          running 1200, saved
#   2400 a pod failed        running 600 since the checkpoint: lost (failure 600)
#   2460 pods scheduled      (recovering: restart)
#   2700 running again       restart 300
#   3600 finished            running 900
# allocation 3600 - 300 = 3300 = goodput 1200 + 900 = 2100, + 120 + 180 + 300 + 600.
WORKED = [
    Event(0, ledger.QUEUED),
    Event(300, ledger.ADMITTED),
    Event(420, ledger.SCHEDULED),
    Event(600, ledger.RUNNING),
    Event(1800, ledger.CHECKPOINT),
    Event(2400, ledger.FAILED, "PodFailed"),
    Event(2460, ledger.SCHEDULED),
    Event(2700, ledger.RUNNING),
    Event(3600, ledger.FINISHED, "Succeeded"),
]


def test_a_hand_worked_timeline_splits_its_allocation_by_cause():
    book = ledger.ledger(WORKED, 3600, gpus=8, checkpoints_known=True)
    assert book.queueing == 300
    assert book.allocation == 3300
    assert book.goodput == 2100
    assert book.badput == {
        "provisioning": 120,
        "image pull / init": 180,
        "restart": 300,
        "failure": 600,
        "unrecorded": 0,
    }
    assert book.restarts == {"PodFailed": 1}
    # × 8 GPUs: 2100 × 8 = 16800, 600 × 8 = 4800 GPU-seconds.
    assert book.gpu_seconds()["goodput"] == 16800
    assert book.gpu_seconds()["failure"] == 4800
    # 4800 GPU-s = 4/3 GPU-h; at $4.50/GPU-h: $6.00.
    assert ledger.usd(4800, 4.5) == 6


def test_without_checkpoint_markers_a_failures_loss_is_unknown_not_guessed():
    book = ledger.ledger(WORKED, 3600, gpus=8, checkpoints_known=False)
    # The 600 s lost stay in goodput (2100 + 600 = 2700), and the ledger says it is an upper
    # bound; restart still counts its 300 s.
    assert book.goodput == 2700
    assert book.badput["failure"] == 0
    assert book.badput["restart"] == 300
    assert not book.failure_known


def test_an_eviction_releases_the_quota_its_requeue_is_queueing_and_its_return_a_restart():
    # 0 queued; 100 admitted; 160 scheduled; 200 running; 1000 evicted (Preempted): running
    # 800, no checkpoint marker -> all lost; 1000..1500 waiting for quota: queueing 500;
    # 1500 re-admitted; 1700 running: restart 200; end 2000: running 300.
    # allocation (1000 - 100) + (2000 - 1500) = 1400 = 60 + 40 + 800 (failure) + 200 + 300.
    events = [
        Event(0, ledger.QUEUED), Event(100, ledger.ADMITTED), Event(160, ledger.SCHEDULED),
        Event(200, ledger.RUNNING), Event(1000, ledger.EVICTED, "Preempted"),
        Event(1500, ledger.ADMITTED), Event(1700, ledger.RUNNING),
    ]  # fmt: skip
    book = ledger.ledger(events, 2000, gpus=1, checkpoints_known=True)
    assert (book.queueing, book.allocation, book.goodput) == (100 + 500, 1400, 300)
    assert book.badput["provisioning"] == 60
    assert book.badput["image pull / init"] == 40
    assert book.badput["failure"] == 800
    assert book.badput["restart"] == 200
    assert book.restarts == {"evicted: Preempted": 1}


def test_an_event_after_the_end_is_refused():
    with pytest.raises(ValueError, match="an event at 3600 is after the ledger's end 3000"):
        ledger.ledger(WORKED, 3000, gpus=8)


# ---------------------------------------------------------------------------- properties

LIFE = (ledger.ADMITTED, ledger.SCHEDULED, ledger.RUNNING, ledger.CHECKPOINT)
TROUBLE = (ledger.FAILED, ledger.QUARANTINED, ledger.EVICTED, ledger.UNRECORDED)
SEEDS = range(400)


def timeline(rng: random.Random, kinds: tuple[str, ...]) -> tuple[list[Event], int]:
    at, events = 0, [Event(0, ledger.QUEUED)]
    for _ in range(rng.randrange(1, 14)):
        at += rng.randrange(0, 600)
        events.append(Event(at, rng.choice(kinds), rng.choice(("", "Preempted", "PodFailed"))))
    if rng.random() < 0.5:
        at += rng.randrange(0, 600)
        reasons = ("Succeeded", "Failed") if ledger.FAILED in kinds else ("Succeeded",)
        events.append(Event(at, ledger.FINISHED, rng.choice(reasons)))
    return events, at + rng.randrange(0, 600)


def held_quota(events: list[Event], end: int) -> int:
    """The allocation's wall time by its definition alone: seconds between an admission and
    the eviction or finish that released it (the ledger's causes play no part)."""
    holding, done, since, total = False, False, 0, 0
    for event in events:
        if event.kind == ledger.ADMITTED and not holding and not done:
            holding, since = True, event.at
        elif event.kind in (ledger.EVICTED, ledger.FINISHED) and holding:
            holding, total = False, total + event.at - since
        done = done or event.kind == ledger.FINISHED
    return total + (end - since if holding else 0)


@pytest.mark.parametrize("known", [True, False])
def test_goodput_and_the_badput_causes_add_up_to_the_allocation_exactly(known):
    for seed in SEEDS:
        rng = random.Random(seed)
        events, end = timeline(rng, LIFE + TROUBLE)
        book = ledger.ledger(events, end, gpus=rng.randrange(1, 65), checkpoints_known=known)
        assert book.goodput + sum(book.badput.values()) == held_quota(events, end), seed
        assert isinstance(book.goodput, int)
        assert book.goodput >= 0 and min(book.badput.values()) >= 0, (seed, book)
        assert book.queueing >= 0 and book.unrecorded_outside >= 0


@pytest.mark.parametrize("added", [ledger.FAILED, ledger.QUARANTINED, ledger.EVICTED])
@pytest.mark.parametrize("known", [True, False])
def test_adding_a_failure_never_raises_goodput(added, known):
    for seed in SEEDS:
        rng = random.Random(seed)
        events, end = timeline(rng, LIFE + TROUBLE)
        before = ledger.ledger(events, end, gpus=8, checkpoints_known=known).goodput
        where = rng.randrange(1, len(events) + 1)
        at = rng.randrange(
            events[where - 1].at, (events[where].at if where < len(events) else end) + 1
        )
        worse = [*events[:where], Event(at, added, "node"), *events[where:]]
        after = ledger.ledger(worse, end, gpus=8, checkpoints_known=known).goodput
        assert after <= before, (seed, worse)


def test_a_timeline_without_failure_or_restart_has_only_provisioning_and_pull_badput():
    for seed in SEEDS:
        rng = random.Random(seed)
        events, end = timeline(rng, LIFE)
        book = ledger.ledger(events, end, gpus=8, checkpoints_known=True)
        others = {
            c: s for c, s in book.badput.items() if c not in ("provisioning", "image pull / init")
        }
        assert set(others.values()) == {0}, (seed, book)
        assert book.failure_known and not book.restarts


# ---------------------------------------------------------------------------- trainkit


def test_trainkit_refines_the_platforms_running_time_into_steps_losses_and_the_rest():
    # The worked job as the API shows it (no checkpoint marker): goodput 2700 s × 8 = 21600
    # GPU-s of running. trainkit saw 14400 GPU-s of productive steps and 4000 lost to a rank's
    # failure: the process spent 21600 - 14400 - 4000 = 3200 off its steps. Allocation
    # 3300 × 8 = 26400 = 14400 + 4000 + 3200 + (120 + 180 + 300) × 8.
    book = ledger.ledger(WORKED, 3600, gpus=8, checkpoints_known=False)
    refined = ledger.refine(book, productive=14400.0, lost={"rank_failed": 4000.0, "hung": 0.0})
    assert refined.goodput == 14400
    assert refined.badput["failure"] == 4000
    assert refined.badput[ledger.IN_PROCESS] == 3200
    assert refined.badput["restart"] == 2400
    assert refined.allocation == 26400


def test_trainkit_claiming_more_than_the_platform_saw_run_is_a_disagreement_not_a_figure():
    book = ledger.ledger(WORKED, 3600, gpus=8, checkpoints_known=False)
    with pytest.raises(ledger.Disagreement, match="2400 more than the 21600 the platform saw"):
        ledger.refine(book, productive=20000.0, lost={"preempted": 4000.0})


def test_refining_keeps_the_allocation_exact_and_goodput_within_the_platforms():
    for seed in SEEDS:
        rng = random.Random(seed)
        events, end = timeline(rng, LIFE + TROUBLE)
        book = ledger.ledger(events, end, gpus=8, checkpoints_known=rng.random() < 0.5)
        figures = book.gpu_seconds()
        running = figures["goodput"] + figures["failure"] + figures["unrecorded"]
        # trainkit's floats, as its ledger pushes them (not whole numbers).
        productive = rng.random() * running / 2
        lost = {"preempted": rng.random() * running / 2}
        refined = ledger.refine(book, productive, lost)
        assert refined.allocation == book.allocation * book.gpus, seed
        assert refined.goodput == Fraction(productive) <= running
        assert min(refined.badput.values()) >= 0


def test_a_team_adds_its_jobs_in_gpu_seconds():
    # The worked job (8 GPUs, goodput 2100 s) and a 1-GPU job running 1000 s after 50 s of
    # provisioning: goodput 16800 + 1000, provisioning 960 + 50.
    one = ledger.ledger(WORKED, 3600, gpus=8, checkpoints_known=True)
    other = ledger.ledger([Event(0, ledger.ADMITTED), Event(50, ledger.RUNNING)], 1050, gpus=1)
    totals = ledger.team_totals([one, other])
    assert totals["goodput"] == 17800
    assert totals["provisioning"] == 1010
    assert totals["failure"] == 4800
