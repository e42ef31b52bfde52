"""Resources several components declare the same way (components/helm.py): key policies that
keep the account an administrator, log group ARNs, and pinned chart releases. Each key's users
are checked over every stack by test_least_privilege.py, every release's values against its
chart by test_helm_values.py."""

from __future__ import annotations

import json

import pytest

from components.helm import key_policy, log_group_arn
from model.versions import CHARTS
from tests.conftest import STACKS, planned

RELEASE = "kubernetes:helm.sh/v3:Release"


def test_every_key_policy_lets_the_account_administer_the_key_first():
    # AWS KMS developer guide, "Default key policy": the statement that "Allows access to the
    # AWS account and enables IAM policies", principal arn:aws:iam::<account>:root, kms:*.
    user = {"Sid": "U", "Effect": "Allow", "Principal": {"AWS": "x"}, "Action": "kms:Decrypt"}
    doc = json.loads(key_policy("111122223333", user))
    assert doc["Version"] == "2012-10-17"
    assert doc["Statement"] == [
        {
            "Sid": "AccountAdministers",
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
        user,
    ]


def test_a_log_group_arn_is_spelt_as_cloudwatch_logs_spells_it():
    # Service Authorization Reference, CloudWatch Logs resource types:
    # arn:${Partition}:logs:${Region}:${Account}:log-group:${LogGroupName}.
    assert log_group_arn("111122223333", "us-east-1", "/aws/eks/c/cluster") == (
        "arn:aws:logs:us-east-1:111122223333:log-group:/aws/eks/c/cluster"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_is_a_pinned_chart_under_its_own_name(stack):
    """Named after the chart, so its objects keep upstream names; an OCI chart by its full
    reference without repository options (Helm has no `repo add` for OCI registries)."""
    by_name = {c.name: c for c in CHARTS.values()}
    releases = planned(stack).of_type(RELEASE)
    assert releases
    for release in releases:
        inputs = release.inputs
        chart = by_name[inputs["name"]]
        assert inputs["version"] == chart.version, release.name
        if chart.repository.startswith("oci://"):
            assert inputs["chart"] == f"{chart.repository}/{chart.name}"
            assert "repositoryOpts" not in inputs
        else:
            assert inputs["chart"] == chart.name
            assert inputs["repositoryOpts"]["repo"] == chart.repository
