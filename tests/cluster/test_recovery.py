"""A team's job as `python -m jobs submit` renders it (a `.py` script under the platform's
launcher, trainkit's Session, the stack's restart policy), run by the cluster in a box on a
pool of two nodes, through the faults docs/training.md ("What restarts, what fails at once")
says it survives: an eviction, a lost node, a hang. Each run's assertions are on what the
processes did: the steps they trained, the step they resumed from, the losses bit for bit
against an uninterrupted run, the exit codes and what the controllers made of them.

The script is tests/image/trainkit/resilient_train.py, the team's image stood in for by the
self-test's (trainkit on its path) with the script in its working folder
(tests/helpers/box_stacks.team_image); its checkpoints and losses land on the stack's
shared-data claim, where the rendered TRAINKIT_CHECKPOINT_DIR and `--out` put them."""

from __future__ import annotations

import itertools
import json
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from contract.exits import HUNG, PREEMPTED
from tests.conftest import STACKS, stack_config
from tests.helpers.box_cluster import outcome_text
from tests.helpers.box_stacks import box, submitted, team_image
from tests.helpers.hang import HANG_S
from tests.helpers.jobset_harness import job_failure, jobset_action

SCRIPT = Path(__file__).resolve().parents[1] / "image" / "trainkit" / "resilient_train.py"
NODES = 2
STEPS, SAVE_EVERY = 10, 4
STEP_SLEEP = 0.3
KILL_AT, HANG_AT, EVICT_AFTER = 7, 6, 5
HANG_FLOOR_S = 8.0
# A pool that holds the job's two nodes, on the first stack that has one.
STACK = next(s for s in STACKS if any(p.max_nodes >= NODES for p in stack_config(s).gpu_pools))


def render(folder: Path, name: str, *script_args: str, grace: int = 30) -> dict:
    pool = next(p.name for p in stack_config(STACK).gpu_pools if p.max_nodes >= NODES)
    code, jobset = submitted(
        ["submit", "--stack", STACK, "--pool", pool, "--nodes", str(NODES), "--name", name,
         "--render-only", "--grace-period-seconds", str(grace), "--",
         "resilient_train.py", f"--steps={STEPS}", f"--save-every={SAVE_EVERY}",
         f"--step-sleep={STEP_SLEEP}", f"--out=/mnt/shared-data/{name}", *script_args],
        folder / "jobs" / name,
    )  # fmt: skip
    assert code == 0 and jobset, f"python -m jobs submit exited {code}"
    return jobset


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + HANG_S
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def run(folder: Path, name: str, *script_args: str, fault=None, grace: int = 30):
    """(the JobSet's outcome, the shared-data folder, the JobSet) of one job in a box of its
    own."""
    with box(STACK, folder / name) as (cluster, _):
        team = folder / name / "team"
        team.mkdir()
        shutil.copy(SCRIPT, team / SCRIPT.name)
        jobset = render(folder, name, *script_args, grace=grace)
        team_image(cluster, jobset, team, on_bootstrap=True)
        shared = cluster.claim(jobset["metadata"]["namespace"], "shared-data")
        # The run's folder on the claim, which the script writes into (as a team's output).
        (shared / name).mkdir(parents=True)
        outcome = cluster.run_jobset(jobset, None if fault is None else fault(shared / name))
        return outcome, shared, jobset


def evict(_out: Path):
    def fault(attempt, pods):
        if attempt == 0:
            # Mid-run, after the first checkpoint: the kubelet evicts pod 0 (DisruptionTarget,
            # SIGTERM to its container).
            deadline = time.monotonic() + HANG_S
            while f'"step": {EVICT_AFTER}' not in pods[0].output():
                assert time.monotonic() < deadline
                time.sleep(0.05)
            pods[0].disrupted = True
            pods[0].process.send_signal(signal.SIGTERM)

    return fault


def lose_node(out: Path):
    def fault(attempt, pods):
        if attempt == 0:
            wait_for(out / "fault-hold-rank-1")
            pods[1].kill()

    return fault


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("recovery")
    jobs = {
        "reference": lambda: run(base, "reference"),
        "evicted": lambda: run(base, "evicted", fault=evict, grace=300),
        "lost": lambda: run(base, "lost", "--fault=hold", f"--fault-step={KILL_AT}",
                            fault=lose_node),
        "hung": lambda: run(base, "hung", "--fault=hang", f"--fault-step={HANG_AT}",
                            f"--hang-floor={HANG_FLOOR_S}"),
    }  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: f.result(timeout=HANG_S) for name, f in futures.items()}


def losses(runs, name: str) -> dict:
    _, shared, _ = runs[name]
    return json.loads((shared / name / "losses.json").read_text())


def resumed_from(outcome, attempt: int) -> str:
    return outcome.attempts[attempt][0].output()


def test_the_reference_job_trains_every_step_under_the_rendered_launcher(runs):
    outcome, _, _ = runs["reference"]
    assert (outcome.state, outcome.restarts) == ("Completed", 0), outcome_text(outcome)
    assert sorted(int(s) for s in losses(runs, "reference")) == list(range(STEPS))


def test_an_evicted_pod_checkpoints_and_the_group_resumes_from_it_bitwise(runs):
    outcome, _, _ = runs["evicted"]
    assert (outcome.state, outcome.restarts) == ("Completed", 1), outcome_text(outcome)
    # The evicted pod's launcher stopped its rank at a step boundary with a checkpoint.
    assert outcome.attempts[0][0].exit_code == PREEMPTED, outcome_text(outcome)
    assert "resuming from step 0" not in resumed_from(outcome, 1), outcome_text(outcome)
    assert losses(runs, "evicted") == losses(runs, "reference")


def test_an_eviction_restarts_without_counting_whichever_failed_pod_the_job_sees_first(runs):
    """docs/training.md: a disrupted pod restarts the group without counting toward
    maxRestarts. The Job controller fails the Job on the first failed pod it sees
    (job_controller.go syncJob): every order of the evicted attempt's pods must say so."""
    outcome, _, jobset = runs["evicted"]
    (rj,) = jobset["spec"]["replicatedJobs"]
    failed = [p for p in outcome.attempts[0] if p.exit_code]
    assert failed, outcome_text(outcome)
    actions = {
        jobset_action(jobset["spec"]["failurePolicy"], *job_failure(
            list(order), rj["template"]["spec"]["podFailurePolicy"], namespace="training"))
        for order in itertools.permutations(failed)
    }  # fmt: skip
    assert actions == {"RestartJobSetAndIgnoreMaxRestarts"}, (
        f"JobSet failurePolicy actions over the orders the Job controller may see "
        f"{[(p.name, p.exit_code, 'DisruptionTarget' if p.disrupted else '-') for p in failed]}: "
        f"{sorted(actions)}"
    )


def test_a_lost_node_restarts_the_group_counted_and_it_resumes_bitwise(runs):
    outcome, _, _ = runs["lost"]
    assert (outcome.state, outcome.restarts, outcome.restarts_counted) == ("Completed", 1, 1), (
        outcome_text(outcome)
    )
    assert outcome.attempts[0][1].exit_code == 128 + 9
    assert f"resuming from step {SAVE_EVERY}" in resumed_from(outcome, 1), outcome_text(outcome)
    assert losses(runs, "lost") == losses(runs, "reference")


def test_a_hang_fires_the_watchdog_and_the_group_restarts_and_resumes_bitwise(runs):
    outcome, _, _ = runs["hung"]
    assert (outcome.state, outcome.restarts) == ("Completed", 1), outcome_text(outcome)
    assert HUNG in {p.exit_code for p in outcome.attempts[0]}, outcome_text(outcome)
    assert f"resuming from step {SAVE_EVERY}" in resumed_from(outcome, 1), outcome_text(outcome)
    assert losses(runs, "hung") == losses(runs, "reference")
