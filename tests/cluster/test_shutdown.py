"""An evicted job's checkpoint gets the grace period the job renders, not torch's 30 s.

The kubelet sends SIGTERM to the pod's container on eviction and SIGKILL
terminationGracePeriodSeconds later (`python -m jobs submit --grace-period-seconds`, 300 by
default); between them the launcher's agent passes SIGTERM to its workers and waits its own
shutdown timeout before it SIGKILLs them: 30 s unless `--shutdown-timeout` or
TORCH_ELASTIC_SHUTDOWN_TIMEOUT says otherwise (torch 2.13, torch/distributed/launcher/api.py
LaunchConfig, torch/distributed/elastic/agent/server/api.py `_shutdown`). A checkpoint of more
than 30 s within a grace period of 300 must finish.

The job is a team's, rendered by `python -m jobs submit` and run by the cluster in a box; its
script, a stand-in of the team's image, saves for SAVE_S seconds on SIGTERM and writes a mark
when done. The one wait in the test is that save: what it asserts is whether each rank's save
finished, not how long anything took."""

from __future__ import annotations

import signal
import time

from contract.exits import PREEMPTED
from tests.conftest import STACKS, stack_config
from tests.helpers.box_cluster import outcome_text
from tests.helpers.box_stacks import box, submitted, team_image
from tests.helpers.hang import HANG_S

# Longer than torch's default shutdown timeout (30 s), far within the rendered grace period.
SAVE_S = 35
GRACE_S = 300
SLOW_SAVE = f"""import os, pathlib, signal, sys, time
out = pathlib.Path(sys.argv[1])
rank = os.environ["RANK"]
if (out / f"saved-{{rank}}").exists():  # a pod started again (the Job's or the JobSet's): resumed
    sys.exit(0)
def save(*_):
    time.sleep({SAVE_S})  # a checkpoint that takes longer than 30 s
    (out / f"saved-{{rank}}").write_text("ok")
    sys.exit(143)
signal.signal(signal.SIGTERM, save)
(out / f"ready-{{rank}}").write_text("")
while True:
    time.sleep(1)
"""
STACK = STACKS[0]


def test_an_evicted_jobs_checkpoint_finishes_within_the_rendered_grace_period(tmp_path):
    pool = stack_config(STACK).gpu_pools[0].name
    with box(STACK, tmp_path) as (cluster, _):
        code, jobset = submitted(
            ["submit", "--stack", STACK, "--pool", pool, "--nodes", "1", "--name", "slow-save",
             "--render-only", "--grace-period-seconds", str(GRACE_S), "--",
             "slow_save.py", "/mnt/shared-data/slow-save"],
            tmp_path / "jobs",
        )  # fmt: skip
        assert code == 0 and jobset
        pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        assert pod["terminationGracePeriodSeconds"] == GRACE_S
        team = tmp_path / "team"
        team.mkdir()
        (team / "slow_save.py").write_text(SLOW_SAVE)
        team_image(cluster, jobset, team, on_bootstrap=False)
        out = cluster.claim(jobset["metadata"]["namespace"], "shared-data") / "slow-save"
        out.mkdir(parents=True)

        evicted = []

        def evict(attempt, pods):
            if attempt == 0:
                deadline = time.monotonic() + HANG_S
                while len(list(out.glob("ready-*"))) < 2:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
                pods[0].disrupted = True
                pods[0].process.send_signal(signal.SIGTERM)
                # The Job replaces a disrupted pod in place (its rule is Ignore): keep this one.
                evicted.append(pods[0])

        outcome = cluster.run_jobset(jobset, evict)
        (evicted,) = evicted
        saved = sorted(p.name for p in out.glob("saved-*"))
        assert saved == ["saved-0", "saved-1"], (
            f"Pod {evicted.name} (terminationGracePeriodSeconds {GRACE_S}): SIGTERM, and its "
            f"ranks' {SAVE_S} s checkpoints finished: {saved}; the launcher exited "
            f"{evicted.exit_code}:\n" + outcome_text(outcome)
        )
        assert evicted.exit_code == PREEMPTED
