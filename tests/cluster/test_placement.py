"""Where the cluster in a box places a job's pods, from what the plan and `python -m jobs`
write: a restarted group after a preflight FAIL on one node.

The job is a team's, as `python -m jobs submit` renders it on a stack that runs the preflight
(its `selftest.image` set: every pod of a multi-node job runs the self-test's `--checks
preflight` as its init container, components/selftest/preflight.py). One node has lost a GPU
(tests/helpers/box_nodes.py, `Node.lost_gpu`): its preflight FAILs and names it, the pod fails,
the JobSet restarts the group (docs/training.md, "How a bad node is left out"), and the
restarted group must not land on that node again: the preflight's verdict is its container's
termination message, on which the platform's quarantine watcher (the rendered Deployment, run by
the box) taints the node through the API server (tests/helpers/kube_api.py), and the scheduler
reads the node as the API holds it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import STACKS, stack_config
from tests.helpers.box_cluster import outcome_text
from tests.helpers.box_stacks import box, submitted, team_image

SCRIPT = Path(__file__).resolve().parents[1] / "image" / "trainkit" / "resilient_train.py"
NODES = 2


def preflight_stack() -> tuple[str, str]:
    """The first stack that runs the preflight and has a pool of more nodes than the job."""
    for stack in STACKS:
        cfg = stack_config(stack)
        if cfg.selftest.image:
            for pool in cfg.gpu_pools:
                if pool.max_nodes > NODES:
                    return stack, pool.name
    raise AssertionError("no stack runs the preflight on a pool of more than two nodes")


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):
    stack, pool = preflight_stack()
    folder = tmp_path_factory.mktemp("preflight")
    with box(stack, folder) as (cluster, _), cluster.api_server(folder / "api"):
        code, jobset = submitted(
            ["submit", "--stack", stack, "--pool", pool, "--nodes", str(NODES), "--name",
             "preflight", "--render-only", "--grace-period-seconds", "30", "--",
             "resilient_train.py", "--steps=2", "--save-every=1",
             "--out=/mnt/shared-data/preflight"],
            folder / "jobs",
        )  # fmt: skip
        assert code == 0 and jobset
        team = folder / "team"
        team.mkdir()
        shutil.copy(SCRIPT, team / SCRIPT.name)
        team_image(cluster, jobset, team, on_bootstrap=True)
        (cluster.claim(jobset["metadata"]["namespace"], "shared-data") / "preflight").mkdir(
            parents=True
        )
        # The node the first attempt's pod 1 lands on (the scheduler fills nodes in order).
        bad = cluster.nodes[[n.pool for n in cluster.nodes].index(pool) + 1]
        bad.lost_gpu = True
        outcome = cluster.run_jobset(jobset)
        watcher = cluster.watcher.log if cluster.watcher else None
        yield outcome, cluster.placed, bad, watcher


def test_the_job_renders_a_preflight_that_runs_on_every_pod(restarted):
    outcome, _, bad, _ = restarted
    assert any(f"preflight FAIL: node {bad.name}" in p.output() for p in outcome.attempts[0]), (
        outcome_text(outcome)
    )


def test_the_restarted_group_does_not_land_on_the_node_whose_preflight_failed(restarted):
    outcome, placed, bad, watcher = restarted
    again = [pod for node, pod, attempt in placed if attempt > 0 and node == bad.name]
    node = bad.as_object()
    assert again == [], (
        f"Pod(s) {again}: default-scheduler bound the restarted group to Node {bad.name} again "
        f"after its preflight FAILed there; the Node as the API server holds it: spec.taints "
        f"{node['spec']['taints']}, spec.unschedulable {node['spec']['unschedulable']}, labels "
        f"{node['metadata']['labels']}. Deployment quarantine-watcher "
        f"(bootstrap/selftest/watch.py) "
        + (f"logged:\n{watcher.read_text(errors='replace')}" if watcher else "is not rendered")
        + "\n"
        + outcome_text(outcome)
    )
    assert outcome.state == "Completed", outcome_text(outcome)
