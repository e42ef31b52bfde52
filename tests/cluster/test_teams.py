"""Teams' jobs in the cluster in a box, as `python -m jobs submit --team` renders them: Pod
Security admits their pods at the level each team's namespace enforces (a team at `restricted`,
the default, and one at `baseline`: tests/helpers/pod_security_stacks.py's `every-onprem`, the
shipped onprem stack with such teams), and a bursting team's job runs on its MultiKueue worker,
admitted first by the manager's Kueue (its MultiKueue admission check), then copied to the
worker, whose Kueue admits it and whose nodes run it.

Each job's command is a `.py` script of the team's image, stood in for by one that records the
arguments it got (tests/helpers/box_stacks.team_image)."""

from __future__ import annotations

import copy
import functools

import pytest

from jobs.team import main as submit_main
from tests.conftest import ROOT, STACKS
from tests.controllers.pod_security import ENFORCE
from tests.helpers.box_cluster import Refused, outcome_text, write_plan
from tests.helpers.box_stacks import (
    ARGS_RECORDER,
    box,
    box_of,
    recorded_args,
    submitted,
    team_image,
)
from tests.helpers.pod_security_stacks import _root, config_of, plan_of, rendering_of
from tests.helpers.rendered_jobs import bursting_teams, workers_of

TEAMS_STACK = "every-onprem"
ARGS = ["--lr", "1e-5"]


def run_team_job(folder, argv, root=ROOT):
    """What `python -m jobs submit <argv> --render-only -- train.py --lr 1e-5` writes, run
    from `root` (this project, or one with other stack files)."""
    code, jobset = submitted(
        [*argv, "--render-only", "--", "train.py", *ARGS], folder / "jobs",
        main=functools.partial(submit_main, root=root),
    )  # fmt: skip
    assert code == 0 and jobset, f"python -m jobs submit {' '.join(argv)} exited {code}"
    return jobset


def stand_in_image(cluster, jobset, folder):
    team = folder / "team"
    team.mkdir(exist_ok=True)
    (team / "train.py").write_text(ARGS_RECORDER)
    team_image(cluster, jobset, team, on_bootstrap=False)


def ran_the_script(outcome) -> bool:
    seen = recorded_args(outcome.attempts[-1])
    return bool(seen) and all(s == {"script": "train.py", "args": ARGS} for s in seen)


@pytest.fixture(scope="module")
def teams_box(tmp_path_factory):
    folder = tmp_path_factory.mktemp("teams")
    out = write_plan(plan_of(TEAMS_STACK), rendering_of(TEAMS_STACK), folder / "out")
    with box_of(config_of(TEAMS_STACK), out, folder) as (cluster, _):
        yield cluster, folder


def levels(cluster) -> dict[str, str]:
    cfg = cluster.cfg
    return {
        t.name: cluster.get("Namespace", t.name)["metadata"]["labels"][ENFORCE]
        for t in cfg.scheduling.all_teams(cfg.namespaces.training)
    }


def test_the_teams_stack_holds_a_restricted_and_a_baseline_team(teams_box):
    cluster, _ = teams_box
    assert {"restricted", "baseline"} <= set(levels(cluster).values()), levels(cluster)


@pytest.mark.parametrize("level", ["restricted", "baseline"])
def test_a_teams_job_is_admitted_by_pod_security_at_its_namespaces_level_and_runs(teams_box, level):
    cluster, folder = teams_box
    team = next(t for t, at in sorted(levels(cluster).items()) if at == level)
    where = folder / level
    where.mkdir()
    jobset = run_team_job(where, ["--stack", TEAMS_STACK, "--team", team, "--nodes", "1"], _root())
    assert jobset["metadata"]["namespace"] == team
    stand_in_image(cluster, jobset, where)
    outcome = cluster.run_jobset(jobset)
    assert outcome.state == "Completed" and ran_the_script(outcome), outcome_text(outcome)
    # The box's Pod Security admission holds the level: a privileged container is refused.
    bad = copy.deepcopy(jobset)
    pod = bad["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["securityContext"]["privileged"] = True
    with pytest.raises(Refused, match=rf'violates PodSecurity "{level}:latest"'):
        cluster.pod_security(cluster.pods_of(bad)[0])


# ------------------------------------------------------------------ a bursting team's job

BURSTS = [(m, w, t) for m in STACKS for w in workers_of(m)[:1] for t in sorted(bursting_teams(m))]


@pytest.mark.parametrize(("manager", "worker", "team"), BURSTS)
def test_a_bursting_teams_job_is_admitted_on_the_manager_and_runs_on_the_worker(
    tmp_path, manager, worker, team
):
    with (
        box(manager, tmp_path / "manager") as (managing, _),
        box(worker, tmp_path / "worker") as (
            working,
            _,
        ),
    ):
        jobset = run_team_job(tmp_path, ["--stack", manager, "--team", team, "--nodes", "1"])
        # The manager's Kueue admits it through its MultiKueue admission check.
        managing.admit(jobset)
        # MultiKueue creates the worker's copy without spec.managedBy (Kueue v0.19.2
        # pkg/controller/jobs/jobset/jobset_multikueue_adapter.go, SyncJob), which the worker's
        # Kueue and JobSet controller then run as their own.
        copied = copy.deepcopy(jobset)
        copied["spec"].pop("managedBy")
        stand_in_image(working, copied, tmp_path)
        outcome = working.run_jobset(copied)
        assert outcome.state == "Completed" and ran_the_script(outcome), outcome_text(outcome)
        assert {node for node, _, _ in working.placed} <= {n.name for n in working.nodes}
