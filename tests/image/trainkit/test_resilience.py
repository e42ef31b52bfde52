"""A 2-"node" job (two torchrun agents through the platform's launcher, one gloo rank each, a
static rendezvous on 127.0.0.1) under a stand-in for the JobSet and Job controllers
(tests/helpers/jobset_harness.py), with the failure policy the program renders
(tests/helpers/rendered_policy.py):

- kill: one node's pod is SIGKILLed mid-run; the group restarts, resumes from the checkpoint,
  and the whole run's losses equal an uninterrupted run's, bit for bit;
- unfixable: a bad argument fails the JobSet at once, without a restart;
- hang: a rank waits inside a collective that never completes; the watchdog fires within its
  bound, writes the stacks and the flight record, the launcher exits HUNG, the group restarts;
- goodput: the ledger's figures from those runs against the time the processes' own timestamps
  show was lost, within the tolerances stated below.

Every run shares one module fixture; the assertions are about what the runs compute and the
order of what they record, never how fast a loaded machine runs them."""

from __future__ import annotations

import json
import os
import pickle
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from trainkit.goodput import LEDGER
from trainkit.watchdog import hang_folder

from contract.exits import BAD_ARGUMENTS, HUNG, PREEMPTED, UNFIXABLE
from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH
from tests.helpers.jobset_harness import (
    JobSetHarness,
    Outcome,
    ended_pod,
    job_failure,
    jobset_action,
)
from tests.helpers.loopback import free_port
from tests.helpers.pushgateway import Gateway
from tests.helpers.rendered_policy import rendered_policies

ROOT = Path(__file__).resolve().parents[3]
LAUNCHER = ROOT / "contract/launch.py"
SCRIPT = Path(__file__).with_name("resilient_train.py")
NODES = 2
STEPS, SAVE_EVERY = 10, 4
STEP_SLEEP = 0.3  # each step sleeps this long: a floor under every step's time, on any machine
KILL_AT = 7  # node 1 stops before step 7 (0-based) and is killed: steps 5-7 after step 4's save
HANG_AT = 6  # rank 1 waits in a receive at step 6: steps 5-6 after step 4's save
HANG_FLOOR_S = 8.0
# Rank 0 prints each step's end (`at`, Unix time) as the ledger records it; the ledger sums step
# durations on the monotonic clock. The two agree within this, per rank; the figures are also
# held to bounds the test measures itself (the steps' sleeps, the kill, the pods' lifetimes).
TOLERANCE_S = 0.5
# The watchdog polls at most once a second; a loaded machine may wake it later still.
WATCHDOG_SLACK_S = 1.0 + 20.0
# The pods' termination grace period (Kubernetes' default is 30 s): a rank stuck in a collective
# with a dead peer ignores SIGTERM until the SIGKILL after it, so it sets the restart's pace.
GRACE_S = 5.0


def harness(base: Path, name: str, script_args: list[str], **env: str) -> JobSetHarness:
    folder = base / name
    folder.mkdir()
    ports: dict[int, int] = {}

    def start(index: int, attempt: int, pod_env: dict, log: Path) -> subprocess.Popen:
        port = ports.setdefault(attempt, free_port())
        command = [
            sys.executable, str(LAUNCHER), f"--nnodes={NODES}", "--nproc-per-node=1",
            f"--node-rank={index}", "--master-addr=127.0.0.1", f"--master-port={port}",
            str(SCRIPT), f"--out={folder}", *script_args,
        ]  # fmt: skip
        environ = {
            **os.environ, "PYTHONPATH": IMAGE_PYTHONPATH, "OMP_NUM_THREADS": "1",
            "TRAINKIT_CHECKPOINT_DIR": str(folder / "checkpoints"),
            "TRAINKIT_METRICS_PORT": "0", "NODE_NAME": f"node-{index}",
            "TRAINING_JOB_NAME": name, "TRAINING_JOB_TEAM": "vision",
            "TRAINING_JOB_QUEUE": "vision-train", "TRAINING_JOB_POOL": "h100", **env, **pod_env,
        }  # fmt: skip
        environ.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        with open(log, "w") as out:
            return subprocess.Popen(command, env=environ, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip

    # The rules every job the program renders ships with (tests/helpers/rendered_policy.py).
    failure_policy, pod_failure_policy = rendered_policies()
    return JobSetHarness(
        start, NODES, failure_policy, pod_failure_policy, folder / "pods", grace_s=GRACE_S
    )


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + HANG_S
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def step_lines(text: str) -> dict[int, dict]:
    """Rank 0's JSON figures by step (1-based: the steps finished)."""
    return {
        figures["step"]: figures
        for line in text.splitlines()
        if line.startswith('{"job"') and "step" in (figures := json.loads(line))
    }


def concurrently(**runs) -> dict:
    """Each named zero-argument callable in a thread of its own; their results by name."""
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {name: pool.submit(run) for name, run in runs.items()}
        return {name: future.result(timeout=HANG_S) for name, future in futures.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """Two at a time (the suite's time matters): the reference with the unfixable run, then
    the kill run with the hang run; each run's own processes and folder."""
    base = tmp_path_factory.mktemp("resilience")
    common = [f"--steps={STEPS}", f"--save-every={SAVE_EVERY}", f"--step-sleep={STEP_SLEEP}"]
    out: dict = {"base": base}
    out |= concurrently(
        reference=harness(base, "reference", common).run,
        unfixable=harness(base, "unfixable", ["--steps=ten", "--save-every=4"]).run,
    )

    def kill(attempt, pods):
        if attempt == 0:
            wait_for(base / "kill" / "fault-hold-rank-1")
            out["killed_at"] = time.time()
            pods[1].kill()

    kill_args = [*common, "--fault=hold", f"--fault-step={KILL_AT}"]
    hang_args = [*common, "--fault=hang", f"--fault-step={HANG_AT}", f"--hang-floor={HANG_FLOOR_S}"]
    with Gateway() as gateway:
        killing = harness(base, "kill", kill_args, TRAINKIT_PUSHGATEWAY_URL=gateway.url)
        hanging = harness(base, "hang", hang_args, TRAINKIT_HANG_CEILING_S="300")
        out |= concurrently(kill=lambda: killing.run(kill), hang=hanging.run)
        out["pushes"] = list(gateway.received)
    return out


def losses(base: Path, name: str) -> dict:
    return json.loads((base / name / "losses.json").read_text())


def ledger(base: Path, name: str) -> dict:
    return json.loads((base / name / "checkpoints" / LEDGER).read_text())


def logs(outcome: Outcome, attempt: int, pod: int = 0) -> str:
    return outcome.attempts[attempt][pod].output()


# --- kill -------------------------------------------------------------------------------------


def test_a_killed_node_restarts_the_group_which_resumes_from_the_checkpoint(runs):
    kill = runs["kill"]
    assert runs["reference"].state == "Completed" and runs["reference"].restarts == 0
    assert kill.state == "Completed", [p.output()[-3000:] for p in kill.attempts[-1]]
    assert kill.restarts == 1 and kill.restarts_counted == 1
    # Neither pod's exit is unfixable, so the Job failed on its backoff limit: RestartJobSet.
    ((reason, _, action),) = kill.job_failures
    assert (reason, action) == ("BackoffLimitExceeded", "RestartJobSet")
    # The killed pod failed first (SIGKILL, as the kubelet reports it); the survivor, waiting in
    # gloo's all-reduce for its dead peer, went when the Job's pods were deleted.
    first = min(kill.attempts[0], key=lambda pod: pod.ended_at)
    assert (first.index, first.exit_code) == (1, 128 + 9)
    assert kill.attempts[0][0].exit_code not in UNFIXABLE
    # BlockingRecreate: the new pods started after every old one ended.
    assert min(p.started_at for p in kill.attempts[1]) >= max(p.ended_at for p in kill.attempts[0])
    assert "JOBSET_RESTART_ATTEMPT=1, attempt 1 of the job, resuming from step 4" in logs(kill, 1)
    assert "JOBSET_RESTART_ATTEMPT=0, attempt 0 of the job, resuming from step 0" in logs(kill, 0)


def test_the_restarted_runs_losses_equal_an_uninterrupted_runs_bitwise(runs):
    base = runs["base"]
    whole = losses(base, "reference")
    assert sorted(int(step) for step in whole) == list(range(STEPS))
    assert losses(base, "kill") == whole
    # The steps the killed attempt did after its checkpoint, lost and redone, matched too.
    lost = step_lines(logs(runs["kill"], 0))
    assert max(lost) == KILL_AT
    for step, figures in lost.items():
        assert figures["loss"] == whole[str(step - 1)]


# --- unfixable ---------------------------------------------------------------------------------


def test_a_bad_argument_fails_the_jobset_at_once(runs):
    unfixable = runs["unfixable"]
    assert (unfixable.state, unfixable.reason, unfixable.restarts) == ("Failed", "FailJobSet", 0)
    assert len(unfixable.attempts) == 1
    ((reason, message, action),) = unfixable.job_failures
    assert (reason, action) == ("PodFailurePolicy", "FailJobSet")
    assert message.endswith(
        f"failed with exit code {BAD_ARGUMENTS} matching FailJob rule at index 0"
    )
    # The first pod to fail exited 2; the other, still waiting for its peer at the rendezvous,
    # went when the Job's pods were deleted.
    first = min(unfixable.attempts[0], key=lambda pod: pod.ended_at)
    assert first.exit_code == BAD_ARGUMENTS
    assert "invalid int value: 'ten'" in logs(unfixable, 0)


# --- hang ---------------------------------------------------------------------------------------


def hang_records(runs) -> dict[int, dict]:
    folder = hang_folder(runs["base"] / "hang" / "checkpoints", 0)
    return {
        int(path.stem.removeprefix("rank-")): json.loads(path.read_text())
        for path in folder.glob("rank-*.json")
    }


def test_a_hung_collective_fires_the_watchdog_within_its_bound(runs):
    records = hang_records(runs)
    assert records, "no rank's watchdog fired"
    for rank, record in records.items():
        assert record["step"] == HANG_AT  # the counter stopped at the hung step's boundary
        recent = record["recent_step_s"]
        # The bound: factor × the median of the last few step times, never under the floor,
        # never over the ceiling (TRAINKIT_HANG_CEILING_S=300 here).
        expected = min(300.0, max(HANG_FLOOR_S, 10.0 * statistics.median(recent)))
        assert record["bound_s"] == pytest.approx(expected)
        assert min(recent) >= STEP_SLEEP  # every step slept: the steps were timed
        stalled = record["fired_at"] - record["last_step_at"]
        assert record["bound_s"] <= stalled <= record["bound_s"] + WATCHDOG_SLACK_S, rank


def test_the_watchdog_writes_every_threads_stack_and_the_flight_record(runs):
    folder = hang_folder(runs["base"] / "hang" / "checkpoints", 0)
    for rank, record in hang_records(runs).items():
        stacks = (folder / f"rank-{rank}.stacks.txt").read_text()
        # faulthandler's dump: every thread, the main one inside the hung call.
        assert "Current thread" in stacks and stacks.count("Thread 0x") >= 2
        assert "resilient_train.py" in stacks
        hung_in = "recv" if rank == 1 else "backward"
        assert hung_in in stacks
        # On gloo, torch 2.13's flight recorder (_dump_fr_trace) holds gloo's collectives too.
        assert record["flight_record"] == f"rank-{rank}.flight-record.pickle (_dump_fr_trace)"
        trace = pickle.loads((folder / f"rank-{rank}.flight-record.pickle").read_bytes())
        names = [entry["profiling_name"] for entry in trace["entries"]]
        assert names and all(name.startswith("gloo:") for name in names)
        assert trace["entries"][-1]["state"] != "completed" or not trace["entries"][-1]["retired"]


def test_the_launcher_exits_hung_and_the_harness_restarts_the_group(runs):
    hang = runs["hang"]
    assert hang.state == "Completed" and hang.restarts == 1
    # The pod that failed the Job: its launcher exited HUNG (one rank per node, so the rank's
    # pod is its node's). Both ranks stall at once; the other one's watchdog may fire first, or
    # the Job's failure deletes its pod (SIGTERM) before it does: HUNG or PREEMPTED, and its
    # code decides nothing, as on a cluster, where the first failed pod fails the Job.
    first, *others = sorted(hang.attempts[0], key=lambda pod: pod.ended_at)
    assert first.index in hang_records(runs) and first.exit_code == HUNG
    assert {pod.exit_code for pod in others} <= {HUNG, PREEMPTED}
    assert hang.job_failures[0][0] == "BackoffLimitExceeded"
    assert hang.job_failures[0][2] == "RestartJobSet"
    assert losses(runs["base"], "hang") == losses(runs["base"], "reference")


# --- goodput ------------------------------------------------------------------------------------


def test_the_kill_runs_goodput_against_the_time_actually_lost(runs):
    doc = ledger(runs["base"], "kill")
    figures, attempts = doc["figures"], doc["attempts"]
    before, after = step_lines(logs(runs["kill"], 0)), step_lines(logs(runs["kill"], 1))
    resumed = attempts[1]["resumed_from"]
    assert resumed == SAVE_EVERY
    assert figures["restarts"] == {"preempted": 0, "hung": 0, "rank_failed": 1}
    assert figures["lost_gpu_seconds"]["preempted"] == figures["lost_gpu_seconds"]["hung"] == 0
    lost = figures["lost_gpu_seconds"]["rank_failed"]
    # Work lost: steps resumed+1 … KILL_AT, on both ranks, as rank 0's timestamps show it.
    shown = NODES * (before[KILL_AT]["at"] - before[resumed]["at"])
    assert lost == pytest.approx(shown, abs=NODES * TOLERANCE_S)
    assert lost >= NODES * (KILL_AT - resumed) * STEP_SLEEP
    # Time to restart: the killed attempt's last step to the next attempt's first.
    shown = after[resumed + 1]["at"] - before[KILL_AT]["at"]
    assert figures["restart_seconds"] == pytest.approx(shown, abs=TOLERANCE_S)
    assert figures["restart_seconds"] >= after[resumed + 1]["at"] - runs["killed_at"] - TOLERANCE_S
    # Productive: every step of the whole run, once each, slept at least STEP_SLEEP.
    assert figures["productive_gpu_seconds"] >= NODES * STEPS * STEP_SLEEP
    # Allocated: inside the pods' lifetimes, and holds every step of every attempt.
    pods_s = sum(max(p.ended_at for p in pods) - min(p.started_at for p in pods)
                 for pods in runs["kill"].attempts)  # fmt: skip
    assert figures["allocated_gpu_seconds"] <= NODES * pods_s
    assert figures["productive_gpu_seconds"] + lost <= figures["allocated_gpu_seconds"]
    assert 0 < figures["goodput"] < 1
    assert figures["last_checkpoint_step"] == STEPS


def test_the_hang_runs_goodput_names_the_cause(runs):
    figures = ledger(runs["base"], "hang")["figures"]
    assert figures["restarts"] == {"preempted": 0, "hung": 1, "rank_failed": 0}
    before = step_lines(logs(runs["hang"], 0))
    assert max(before) == HANG_AT
    lost = figures["lost_gpu_seconds"]["hung"]
    shown = NODES * (before[HANG_AT]["at"] - before[SAVE_EVERY]["at"])
    assert lost == pytest.approx(shown, abs=NODES * TOLERANCE_S)
    # The hang's own stall (at least the watchdog's floor, on each rank) is not work: it is in
    # allocated, never in productive or lost.
    assert figures["allocated_gpu_seconds"] >= figures["productive_gpu_seconds"] + lost + (
        NODES * HANG_FLOOR_S
    )


def test_rank_0_pushes_the_ledgers_figures_with_the_jobs_identity(runs):
    pushes = runs["pushes"]
    assert pushes, "no goodput push reached the Pushgateway"
    method, path, content_type, body = pushes[-1]
    # Pushgateway README, "URL": an empty label value is `<name>@base64/=`.
    assert (method, content_type) == ("PUT", "text/plain; version=0.0.4; charset=utf-8")
    assert path == (
        "/metrics/job/training-goodput/namespace@base64/=/job_name/kill/team/vision"
        "/queue/vision-train/pool/h100"
    )
    figures = ledger(runs["base"], "kill")["figures"]
    samples = dict(line.rsplit(" ", 1) for line in body.splitlines() if not line.startswith("#"))
    assert float(samples["gpu_platform_job_allocated_gpu_seconds"]) == pytest.approx(
        figures["allocated_gpu_seconds"]
    )
    assert float(samples['gpu_platform_job_restarts{cause="rank_failed"}']) == 1
    assert float(samples['gpu_platform_job_lost_gpu_seconds{cause="rank_failed"}']) == (
        pytest.approx(figures["lost_gpu_seconds"]["rank_failed"])
    )
    assert float(samples["gpu_platform_job_last_checkpoint_step"]) == STEPS
    # What the Young–Daly record reads: the two nodes (NODE_NAME node-0, node-1), the newest
    # save's wait (a real wait, however short) and the interval the ledger saw.
    assert float(samples["gpu_platform_job_nodes"]) == NODES
    assert (
        0
        < float(samples["gpu_platform_job_checkpoint_seconds"])
        == pytest.approx(figures["checkpoint_seconds"])
    )
    assert float(samples["gpu_platform_job_checkpoint_interval_seconds"]) == pytest.approx(
        figures["checkpoint_interval_seconds"]
    )


# --- the controllers' rules, one failing and one passing case each ------------------------------


@pytest.mark.parametrize(
    ("exit_code", "disrupted", "reason", "message_end", "action"),
    [
        (2, False, "PodFailurePolicy", "exit code 2 matching FailJob rule at index 0",
         "FailJobSet"),
        (78, False, "PodFailurePolicy", "exit code 78 matching FailJob rule at index 0",
         "FailJobSet"),
        (143, False, "PodFailurePolicy", "exit code 143 matching FailJob rule at index 2",
         "RestartJobSetAndIgnoreMaxRestarts"),
        (1, False, "BackoffLimitExceeded", "backoff limit", "RestartJobSet"),
        (124, False, "BackoffLimitExceeded", "backoff limit", "RestartJobSet"),
        (137, False, "BackoffLimitExceeded", "backoff limit", "RestartJobSet"),
    ],
)  # fmt: skip
def test_the_rendered_policy_sends_each_exit_where_docs_training_says(
    exit_code, disrupted, reason, message_end, action
):
    failure_policy, pod_failure_policy = rendered_policies()
    failure = job_failure([ended_pod(exit_code, disrupted)], pod_failure_policy)
    assert failure[0] == reason and failure[1].endswith(message_end)
    assert jobset_action(failure_policy, *failure) == action


def test_the_pod_failure_rules_match_only_what_they_name():
    """kubernetes pkg/controller/job/pod_failure_policy.go: a rule for another container, a
    NotIn that holds the code, an Ignore: each changes the verdict."""
    other = {"rules": [{"action": "FailJob", "onExitCodes": {
        "containerName": "sidecar", "operator": "In", "values": [2]}}]}  # fmt: skip
    assert job_failure([ended_pod(2)], other)[0] == "BackoffLimitExceeded"
    not_in = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}}]}
    assert job_failure([ended_pod(1)], not_in)[0] == "BackoffLimitExceeded"
    assert job_failure([ended_pod(3)], not_in)[0] == "PodFailurePolicy"
    ignore = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    assert job_failure([ended_pod(143, disrupted=True)], ignore) is None
    assert job_failure([ended_pod(143)], ignore)[0] == "BackoffLimitExceeded"


def test_the_jobset_rules_need_both_reason_and_message_and_default_to_restart():
    """jobset pkg/controllers/failure_policy.go: first matching rule wins; none: RestartJobSet."""
    unfixable = (
        "Container trainer for pod d/p failed with exit code 2 matching FailJob rule at index 0"
    )
    failure_policy, _ = rendered_policies()
    assert jobset_action(failure_policy, "PodFailurePolicy", unfixable) == "FailJobSet"
    assert jobset_action(failure_policy, "BackoffLimitExceeded", unfixable) == "RestartJobSet"
    # targetReplicatedJobs: a rule for another replicated job does not apply to this one's.
    assert jobset_action(failure_policy, "PodFailurePolicy", unfixable, "sidecar") == (
        "RestartJobSet"
    )
    assert jobset_action({"rules": []}, "PodFailurePolicy", unfixable) == "RestartJobSet"
