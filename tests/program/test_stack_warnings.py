"""Plan warnings: documentation account ids, EKS support of the minor, Capacity Block rolls,
and how the offline plan captures what the program sends through `pulumi.warn`."""

from __future__ import annotations

import json
from datetime import date

import pytest

from infra.stack_warnings import (
    capacity_block_rolls,
    config_warnings,
    documentation_accounts,
    documentation_cidrs,
    kubernetes_support,
)
from model.config import parse_config
from plan.cli import compare_with_previous, main
from tests.conftest import planned, stack_config

TODAY = date(2026, 11, 30)
SOURCE = "stacks/Pulumi.t.yaml"


def aws_config(version: str, admin: str = "arn:aws:iam::210987654321:role/admins", **cluster):
    raw = {
        "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "cluster": {"kubernetes_version": version, "admin_principal_arns": [admin], **cluster},
    }
    return parse_config(raw, SOURCE)


def test_documentation_account_ids_are_named_with_their_key():
    # AWS documentation's example account ids (IAM user guide examples): 111122223333,
    # 444455556666, 123456789012, 777788889999.
    for account in ("111122223333", "444455556666", "123456789012", "777788889999"):
        arn = f"arn:aws:iam::{account}:role/admins"
        (warning,) = documentation_accounts(aws_config("1.35", arn))
        assert warning.startswith(f"gpu-platform:cluster.admin_principal_arns[0]: {arn} names")
    assert documentation_accounts(aws_config("1.35")) == []


def test_documentation_cidrs_are_named_with_their_key():
    # RFC 5737, section 3: TEST-NET-1 192.0.2.0/24, TEST-NET-2 198.51.100.0/24 and TEST-NET-3
    # 203.0.113.0/24 are for documentation; a /32 inside one is as unreachable as the block.
    for block, cidr in (
        ("192.0.2.0/24", "192.0.2.0/24"),
        ("198.51.100.0/24", "198.51.100.7/32"),
        ("203.0.113.0/24", "203.0.113.128/25"),
    ):
        cfg = aws_config("1.35", public_access_cidrs=["100.24.0.0/16", cidr])
        (warning,) = documentation_cidrs(cfg)
        assert warning.startswith(
            f"gpu-platform:cluster.public_access_cidrs[1]: {cidr} is in {block}, an RFC 5737"
        )
        assert warning in config_warnings(cfg, TODAY)
    private = aws_config(
        "1.35", endpoint_private_only=True, api_access_cidrs=["10.0.240.0/24", "192.0.2.0/28"]
    )
    (warning,) = documentation_cidrs(private)
    assert warning.startswith("gpu-platform:cluster.api_access_cidrs[1]: 192.0.2.0/28 is in")


def test_real_ranges_and_the_whole_internet_are_not_documentation_cidrs():
    # 0.0.0.0/0 holds every block but is the advisory api-endpoint-world-open's to report;
    # 198.51.0.0/16 and 203.0.112.0/23 border TEST-NET-2 and -3 without being them.
    for cidr in ("0.0.0.0/0", "198.51.0.0/24", "203.0.112.0/24", "192.0.3.0/24"):
        assert documentation_cidrs(aws_config("1.35", public_access_cidrs=[cidr])) == []
    assert documentation_cidrs(aws_config("1.35")) == []


def test_a_minor_in_extended_support_warns_with_its_end_date():
    # EKS "Kubernetes version lifecycle": 1.33 standard support ended 2026-07-29.
    (warning,) = kubernetes_support(aws_config("1.33"), TODAY)
    assert warning.startswith(
        "gpu-platform:cluster.kubernetes_version: 1.33 left EKS standard support on 2026-07-29"
    )
    assert "extended support" in warning


def test_a_minor_close_to_the_end_of_standard_support_warns():
    # EKS "Kubernetes version lifecycle": 1.34 standard support ends 2026-12-02.
    (warning,) = kubernetes_support(aws_config("1.34"), TODAY)
    assert "1.34 leaves EKS standard support on 2026-12-02" in warning


def test_a_minor_in_standard_support_or_an_existing_cluster_does_not_warn():
    assert kubernetes_support(aws_config("1.35"), TODAY) == []
    assert kubernetes_support(aws_config("1.36"), TODAY) == []
    # onprem runs 1.33 on its own cluster: EKS support dates do not apply.
    assert kubernetes_support(stack_config("onprem"), TODAY) == []


def test_the_plan_captures_the_programs_warnings_on_the_shipped_dev():
    # stacks/Pulumi.dev.yaml: an example account and a TEST-NET-3 endpoint range; the last,
    # the unconfirmed eks-node-monitoring-agent build (tests/model/test_versions.py).
    account, cidr, unconfirmed = planned("dev").warnings
    assert unconfirmed.startswith("UNCONFIRMED add-on build: eks-node-monitoring-agent")
    assert account.startswith(
        "gpu-platform:cluster.admin_principal_arns[0]: "
        "arn:aws:iam::111122223333:role/platform-admins names 111122223333"
    )
    assert cidr.startswith(
        "gpu-platform:cluster.public_access_cidrs[0]: 203.0.113.0/24 is in 203.0.113.0/24"
    )


def _group(name, capacity, version="1.35"):
    return {
        "type": "aws:eks/nodeGroup:NodeGroup",
        "name": name,
        "inputs": {"capacityType": capacity, "version": version},
    }


def _template(name, user_data):
    return {"type": "aws:ec2/launchTemplate:LaunchTemplate", "name": name, "inputs": {
        "userData": user_data, "instanceType": "p5.48xlarge"}}  # fmt: skip


def test_a_changed_launch_template_of_a_capacity_block_group_warns():
    before = [_group("b", "CAPACITY_BLOCK"), _template("b", "AAA"),
              _group("o", "ON_DEMAND"), _template("o", "AAA")]  # fmt: skip
    after = [_group("b", "CAPACITY_BLOCK"), _template("b", "BBB"),
             _group("o", "ON_DEMAND"), _template("o", "BBB")]  # fmt: skip
    (warning,) = capacity_block_rolls(before, after)
    assert warning.startswith("node group b (Capacity Block): userData changed")
    assert "desired size be 0" in warning
    assert capacity_block_rolls(before, before) == []


def test_a_version_change_rolls_a_capacity_block_group():
    before = [_group("b", "CAPACITY_BLOCK", "1.35"), _template("b", "AAA")]
    after = [_group("b", "CAPACITY_BLOCK", "1.36"), _template("b", "AAA")]
    (warning,) = capacity_block_rolls(before, after)
    assert warning.startswith("node group b (Capacity Block): version changed")


def test_prod_compares_with_its_previous_plan(tmp_path):
    plan = planned("prod")
    previous = tmp_path / "resources.json"
    note = compare_with_previous(plan, previous)
    assert note == f"No previous plan at {previous}: Capacity Block rolls not checked."
    doc = json.loads(plan.to_json())
    for resource in doc["resources"]:
        if resource["name"] == "prod-h100-block" and "launchTemplate" in resource["type"]:
            resource["inputs"]["userData"] = "b2xk"
    previous.write_text(json.dumps(doc))
    warnings = list(plan.warnings)
    try:
        assert compare_with_previous(plan, previous) is None
        assert plan.warnings[-1].startswith("node group prod-h100-block (Capacity Block)")
    finally:
        plan.warnings[:] = warnings


@pytest.mark.usefixtures("cli_on_session_plans")
def test_main_prints_a_warnings_section(tmp_path, capsys):
    assert main(["dev", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "Warnings:\n  - gpu-platform:cluster.admin_principal_arns[0]:" in printed
