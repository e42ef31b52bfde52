"""The rules of tests/controllers/pulumi_update.py, each with a case that holds and one that
does not, on a plan of three resources: a template, a check that reads the template's output,
and a group that waits for the check (dependsOn) and reads the template too."""

from __future__ import annotations

from plan.model import Plan, PlannedResource
from tests.controllers.pulumi_update import changed, update


def resource(name: str, inputs: dict, after: tuple[str, ...] = ()) -> PlannedResource:
    return PlannedResource(
        urn=f"urn:{name}", type="t:m:R", name=name, parent="", inputs=inputs,
        dependencies=[f"urn:{a}" for a in after], protect=False, custom=True,
    )  # fmt: skip


def plan(check_reads_template: bool = True) -> Plan:
    check_input = "(known after apply: template)" if check_reads_template else "fixed"
    return Plan(
        "s",
        "p",
        [
            resource("template", {"data": "new"}),
            resource("check", {"image": check_input}, ("template",)),
            resource(
                "group", {"version": "(known after apply: template.v)"}, ("template", "check")
            ),
        ],
        {},
    )


def test_a_resource_that_reads_a_changed_output_changes_too():
    assert changed(plan(), {"urn:template"}) == {"urn:template", "urn:check", "urn:group"}
    assert changed(plan(check_reads_template=False), {"urn:template"}) == {
        "urn:template",
        "urn:group",
    }


def test_a_step_runs_after_the_steps_it_depends_on():
    result = update(plan(), {"urn:template"}, fails=set())
    assert result.done == ["urn:template", "urn:check", "urn:group"]


def test_a_failed_step_skips_its_dependents_only():
    result = update(plan(), {"urn:template"}, fails={"urn:check"})
    assert result.done == ["urn:template"]
    assert result.failed == {"urn:check"} and result.skipped == {"urn:group"}
    # A check that does not change does not run, and cannot stop the group.
    unchanged = update(plan(check_reads_template=False), {"urn:template"}, fails={"urn:check"})
    assert unchanged.done == ["urn:template", "urn:group"]
