"""The goodput ledger's arithmetic on hand-made attempts (the figures the docstring of
trainkit.goodput defines, worked out by hand here), how it reads the way an attempt ended, the
Pushgateway path of its push, the straggler gauge every node's rank 0 serves, and the watchdog's
settings. The real runs' figures are checked in test_resilience.py."""

from __future__ import annotations

import json
import urllib.request

import pytest
from trainkit import watchdog
from trainkit.goodput import LEDGER, Ledger, exposition, figures
from trainkit.metrics import MetricsServer
from trainkit.pushgateway import group_path


def attempt(**fields) -> dict:
    return {
        "index": 0, "restart_attempt": 0, "world_size": 2, "resumed_from": 0,
        "first_step_at": None, "last_step_at": None, "ended_at": None, "end": None, **fields,
    }  # fmt: skip


# Attempt 0: started at 100, stepped 110-150 (35 s of steps), saved step 4 at 20 s of steps,
# then died without a word. Attempt 1: started at 170, resumed from step 4, stepped 180-200
# (18 s of steps) to step 10, saved it, finished at 205.
KILLED = attempt(started_at=100.0, first_step_at=110.0, last_step_at=150.0, step_seconds=35.0,
                 saves={"0": 0.0, "4": 20.0}, completed_step=4)  # fmt: skip
FINISHED = attempt(index=1, restart_attempt=1, started_at=170.0, resumed_from=4,
                   first_step_at=180.0, last_step_at=200.0, ended_at=205.0, end="completed",
                   step_seconds=18.0, saves={"4": 0.0, "10": 18.0}, completed_step=10)  # fmt: skip


def test_the_figures_of_a_killed_then_finished_job():
    got = figures([KILLED, FINISHED])
    assert got["allocated_gpu_seconds"] == 2 * (150 - 100) + 2 * (205 - 170)  # 170
    assert got["productive_gpu_seconds"] == 2 * 20 + 2 * 18  # 76
    assert got["lost_gpu_seconds"] == {"preempted": 0.0, "hung": 0.0, "rank_failed": 30.0}
    assert got["restarts"] == {"preempted": 0, "hung": 0, "rank_failed": 1}
    assert got["restart_seconds"] == 180 - 150
    assert got["last_checkpoint_step"] == 10
    assert got["goodput"] == pytest.approx(76 / 170)


def test_an_attempt_that_saved_nothing_loses_all_its_steps():
    preempted = {**KILLED, "end": "preempted", "saves": {"0": 0.0}, "completed_step": 0}
    resumed = {**FINISHED, "resumed_from": 0, "saves": {"0": 0.0, "10": 18.0}}
    got = figures([preempted, resumed])
    assert got["lost_gpu_seconds"]["preempted"] == 2 * 35
    assert got["productive_gpu_seconds"] == 2 * 18


def test_what_a_checkpoint_costs_and_the_interval_the_job_uses():
    """The newest save's wait, and the step time between an attempt's newest two saves:
    FINISHED saved step 10 at 18 s of steps after resuming at 0 s, so its interval is 18 s.
    A ledger written before these were recorded (KILLED, FINISHED) has no wait and no nodes,
    and the push leaves those series out rather than claim 0."""
    got = figures([KILLED, FINISHED])
    assert got["checkpoint_interval_seconds"] == 18.0
    assert got["checkpoint_seconds"] is None and got["nodes"] is None
    waited = {**FINISHED, "save_seconds": 4.5, "nodes": 3}
    got = figures([{**KILLED, "save_seconds": 9.0}, waited])
    assert (got["checkpoint_seconds"], got["nodes"]) == (4.5, 3)
    text = exposition(got)
    assert "gpu_platform_job_checkpoint_seconds 4.5\n" in text
    assert "gpu_platform_job_checkpoint_interval_seconds 18.0\n" in text
    assert "gpu_platform_job_nodes 3.0\n" in text
    assert "\ngpu_platform_job_checkpoint_seconds " not in exposition(figures([KILLED]))


def test_a_save_records_its_wait_and_the_attempt_its_nodes(tmp_path):
    ledger = Ledger(tmp_path, restart_attempt=0, world_size=16, resumed_from=0, nodes=2,
                    identity={}, environ={})  # fmt: skip
    ledger.saving(100, 250.0)
    ledger.saved(6.25)
    written = json.loads((tmp_path / LEDGER).read_text())["attempts"][0]
    assert written["nodes"] == 2
    got = ledger.figures()
    assert (got["checkpoint_seconds"], got["checkpoint_interval_seconds"], got["nodes"]) == (
        6.25,
        250.0,
        2,
    )


def test_the_next_attempt_reads_a_watchdog_dump_as_a_hang(tmp_path):
    (tmp_path / LEDGER).write_text(json.dumps({"attempts": [KILLED]}))
    (tmp_path / "hangs" / "attempt-0").mkdir(parents=True)
    (tmp_path / "hangs" / "attempt-0" / "rank-1.json").write_text('{"fired_at": 161.5}')
    (tmp_path / "hangs" / "attempt-0" / "rank-0.json").write_text('{"fired_at": 160.0}')
    ledger = Ledger(tmp_path, restart_attempt=1, world_size=2, resumed_from=4, nodes=1,
                    identity={}, environ={})  # fmt: skip
    assert ledger.index == 1
    written = json.loads((tmp_path / LEDGER).read_text())
    assert written["attempts"][0]["end"] == "hung"
    # The hang's stall was held: the attempt ended when the first watchdog fired.
    assert written["attempts"][0]["ended_at"] == 160.0
    assert written["figures"]["restarts"]["hung"] == 1


def test_an_attempt_that_never_said_how_it_ended_is_a_rank_failure(tmp_path):
    (tmp_path / LEDGER).write_text(json.dumps({"attempts": [KILLED]}))
    Ledger(tmp_path, restart_attempt=1, world_size=2, resumed_from=4, nodes=1, identity={},
           environ={})  # fmt: skip
    written = json.loads((tmp_path / LEDGER).read_text())
    assert written["figures"]["restarts"] == {"preempted": 0, "hung": 0, "rank_failed": 1}


def test_the_push_groups_by_identity_and_encodes_empty_values():
    """Pushgateway README, "URL": `<label>@base64/<base64url value>`, `=` for an empty one."""
    path = group_path("training-goodput", {"namespace": "", "job_name": "a/b", "team": "vision"})
    assert (
        path == "/metrics/job/training-goodput/namespace@base64/=/job_name@base64/YS9i/team/vision"
    )


def test_each_nodes_rank_0_serves_every_ranks_step_time():
    server = MetricsServer("my-job", 0)
    server.update(step=3)
    server.update_ranks({(0, "node-a"): 0.5, (1, "node-b"): 2.25})
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    assert "# TYPE gpu_platform_training_rank_step_seconds gauge" in text
    assert (
        'gpu_platform_training_rank_step_seconds{recipe="my-job",rank="1",node="node-b"} 2.25'
        in text
    )


def test_the_watchdogs_settings_come_from_the_jobs_environment():
    assert watchdog.settings({}) == (10.0, 1800.0)
    assert watchdog.settings({"TRAINKIT_HANG_FACTOR": "4", "TRAINKIT_HANG_CEILING_S": "90"}) == (
        4.0, 90.0,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"TRAINKIT_HANG_FACTOR='ten': expected a positive"):
        watchdog.settings({"TRAINKIT_HANG_FACTOR": "ten"})
    with pytest.raises(ValueError, match=r"TRAINKIT_HANG_CEILING_S='0'"):
        watchdog.settings({"TRAINKIT_HANG_CEILING_S": "0"})
