"""The GB200 fixture stack (tests/helpers/varied_stacks.py: one NVL72 pool as AWS sells it)
through the whole-plan checks the shipped stacks pass: every rendered object valid for its
minor, every mandatory policy rule (its cost: tests/model/test_cost.py; its placement:
tests/controllers/test_nvlink_placement.py)."""

from __future__ import annotations

from plan.policy import subjects
from plan.render import render_plan
from policy.rules import Context, evaluate
from tests.conftest import SHARED_HELM
from tests.helpers.rendered_validity import assert_rendered_objects_valid
from tests.helpers.varied_stacks import gb200_config, gb200_plan


def test_the_gb200_stack_renders_valid_objects_for_its_minor():
    plan = gb200_plan()
    assert_rendered_objects_valid(
        render_plan(plan, (SHARED_HELM,)), plan.outputs["kubernetes_version"]
    )


def test_the_gb200_stack_passes_every_mandatory_rule():
    cfg = gb200_config()
    context = Context(tuple(subjects(gb200_plan())), production=cfg.production, settings=cfg.policy)
    assert [str(v) for v in evaluate(context) if v.rule.level == "mandatory"] == []
