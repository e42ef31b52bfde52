"""`python -m plan <stack> --strict`, the gate CI holds: every kind of warning the program and the
plan give (model/warning_kinds.py) fails it, exit 4, until the stack waives that kind by id in
`policy.waivers`; so does every advisory its `policy.exemptions` leave; `--quiet` prints each
warning and advisory on a line of its own."""

from __future__ import annotations

import functools
import subprocess

import pytest

from model.config import ConfigError, parse_config
from model.config.policy import WarningWaiver
from model.stacks import ROOT
from model.warning_kinds import WARNINGS, warning_kind
from plan.cli import main
from plan.policy import EXIT_STRICT, PolicyCheck, strict_check
from tests.conftest import STACKS, planned
from tests.helpers.bad_stacks import NS, first_round
from tests.helpers.brownfield_stacks import BROWNFIELD_STACKS, brownfield_plan
from tests.helpers.network_stacks import (
    EXISTING_VPC_STACK,
    FRANKFURT_STACK,
    existing_vpc_plan,
    frankfurt_plan,
)
from tests.helpers.varied_stacks import (
    CAPACITY_STACK,
    VARIED_STACK,
    capacity_kinds_plan,
    varied_plan,
)
from tests.helpers.warning_stacks import (
    FIXTURES,
    LOUD_AWS,
    earlier_prod_plan,
    every_warning,
    loud_aws,
    loud_plan,
    project,
)

NO_POLICY_FINDINGS = PolicyCheck("", failed=[], advisories=[], waived=0)
REASON = "accepted for this test stack"


@pytest.fixture(scope="module")
def warnings(tmp_path_factory) -> list[str]:
    return every_warning(tmp_path_factory.mktemp("warnings"))


def waive(*kinds: str) -> list[WarningWaiver]:
    return [WarningWaiver(id=kind, reason=REASON) for kind in kinds]


@pytest.mark.parametrize("kind", sorted(WARNINGS))
def test_each_kind_of_warning_fails_strict_until_its_waiver(kind, warnings):
    of_kind = [w for w in warnings if warning_kind(w) == kind]
    assert of_kind, f"no fixture of tests/helpers/warning_stacks.py gives a {kind} warning"
    failing = strict_check(of_kind, [], NO_POLICY_FINDINGS)
    assert failing.status == EXIT_STRICT == 4
    assert failing.summary("s", 1, 0.0).startswith("FAILED s (strict): not waived: ")
    assert f"({kind})" in failing.summary("s", 1, 0.0)
    assert strict_check(of_kind, waive(kind), NO_POLICY_FINDINGS).status == 0
    # Every other kind waived: this one alone still fails.
    others = sorted({warning_kind(w) for w in warnings} - {kind})
    rest = strict_check(warnings, waive(*others), NO_POLICY_FINDINGS)
    assert rest.warnings == of_kind


# The fixture stacks of other kinds (brownfield, a network a user brings, AWS variants): a
# warning only they give is named too.
OTHER_FIXTURES = {
    **{s: functools.partial(brownfield_plan, s) for s in BROWNFIELD_STACKS},
    FRANKFURT_STACK: frankfurt_plan,
    EXISTING_VPC_STACK: existing_vpc_plan,
    VARIED_STACK: varied_plan,
    CAPACITY_STACK: capacity_kinds_plan,
}


@pytest.mark.parametrize("stack", [*STACKS, *FIXTURES, *OTHER_FIXTURES])
def test_every_warning_a_plan_gives_names_its_kind(stack):
    if stack in FIXTURES:
        plan = loud_plan(stack)
    elif stack in OTHER_FIXTURES:
        plan = OTHER_FIXTURES[stack]()
    else:
        plan = planned(stack)
    assert [w for w in plan.warnings if warning_kind(w) not in WARNINGS] == []


def test_a_waiver_names_a_known_id_and_gives_a_reason():
    base = {
        "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "cluster": {"admin_principal_arns": ["arn:aws:iam::210987654321:role/admins"]},
    }
    source = "stacks/Pulumi.t.yaml"
    for waivers, problem in (
        ([{"id": "over-budjet", "reason": REASON}], "policy.waivers[0].id: valid values are"),
        ([{"id": "over-budget"}], "policy.waivers[0].reason: required value is missing"),
        ([{"id": "over-budget", "reason": " " * 12}], "policy.waivers[0].reason: "),
    ):
        with pytest.raises(ConfigError) as refused:
            parse_config({**base, "policy": {"waivers": waivers}}, source)
        assert refused.value.source == source
        (said,) = first_round(refused.value.problems)
        assert said.startswith(f"gpu-platform:{problem}"), said
    cfg = parse_config(
        {**base, "policy": {"waivers": [{"id": "over-budget", "reason": REASON}]}}, source
    )
    assert cfg.policy.waivers == waive("over-budget")


def run(tmp_path, monkeypatch, capsys, config: dict, *flags: str) -> tuple[int, list[str]]:
    folder = tmp_path / f"project-{len(list(tmp_path.glob('project-*')))}"
    folder.mkdir()
    root = project(folder, LOUD_AWS, config)
    monkeypatch.setattr("plan.cli.ROOT", root)
    code = main([LOUD_AWS, *flags, "--out", str(tmp_path / "out")])
    return code, capsys.readouterr().out.rstrip().splitlines()


def test_the_cli_fails_strict_on_the_stacks_warnings_then_passes_with_its_waivers(
    tmp_path, monkeypatch, capsys
):
    config = loud_aws()
    code, lines = run(tmp_path, monkeypatch, capsys, config, "--strict", "--quiet")
    assert code == 4, lines
    # The kinds loud_aws gives (tests/helpers/warning_stacks.py), each printed on its own line.
    kinds = (
        "documentation-account",
        "documentation-cidr",
        "kubernetes-extended-support",
        "unconfirmed-addon-build",
        "over-budget",
        "quota-over-pool",
        "selftest-mode-warn",
        "shared-data-unprovided",
        "nvidia-images-uncopied",
    )
    for kind in kinds:
        assert [line for line in lines if line.startswith("warning: ") and line.endswith(
            f"[warning {kind}]")], kind  # fmt: skip
    assert lines[-1].startswith(f"FAILED {LOUD_AWS} (strict): not waived: ")
    assert lines[-1].endswith("; exit 4")
    advisories = [
        line.split(": ", 2)[1].split(" on ") for line in lines if line.startswith("advisory: ")
    ]
    assert advisories, "dev's advisories (docs/review.md: flow logs off in dev, ...)"
    config[f"{NS}:policy"] = {
        "waivers": [{"id": kind, "reason": REASON} for kind in kinds],
        "exemptions": [
            {"rule": rule, "resource": resource, "reason": REASON} for rule, resource in advisories
        ],
    }
    code, lines = run(tmp_path, monkeypatch, capsys, config, "--strict", "--quiet")
    assert code == 0, lines
    assert lines[-1].startswith(f"Planned {LOUD_AWS}: ")
    assert lines[-1].endswith(
        f"strict: no warning or advisory unwaived ({len(kinds)} warnings waived)"
    )
    waived = [line for line in lines if line.startswith("waived warning: ")]
    assert len(waived) >= len(kinds) and all(
        line.endswith(f"(reason: {REASON})") for line in waived
    )


def test_a_waiver_no_warning_of_the_plan_needs_is_said_stale(warnings):
    dev = [w for w in warnings if warning_kind(w) == "documentation-account"]
    check = strict_check(dev, waive("documentation-account", "over-budget"), NO_POLICY_FINDINGS)
    assert check.status == 0
    assert check.stale == ["policy.waivers[1]: no over-budget warning in this plan"]
    assert "stale waiver, waives nothing: policy.waivers[1]: no over-budget warning" in (
        "\n".join(check.lines())
    )


@pytest.mark.usefixtures("cli_on_session_plans")
def test_capacity_block_rolls_are_found_against_the_plan_a_change_is_reviewed_against(
    tmp_path, capsys
):
    """CI plans each stack in a fresh checkout, --against the target branch's plan: that plan,
    not an out/<stack>/ a fresh checkout never has, is the one a Capacity Block roll is found
    against, so the warning reaches CI."""
    (tmp_path / "earlier").mkdir()
    earlier = earlier_prod_plan(tmp_path / "earlier")
    code = main(["prod", "--quiet", "--against", str(earlier), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    (roll,) = [line for line in out.splitlines() if line.endswith("[warning capacity-block-roll]")]
    assert roll.startswith("warning: node group prod-h100-block (Capacity Block): userData changed")


@pytest.mark.parametrize(
    ("variables", "flags"), [((), "--quiet"), (("STRICT=1",), "--quiet --strict")]
)
def test_make_plan_all_plans_every_stack_strict_on_request(variables, flags):
    printed = subprocess.run(
        ["make", "-n", "-s", "-C", str(ROOT), "plan-all", *variables],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (loop,) = [line for line in printed.splitlines() if "-m plan $s" in line]
    assert f"-m plan $s {flags} || exit 1" in " ".join(loop.split())
