"""The policy pack on whole stacks: every stack passes every mandatory rule, a real violation
fails `python -m infra.plan` with exit 3, exemptions and the budget come from the stack's
config."""

from __future__ import annotations

import dataclasses

import pytest

from infra.config.policy import PolicyExemption, PolicySettings
from infra.plan import main
from policy.rules import BY_NAME, evaluate, violations
from tests.bad_stacks import aws, group
from tests.conftest import STACKS, make_project
from tests.policy_cases import context, edit, find, set_path


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_passes_every_mandatory_rule(stack):
    found = [str(v) for v in evaluate(context(stack)) if v.rule.level == "mandatory"]
    assert found == []


def test_shipped_stacks_advisories_are_the_documented_ones():
    # Each advisory rule says in its description which shipped stack breaks it and why.
    found = {
        stack: sorted({(v.rule.name, v.resource.name) for v in evaluate(context(stack))})
        for stack in ("dev", "staging", "prod", "onprem")
    }
    assert found == {
        "dev": [
            ("flow-logs-on", "dev-vpc"),
            ("host-memory-per-gpu-memory", "dev-spot-small"),
            ("log-groups-encrypted", "dev-eks-logs"),
            ("vcpus-per-gpu", "dev-spot-small"),
        ],
        "staging": [
            ("log-groups-encrypted", "staging-eks-logs"),
            ("log-groups-encrypted", "staging-flow-logs"),
            ("spot-outside-prod", "staging-a100-efa"),
        ],
        "prod": [
            ("log-groups-encrypted", "prod-eks-logs"),
            ("log-groups-encrypted", "prod-flow-logs"),
        ],
        "onprem": [],
    }


def test_the_default_world_open_api_endpoint_is_reported_outside_production(
    tmp_path, monkeypatch, capsys
):
    # The stack sets no cluster.public_access_cidrs: the user gets the default, 0.0.0.0/0.
    monkeypatch.setattr("infra.plan.ROOT", make_project(tmp_path, {"open": aws()}))
    code = main(["open", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert (
        "    - api-endpoint-world-open: aws:eks/cluster:Cluster open-eks\n"
        "        the API endpoint is public to the whole internet (publicAccessCidrs: 0.0.0.0/0)\n"
        "        fix: list the runner's and your office's CIDRs in cluster.public_access_cidrs"
    ) in out


def test_a_world_open_endpoint_in_production_is_mandatory_and_reported_once():
    ctx = context("prod")
    opened = edit(
        lambda p: p["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"])
    )(find(ctx, "Cluster", "prod-eks"))
    found = [v for v in evaluate(context("prod", opened)) if v.resource.name == "prod-eks"]
    assert [(v.rule.name, v.rule.level) for v in found] == [
        ("prod-api-endpoint-private", "mandatory")
    ]


def test_imdsv1_launch_template_fails_the_plan_with_exit_3(tmp_path, monkeypatch, capsys):
    # A real violation: the program itself declares a launch template that allows IMDSv1.
    import components.nodes as nodes

    allow_imdsv1 = nodes.aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled", http_tokens="optional", http_put_response_hop_limit=1
    )
    monkeypatch.setattr(nodes, "imdsv2_only", lambda: allow_imdsv1)
    root = make_project(tmp_path, {"bad": group()})
    monkeypatch.setattr("infra.plan.ROOT", root)
    code = main(["bad", "--quiet", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "  mandatory (2):" in out
    assert "    - imdsv2-required: aws:ec2/launchTemplate:LaunchTemplate bad-a100" in out
    assert "        metadataOptions.httpTokens is optional (IMDSv1 allowed)" in out
    assert "        fix: restore metadataOptions.httpTokens: required in " in out


def test_stack_file_exemptions_let_the_plan_pass(tmp_path, monkeypatch, capsys):
    # The same IMDSv1 templates, waived in the stack file: the config reaches the offline run.
    import components.nodes as nodes

    allow_imdsv1 = nodes.aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled", http_tokens="optional", http_put_response_hop_limit=1
    )
    monkeypatch.setattr(nodes, "imdsv2_only", lambda: allow_imdsv1)
    reason = "legacy agent needs IMDSv1, reviewed"
    waived = [
        {"rule": "imdsv2-required", "resource": name, "reason": reason}
        for name in ("bad-a100", "bad-system")
    ]
    stack = {**group(), "gpu-platform:policy": {"exemptions": waived}}
    monkeypatch.setattr("infra.plan.ROOT", make_project(tmp_path, {"bad": stack}))
    code = main(["bad", "--quiet", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "imdsv2-required" not in out


def test_an_exemption_that_waives_nothing_is_reported(tmp_path, monkeypatch, capsys):
    waived = [
        {"rule": "imdsv2-requried", "resource": "bad-a100", "reason": "misspelt rule name"},
        {"rule": "imdsv2-required", "resource": "bad-h100", "reason": "no such resource here"},
    ]
    stack = {**group(), "gpu-platform:policy": {"exemptions": waived}}
    monkeypatch.setattr("infra.plan.ROOT", make_project(tmp_path, {"bad": stack}))
    assert main(["bad", "--quiet", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "  stale exemption, waives nothing: policy.exemptions[0]: no rule imdsv2-requried" in out
    assert (
        "  stale exemption, waives nothing: policy.exemptions[1]: no resource bad-h100 in this plan"
        in out
    )


def test_a_compliant_stack_plans_with_exit_0_and_says_every_rule_passes(tmp_path, capsys):
    assert main(["onprem", "--quiet", "--out", str(tmp_path)]) == 0
    assert "Policies: every rule passes." in capsys.readouterr().out


def test_an_exemption_waives_one_rule_for_one_named_resource():
    ctx = context("prod")
    rule = BY_NAME["no-open-ingress"]
    target = find(ctx, "IngressRule", "prod-api-access-0")
    opened = set_path("cidrIpv4", "0.0.0.0/0")(target)
    exempt = PolicySettings(
        exemptions=[
            PolicyExemption(
                rule="no-open-ingress",
                resource="prod-api-access-0",
                reason="a public demo endpoint, reviewed",
            )
        ]
    )
    assert violations(rule, opened, context("prod", opened)) != []
    assert violations(rule, opened, context("prod", opened, settings=exempt)) == []
    elsewhere = PolicySettings(
        exemptions=[exempt.exemptions[0].model_copy(update={"resource": "prod-api-access-1"})]
    )
    assert violations(rule, opened, context("prod", opened, settings=elsewhere)) != []


def test_monthly_cost_over_the_budget_is_reported_and_within_it_passes():
    rule = BY_NAME["monthly-cost-within-budget"]
    ctx = context("prod", monthly_usd=250_000.0, monthly_budget_usd=200_000)
    stack = find_stack(ctx)
    assert [v.message for v in violations(rule, stack, ctx)] == [
        "estimated $250,000 a month, budget $200,000"
    ]
    within = dataclasses.replace(ctx, monthly_budget_usd=300_000)
    assert violations(rule, stack, within) == []


def test_budget_without_a_cost_estimate_says_so_instead_of_passing():
    rule = BY_NAME["monthly-cost-within-budget"]
    ctx = context("prod", monthly_usd=None, monthly_budget_usd=1000)
    assert [v.message for v in violations(rule, find_stack(ctx), ctx)] == [
        "cost estimate unavailable: budget not checked"
    ]


def find_stack(ctx):
    return next(r for r in ctx.resources if r.type == "pulumi:pulumi:Stack")


def test_a_placement_group_on_a_reservation_passes_when_the_stack_allows_it():
    ctx = context("prod")
    template = find(ctx, "LaunchTemplate", "prod-h100-block")
    placed = set_path("placement", {"groupName": "(known after apply: prod-h100-block.name)"})(
        template
    )
    allowed = PolicySettings(allow_placement_group_with_reservation=True)
    rule = BY_NAME["no-placement-group-with-reservation"]
    assert violations(rule, placed, context("prod", placed)) != []
    assert violations(rule, placed, context("prod", placed, settings=allowed)) == []
