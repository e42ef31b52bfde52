"""The policy pack on whole stacks: every stack passes every mandatory rule, a real violation
fails `python -m plan` with exit 3, exemptions and the budget come from the stack's
config."""

from __future__ import annotations

import dataclasses
import re

import pytest

from model.config.policy import PolicyExemption, PolicySettings
from plan.cli import main
from plan.policy import format_violations, subjects
from policy.rules import BY_NAME, Context, evaluate, review, violations
from tests.conftest import STACKS, make_project
from tests.helpers.bad_stacks import aws, group
from tests.helpers.policy_cases import add_host_path, context, edit, find, set_path
from tests.helpers.varied_stacks import gb200_config, gb200_plan


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_passes_every_mandatory_rule(stack):
    found = [str(v) for v in evaluate(context(stack)) if v.rule.level == "mandatory"]
    assert found == []


def test_a_pool_in_a_local_zone_passes_every_mandatory_rule():
    """The GB200 pool runs in the Dallas Local Zone and its file system in the region (FSx
    stays there): fsx-in-gpu-zone must not ask for a zone no file system can be in."""
    cfg = gb200_config()
    ctx = Context(tuple(subjects(gb200_plan())), production=cfg.production, settings=cfg.policy)
    assert [str(v) for v in evaluate(ctx) if v.rule.level == "mandatory"] == []


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
    monkeypatch.setattr("plan.cli.ROOT", make_project(tmp_path, {"open": aws()}))
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


@pytest.fixture
def allow_imdsv1(monkeypatch):
    """A real violation: the program itself declares launch templates that allow IMDSv1."""
    import components.data.nodes as nodes

    options = nodes.aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled", http_tokens="optional", http_put_response_hop_limit=1
    )
    monkeypatch.setattr(nodes, "imdsv2_only", lambda: options)


def plan_out(tmp_path, monkeypatch, capsys, stack: dict, *flags: str) -> tuple[int, str]:
    monkeypatch.setattr("plan.cli.ROOT", make_project(tmp_path, {"bad": stack}))
    return rerun(tmp_path, capsys, *flags)


def rerun(tmp_path, capsys, *flags: str) -> tuple[int, str]:
    code = main(["bad", *flags, "--out", str(tmp_path / "out")])
    return code, capsys.readouterr().out


FAILED_IMDSV1 = (
    "FAILED bad: 2 mandatory policy violations "
    "(imdsv2-required on bad-a100, imdsv2-required on bad-system); "
)


def test_imdsv1_launch_template_fails_the_plan_with_exit_3_and_a_last_failed_line(
    allow_imdsv1, tmp_path, monkeypatch, capsys
):
    code, out = plan_out(tmp_path, monkeypatch, capsys, group())
    assert code == 3, out
    lines = out.rstrip().splitlines()
    # Mandatory first, then the advisories this minimal stack also breaks, then the verdict.
    mandatory, advisory = lines.index("  mandatory (2):"), lines.index("  advisory (4):")
    assert mandatory < advisory
    assert lines[mandatory + 1 : mandatory + 4] == [
        "    - imdsv2-required: aws:ec2/launchTemplate:LaunchTemplate bad-a100",
        "        metadataOptions.httpTokens is optional (IMDSv1 allowed)",
        "        fix: restore metadataOptions.httpTokens: required in components/data/nodes.py",
    ]
    assert lines[-1].startswith(FAILED_IMDSV1 + "4 advisory, 0 waived; "), lines[-1]
    assert lines[-1].endswith("; exit 3"), lines[-1]
    assert not any(line.startswith("FAILED") for line in lines[:-1])


def test_stack_file_exemptions_let_the_plan_pass_and_are_listed_with_their_reasons(
    allow_imdsv1, tmp_path, monkeypatch, capsys
):
    # The same IMDSv1 templates, waived in the stack file: the config reaches the offline run.
    reason = "legacy agent needs IMDSv1, reviewed"
    waived = [
        {"rule": "imdsv2-required", "resource": name, "reason": reason}
        for name in ("bad-a100", "bad-system")
    ]
    stack = {**group(), "gpu-platform:policy": {"exemptions": waived}}
    code, out = plan_out(tmp_path, monkeypatch, capsys, stack)
    assert code == 0, out
    assert "    - imdsv2-required:" not in out
    assert f"  waived: imdsv2-required on bad-a100: {reason}\n" in out
    assert f"  waived: imdsv2-required on bad-system: {reason}\n" in out
    assert out.rstrip().splitlines()[-1].endswith("; policies: 0 mandatory, 4 advisory, 2 waived")


def test_an_exemption_is_listed_even_when_nothing_else_is_reported():
    ctx = context("onprem")
    job = find(ctx, "JobSet", "onprem-selftest-job")
    moved = edit(add_host_path)(job)
    exempt = PolicySettings(
        exemptions=[
            PolicyExemption(
                rule="privileged-only-where-needed",
                resource="onprem-selftest-job",
                reason="the self-test reads NVMe, reviewed",
            )
        ]
    )
    found = review(context("onprem", moved, settings=exempt))
    assert format_violations(found).splitlines() == [
        "Policies: every rule passes, less what the stack waives:",
        "  waived: privileged-only-where-needed on onprem-selftest-job: "
        "the self-test reads NVMe, reviewed",
    ]


@pytest.mark.parametrize("failing", [False, True], ids=["passing", "failing"])
def test_quiet_prints_the_warnings_and_advisories_a_line_each_then_the_summary_line(
    failing, tmp_path, monkeypatch, capsys, request
):
    # A stack with a bit of everything above the summary: warnings (an AWS documentation
    # account), advisories, a stale exemption, a diff against an earlier plan.
    if failing:
        request.getfixturevalue("allow_imdsv1")
    stale = {"rule": "no-such-rule", "resource": "bad-a100", "reason": "stale on purpose"}
    stack = {
        **aws(cluster={"admin_principal_arns": ["arn:aws:iam::111122223333:role/admins"]}),
        "gpu-platform:gpu_node_groups": group()["gpu-platform:gpu_node_groups"],
        "gpu-platform:policy": {"exemptions": [stale]},
    }
    code, full = plan_out(tmp_path, monkeypatch, capsys, stack)
    against = ["--against", str(tmp_path / "out")]
    quiet_code, quiet = rerun(tmp_path, capsys, "--quiet", *against)
    assert "Warnings:" in full and "stale exemption" in full
    assert (code, quiet_code) == ((3, 3) if failing else (0, 0))
    # Issue 38: a CI log sees what it is warned of, not only a count of it.
    *said, last = quiet.splitlines()
    assert said[0].startswith("warning: gpu-platform:cluster.admin_principal_arns[0]: ")
    assert said[0].endswith("[warning documentation-account]")
    advisories = [line for line in said if line.startswith("advisory: ")]
    warned = [line for line in said if line.startswith("warning: ")]
    assert len(warned) == full.count("[warning ") and len(warned) + len(advisories) == len(said)
    assert "advisory: spot-outside-prod on bad-a100: " in quiet
    assert f"{len(advisories)} advisory" in last
    timing = re.compile(r"\d+\.\d\d s")
    assert timing.sub("T s", last) == timing.sub("T s", full.rstrip().splitlines()[-1])
    assert last.startswith(FAILED_IMDSV1 if failing else "Planned bad: ")


def test_an_exemption_that_waives_nothing_is_reported(tmp_path, monkeypatch, capsys):
    waived = [
        {"rule": "imdsv2-requried", "resource": "bad-a100", "reason": "misspelt rule name"},
        {"rule": "imdsv2-required", "resource": "bad-h100", "reason": "no such resource here"},
    ]
    stack = {**group(), "gpu-platform:policy": {"exemptions": waived}}
    code, out = plan_out(tmp_path, monkeypatch, capsys, stack)
    assert code == 0
    assert "  stale exemption, waives nothing: policy.exemptions[0]: no rule imdsv2-requried" in out
    assert (
        "  stale exemption, waives nothing: policy.exemptions[1]: no resource bad-h100 in this plan"
        in out
    )


@pytest.mark.usefixtures("cli_on_session_plans")
def test_a_compliant_stack_plans_with_exit_0_and_says_every_rule_passes(tmp_path, capsys):
    assert main(["onprem", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Policies: every rule passes." in out
    assert out.rstrip().splitlines()[-1].endswith("; policies: 0 mandatory, 0 advisory, 0 waived")


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
