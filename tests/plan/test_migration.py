"""Moving a pool from the device plugin to DRA (issue 41 §1, plan/migration.py): in place it is
refused, naming the steps; in steps, each plan's diff against the one before says what the step
does (the DRA group joins and gains quota, the old group drains, then goes) and no step leaves
the pool's queue without a pool already serving it. Fixture: tests/helpers/varied_stacks.py
MIGRATION_STEPS (staging's A100 EFA group, the self-test on); the shared queue is the default one
(model/config/scheduling.SHARED_QUEUE)."""

from __future__ import annotations

import copy
import json
import re
import textwrap

import pytest
import yaml

from model.config import parse_config
from model.stacks import ROOT
from plan.cli import main
from plan.diff import PreviousPlan
from plan.diff_report import changes_block
from plan.migration import gaps, refusals
from tests.conftest import planned, project_plan
from tests.helpers.varied_stacks import MIGRATION_STACK, MIGRATION_STEPS, migration_plan

STEPS_HEADER = "GPU allocation (device plugin / DRA) steps:"


def earlier(step: int) -> PreviousPlan:
    plan = migration_plan(step)
    return PreviousPlan([r.as_json() for r in plan.resources], plan.outputs)


def block(step: int) -> str:
    """The changes block of step `step` against step `step - 1`."""
    return changes_block(migration_plan(step), earlier(step - 1), f"step {step - 1}")


def config(raw: dict):
    return parse_config({k.split(":", 1)[1]: v for k, v in raw.items()}, MIGRATION_STACK)


def test_switching_a_running_pools_allocation_in_place_is_refused_naming_the_steps():
    in_place = copy.deepcopy(MIGRATION_STEPS[0])
    (group,) = in_place["gpu-platform:gpu_node_groups"]
    group.update(gpu_allocation="dra", scaling={"min_size": 1, "max_size": 2, "desired_size": 1})
    assert refusals(config(in_place), "stacks/Pulumi.staging.yaml", earlier(0)) == [
        "stacks/Pulumi.staging.yaml: gpu_node_groups[0].gpu_allocation: 'dra', but pool "
        "a100-efa runs on device_plugin in the earlier plan: its nodes would switch at once, "
        "and every job there would lose its GPUs. Valid: keep 'device_plugin' here and move in "
        "steps, each a plan of its own: (1) add a new group with gpu_allocation: dra, (2) move "
        "the queues' quota to it (scheduling.cluster_queues[].gpus: a100-efa: 0), (3) remove "
        'a100-efa once its jobs have finished (docs/gpu-nodes.md, "Moving a pool to DRA")'
    ]
    # Each step keeps every pool's allocation: nothing to refuse.
    for step in range(1, len(MIGRATION_STEPS)):
        assert refusals(config(MIGRATION_STEPS[step]), "s", earlier(step - 1)) == []


def test_plan_against_an_earlier_plan_refuses_the_switch_and_writes_nothing(tmp_path, capsys):
    """The shipped staging stack against an earlier plan of it whose A100 pool was on DRA: the
    way back is the same steps."""
    shipped = planned("staging")
    outputs = copy.deepcopy(shipped.outputs)
    pool = outputs["gpu_pools"]["a100-efa"]
    pool["node_selector"]["nvidia.com/gpu.deploy.device-plugin"] = "false"
    doc = {"resources": [r.as_json() for r in shipped.resources], "outputs": outputs}
    (tmp_path / "resources.json").write_text(json.dumps(doc))
    out = tmp_path / "now"
    assert main(["staging", "--out", str(out), "--against", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: staging cannot be planned against {tmp_path}:\n")
    assert (
        "  stacks/Pulumi.staging.yaml: gpu_node_groups[0].gpu_allocation: 'device_plugin', but "
        "pool a100-efa runs on dra in the earlier plan"
    ) in err
    assert not out.exists()


def test_step_1_the_dra_group_joins_and_gains_quota_beside_the_old_one():
    text = block(1)
    assert "  + aws:eks/nodeGroup:NodeGroup staging-a100-dra\n" in text
    assert "  + kubernetes:apps/v1:DaemonSet staging-daemonset-node-join-a100-dra\n" in text
    assert (
        f"{STEPS_HEADER}\n"
        "  - pool a100-dra joins on dra: its nodes pass the node-join check (DaemonSet "
        "node-join-a100-dra) before any job lands; Kueue flavor a100-dra gains quota in "
        "ClusterQueue shared\n"
    ) in text + "\n"


def test_step_2_the_old_group_drains_with_nothing_evicted():
    text = block(2)
    assert (
        f"{STEPS_HEADER}\n"
        "  - pool a100-efa (device_plugin) drains: Kueue admits nothing more to flavor a100-efa "
        "(nominal quota 0 in shared); what runs there runs to its end (quota is checked at "
        "admission: nothing is evicted), and cluster-autoscaler removes its nodes as they empty"
    ) in text
    assert "aws:eks/nodeGroup:NodeGroup staging-a100-efa" not in text


def test_step_3_the_drained_group_goes_having_admitted_nothing():
    text = block(3)
    assert "  - aws:eks/nodeGroup:NodeGroup staging-a100-efa\n" in text
    assert (
        "  - pool a100-efa (device_plugin) is removed: it admitted nothing in the earlier plan"
    ) in text


@pytest.mark.parametrize("step", range(1, len(MIGRATION_STEPS)))
def test_no_step_leaves_the_queue_without_a_pool_already_serving_it(step):
    plan = migration_plan(step)
    current = [r.as_json() for r in plan.resources]
    assert gaps(earlier(step - 1), current, plan.outputs) == []
    assert " ! " not in block(step).split(STEPS_HEADER)[-1]


def test_skipping_a_step_is_shown_as_the_gap_it_leaves():
    """Straight from the device-plugin group to the DRA group in one plan: until the new nodes
    join, nothing serves the queue, and the old group's running jobs are evicted."""
    text = changes_block(migration_plan(3), earlier(0), "step 0")
    assert (
        "  - pool a100-efa (device_plugin) is removed, while shared still admitted to it in the "
        "earlier plan: any job running there is evicted; drain it first (its quota 0, one plan "
        "before)\n"
        "  ! ClusterQueue shared: served by a100-efa before this plan, and by no pool already "
        "there after it (a100-dra new: serving only once their nodes join): add the new pool in "
        "one plan, move the quota in the next"
    ) in text


def test_the_docs_steps_are_the_planned_steps():
    """docs/gpu-nodes.md, "Moving a pool to DRA": each step's snippet holds the groups and queues
    of the step planned above."""
    text = (ROOT / "docs" / "gpu-nodes.md").read_text()
    section = text[text.index("### Moving a pool to DRA") :]
    section = section[: section.index("\n### ")]
    documented = [
        yaml.safe_load(textwrap.dedent(block))
        for block in re.findall(r"```yaml\n(.*?)```", section, re.S)
    ]
    assert len(documented) == len(MIGRATION_STEPS) - 1
    for step, snippet in enumerate(documented, start=1):
        planned_step = MIGRATION_STEPS[step]
        groups = "gpu-platform:gpu_node_groups"
        assert snippet[groups] == planned_step[groups], f"step {step}"
        queues = (snippet.get("gpu-platform:scheduling") or {}).get("cluster_queues")
        planned_queues = (planned_step.get("gpu-platform:scheduling") or {}).get("cluster_queues")
        assert queues == planned_queues, f"step {step}"


def test_a_draining_group_that_keeps_nodes_says_they_stay():
    """A group whose min_size is above 0 keeps that many nodes, empty, until it is removed:
    cluster-autoscaler never goes below a group's min size."""
    moved = copy.deepcopy(MIGRATION_STEPS[2])
    old, _ = moved["gpu-platform:gpu_node_groups"]
    old["scaling"] = {"min_size": 1, "max_size": 2, "desired_size": 1}
    previous = copy.deepcopy(MIGRATION_STEPS[1])
    previous["gpu-platform:gpu_node_groups"][0]["scaling"] = dict(old["scaling"])
    before = project_plan(MIGRATION_STACK, {MIGRATION_STACK: previous})
    text = changes_block(
        project_plan(MIGRATION_STACK, {MIGRATION_STACK: moved}),
        PreviousPlan([r.as_json() for r in before.resources], before.outputs),
        "step 1",
    )
    assert "nothing is evicted), and its 1 node(s) of min_size stay until the group is removed" in (
        text
    )
