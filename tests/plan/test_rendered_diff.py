"""`--against` covers what the Helm releases render: object by object, a changed object field by
field, with the replacement marks of the same tables as the program's own objects."""

from __future__ import annotations

import dataclasses
import functools

from model.versions import CHARTS
from plan.diff import PreviousPlan, read_previous
from plan.diff_report import changes_block, format_diff
from plan.model import Plan
from plan.render import RELEASE, render_plan, write_rendered
from plan.rendered_diff import current_sources, diff_rendered
from tests.conftest import SHARED_HELM, planned, rendered
from tests.helpers.plan_diff_helpers import edited_render

KUEUE = "prod-kueue"
MANAGER = "kueue/templates/manager/manager.yaml"


edited = functools.partial(edited_render, "prod")


def test_a_plan_folder_read_back_renders_the_same(tmp_path):
    """What the plan writes to out/<stack>/rendered/ reads back file by file: a plan against
    its own folder finds no rendered change."""
    assert write_rendered(rendered("prod"), tmp_path)
    (tmp_path / "resources.json").write_text(planned("prod").to_json())
    previous = read_previous(tmp_path)
    assert set(previous.rendered) == {r.release for r in rendered("prod").releases}
    assert diff_rendered(previous.rendered, current_sources(rendered("prod"))) == []


def test_a_changed_field_shows_as_an_update_of_that_object_alone():
    # kueue 0.19.2's manager.yaml renders the controller image registry.k8s.io/kueue/kueue:v0.19.2.
    before = edited(KUEUE, MANAGER, "kueue:v0.19.2", "kueue:v0.19.1")
    [diff] = diff_rendered(before, current_sources(rendered("prod")))
    assert (diff.action, diff.name) == (
        "update",
        "Deployment gpu-platform/kueue-controller-manager (prod-kueue)",
    )
    text = format_diff([diff], "out/prod", rendered=True)
    assert "  ~ Deployment gpu-platform/kueue-controller-manager (prod-kueue)" in text
    assert (
        '      ~ spec.template.spec.containers[0].image: "registry.k8s.io/kueue/kueue:v0.19.1" -> '
        '"registry.k8s.io/kueue/kueue:v0.19.2"'
    ) in text
    assert "Rendered: 0 to create, 1 to update, 0 to replace, 0 to delete." in text


def test_a_changed_selector_replaces_the_deployment():
    # pulumi-kubernetes diff.go: apps/v1 Deployment forces replacement on .spec.selector.
    before = edited(KUEUE, MANAGER, "matchLabels:\n", "matchLabels:\n      tier: old\n")
    diffs = diff_rendered(before, current_sources(rendered("prod")))
    [deployment] = [d for d in diffs if d.name.startswith("Deployment ")]
    assert deployment.action == "replace"
    assert deployment.verdict.forced_by == ("spec.selector",)
    text = format_diff(diffs, "out/prod", rendered=True)
    assert (
        "  -/+ Deployment gpu-platform/kueue-controller-manager (prod-kueue) "
        "(forces replacement: spec.selector)"
    ) in text


def test_a_release_the_earlier_plan_lacked_is_created_object_by_object():
    before = dict(current_sources(rendered("prod")))
    del before["prod-efa-device-plugin"]
    diffs = diff_rendered(before, current_sources(rendered("prod")))
    # The EFA chart v0.5.30 renders one DaemonSet (shared/helm/README.md, "Default render").
    assert [(d.action, d.name) for d in diffs] == [
        ("create", "DaemonSet aws-efa-k8s-device-plugin (prod-efa-device-plugin)")
    ]


def test_the_changes_block_adds_the_rendered_diff_where_both_plans_rendered():
    plan = planned("prod")
    resources = [r.as_json() for r in plan.resources]
    previous = PreviousPlan(
        resources, plan.outputs, edited(KUEUE, MANAGER, "kueue:v0.19.2", "kueue:v0.19.1")
    )
    text = changes_block(plan, previous, "out/prod", rendered("prod"))
    assert "Changes against out/prod:\n  none" in text
    assert "Rendered objects against out/prod:" in text
    assert "  ~ Deployment gpu-platform/kueue-controller-manager (prod-kueue)" in text
    without = changes_block(
        plan, PreviousPlan(resources, plan.outputs), "out/prod", rendered("prod")
    )
    assert "Rendered objects" not in without  # a bare resources.json holds no renders


def test_a_chart_bump_to_a_version_not_in_the_cache_is_unknown_never_deleted(monkeypatch):
    """Issue 26: kueue bumped to a version no cache holds printed its 81 objects as deleted.
    ../shared/helm holds kueue-0.19.2.tgz alone (shared/helm/README.md), so 0.19.3 is not
    rendered: the release's objects are unknown, at the release and in the totals. The bump
    is the pin's (model/versions.py); a stack's override no cache holds is refused instead
    (tests/plan/test_chart_overrides.py)."""
    monkeypatch.setitem(CHARTS, "kueue", dataclasses.replace(CHARTS["kueue"], version="0.19.3"))
    shipped = planned("prod")
    resources = [
        dataclasses.replace(r, inputs={**r.inputs, "version": "0.19.3"})
        if r.type == RELEASE and r.name == KUEUE
        else r
        for r in shipped.resources
    ]
    bumped = Plan(shipped.stack, shipped.project, resources, shipped.outputs)
    rendering = render_plan(bumped, (SHARED_HELM,))
    assert [u.release for u in rendering.unrendered] == [KUEUE]
    previous = PreviousPlan(
        [r.as_json() for r in shipped.resources],
        shipped.outputs,
        current_sources(rendered("prod")),
    )
    text = changes_block(bumped, previous, "out/prod", rendering)
    # model/charts.lock.json records no kueue digest: `make charts` alone would refuse it.
    why = (
        "not rendered: chart kueue version 0.19.3 is not in the cache; fill it with "
        "`make charts-lock charts` where its repository is reachable (the lock records no "
        "digest for it, and `make charts` pulls only what it records)"
    )
    assert f"  ? prod-kueue: unknown ({why})" in text
    assert "Rendered: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 unknown." in text
    # At the release in the program's diff too, where its version change shows.
    assert (
        "  ~ kubernetes:helm.sh/v3:Release prod-kueue\n"
        '      ~ version: "0.19.2" -> "0.19.3"\n'
        f"      what it renders: unknown ({why})\n"
    ) in text
    assert "(prod-kueue)" not in text  # no object of the release listed, least of all deleted
