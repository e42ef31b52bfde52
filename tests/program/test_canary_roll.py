"""The order `pulumi up` rolls a GPU-stack change in (issue 39 §2): one canary node per tested
pool first, and the pool's own node group only once the canary has passed. Modelled with the
engine's rules (tests/controllers/pulumi_update.py) over the plan's dependencies, for every
shipped AWS stack with the node-join check on (tests/helpers/canary_stacks.py) and every pool
tested there: the launch templates of every GPU group change (new user data, a new AMI
release: what a driver change is on AWS) and one pool's canary check fails."""

from __future__ import annotations

import pytest

from model.config.node_join import canary_pools
from plan.model import Plan
from tests.controllers.pulumi_update import update
from tests.helpers.canary_stacks import CANARY_STACKS, canary_env_and_config, canary_plan

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
JOB = "kubernetes:batch/v1:Job"


def cases():
    for stack in CANARY_STACKS:
        env, cfg = canary_env_and_config(stack)
        # A windowed pool has no canary: its warm-up tests each new node (tests/model/
        # test_selftest_windows.py).
        for pool in canary_pools(cfg):
            yield pytest.param(stack, env, pool, id=f"{stack}-{pool.name}")


def checks_on_the_pool(plan: Plan, pool) -> set[str]:
    """The Jobs whose pods land only on `pool`'s nodes: the checks that can fail its roll."""
    return {
        j.urn
        for j in plan.of_type(JOB)
        if pool.node_selector.items()
        <= j.inputs["spec"]["template"]["spec"].get("nodeSelector", {}).items()
    }


def gpu_groups(plan: Plan) -> list:
    return [ng for ng in plan.of_type(NODE_GROUP) if ng.inputs["amiType"].endswith("NVIDIA")]


def new_launch_templates(plan: Plan) -> set[str]:
    """Every GPU group's launch template, changed (the system group's is left alone)."""
    names = {ng.name for ng in gpu_groups(plan)}
    return {t.urn for t in plan.of_type(LAUNCH_TEMPLATE) if t.name in names}


def new_ami_release(plan: Plan) -> set[str]:
    """Every GPU group's releaseVersion, changed (gpu_node_groups[].ami_release): a driver."""
    return {ng.urn for ng in gpu_groups(plan)}


CHANGES = {"launch-templates": new_launch_templates, "ami-release": new_ami_release}


@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize(("stack", "env", "pool"), list(cases()))
def test_a_failed_canary_keeps_the_pools_nodes_on_the_old_template(stack, env, pool, change):
    plan = canary_plan(stack)
    (main,) = [g for g in plan.of_type(NODE_GROUP) if g.name == f"{env}-{pool.name}"]
    result = update(plan, CHANGES[change](plan), fails=checks_on_the_pool(plan, pool))
    assert main.urn not in result.done, (
        f"{main.name} took the new launch template although the check on {pool.name}'s new "
        "image failed: the change rolled the whole pool"
    )
    assert result.failed, f"no check ran on {pool.name}'s new image before its nodes rolled"


@pytest.mark.parametrize(("stack", "env", "pool"), list(cases()))
def test_a_passed_canary_lets_the_pools_nodes_follow(stack, env, pool):
    plan = canary_plan(stack)
    (main,) = [g for g in plan.of_type(NODE_GROUP) if g.name == f"{env}-{pool.name}"]
    checks = checks_on_the_pool(plan, pool)
    result = update(plan, new_launch_templates(plan), fails=set())
    assert main.urn in result.done
    ran = [u for u in result.done if u in checks]
    assert ran, f"no check ran on {pool.name}'s new image"
    assert result.done.index(main.urn) > max(result.done.index(u) for u in ran)
    # The other pools' rolls do not wait on this pool's canary, nor it on theirs.
    others = {c for p in canary_pools(canary_env_and_config(stack)[1]) if p != pool
              for c in checks_on_the_pool(plan, p)}  # fmt: skip
    failed_elsewhere = update(plan, new_launch_templates(plan), fails=others)
    assert main.urn in failed_elsewhere.done
