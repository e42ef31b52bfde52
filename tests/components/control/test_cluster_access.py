"""Who can reach and use the Kubernetes API on the first `up`, and which EKS support tier a
minor lands in."""

from __future__ import annotations

from datetime import date

import pytest

from components.control.cluster import api_ingress_rules, support_type
from model.config import ClusterSettings, ConfigError, parse_config
from model.versions import END_OF_STANDARD_SUPPORT, in_extended_support
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import AWS_STACKS, find, make_project, planned
from tests.helpers.bad_stacks import first_round

SOURCE = "stacks/Pulumi.bad.yaml"
REGION = {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]}
ADMIN = "arn:aws:iam::111122223333:role/platform-admins"


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, SOURCE)
    return caught.value.problems


def test_an_aws_stack_that_grants_nobody_is_refused():
    (problem,) = problems({"aws": REGION})
    assert problem.startswith("gpu-platform:cluster.admin_principal_arns: empty")


def test_admin_principals_take_roles_and_users():
    user = "arn:aws:iam::111122223333:user/ci-deployer"
    cfg = parse_config({"aws": REGION, "cluster": {"admin_principal_arns": [ADMIN, user]}}, SOURCE)
    assert cfg.cluster.admin_principal_arns == [ADMIN, user]
    (problem,) = first_round(
        problems(
            {"aws": REGION, "cluster": {"admin_principal_arns": ["arn:aws:iam::1111:group/admins"]}}
        )
    )
    assert problem.startswith("gpu-platform:cluster.admin_principal_arns[0]: ")
    assert "is not an IAM role or user ARN: arn:aws:iam::<12-digit account id>:role/" in problem


def test_a_private_endpoint_nobody_can_reach_is_refused():
    cluster = {"admin_principal_arns": [ADMIN], "endpoint_private_only": True}
    (problem,) = problems({"aws": REGION, "cluster": cluster})
    assert problem.startswith("gpu-platform:cluster.api_access_cidrs: endpoint_private_only")
    assert "api_access_security_group_ids" in problem


def test_runner_ingress_is_https_only_and_described():
    rules = api_ingress_rules(
        ClusterSettings(
            endpoint_private_only=True,
            api_access_cidrs=["10.8.0.0/24"],
            api_access_security_group_ids=["sg-0123456789abcdef0"],
        )
    )
    # EKS user guide, "Cluster API server endpoint": the private endpoint answers on TCP 443.
    assert rules == [
        {
            "ip_protocol": "tcp", "from_port": 443, "to_port": 443,
            "cidr_ipv4": "10.8.0.0/24", "description": "Kubernetes API from 10.8.0.0/24",
        },
        {
            "ip_protocol": "tcp", "from_port": 443, "to_port": 443,
            "referenced_security_group_id": "sg-0123456789abcdef0",
            "description": "Kubernetes API from security group sg-0123456789abcdef0",
        },
    ]  # fmt: skip


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_private_stacks_admit_their_runner_range_to_the_cluster_security_group(stack):
    plan = planned(stack)
    (rule,) = [
        r
        for r in plan.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.name.startswith(f"{stack}-api-access-")
    ]
    assert rule.inputs["cidrIpv4"] == "10.8.0.0/24"
    assert (rule.inputs["fromPort"], rule.inputs["toPort"]) == (443, 443)
    assert rule.inputs["securityGroupId"].startswith("(known after apply")
    assert rule.inputs["description"]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_kubernetes_provider_waits_for_access_entries_and_policies(stack):
    plan = planned(stack)
    (provider,) = plan.of_type("pulumi:providers:kubernetes")
    access = plan.of_type("aws:eks/accessEntry:AccessEntry") + plan.of_type(
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
    )
    assert access
    for resource in access:
        assert resource.urn in provider.dependencies


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_creator_admin_stays_off_so_every_admin_is_in_state(stack):
    cluster = find(planned(stack), "aws:eks/cluster:Cluster", f"{stack}-eks")
    assert cluster.inputs["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False


def test_end_of_standard_support_dates():
    # EKS user guide, "Kubernetes version lifecycle" (as of 2026-11-30, shared/PINS.md).
    assert END_OF_STANDARD_SUPPORT["1.33"] == date(2026, 7, 29)
    assert END_OF_STANDARD_SUPPORT["1.34"] == date(2026, 12, 2)
    assert END_OF_STANDARD_SUPPORT["1.35"] == date(2027, 3, 27)


def test_extended_support_starts_the_day_after_standard_support_ends():
    today = date(2026, 11, 30)
    assert in_extended_support("1.33", today) is True
    assert in_extended_support("1.34", today) is False
    assert in_extended_support("1.34", date(2026, 12, 3)) is True
    assert in_extended_support("1.36", today) is False


def test_upgrade_policy_is_extended_for_an_extended_minor_or_when_asked():
    today = date(2026, 11, 30)
    assert support_type(ClusterSettings(kubernetes_version="1.33"), today) == "EXTENDED"
    assert support_type(ClusterSettings(kubernetes_version="1.35"), today) == "STANDARD"
    asked = ClusterSettings(kubernetes_version="1.35", extended_support=True)
    assert support_type(asked, today) == "EXTENDED"


def test_default_minor_is_1_35():
    assert ClusterSettings().kubernetes_version == "1.35"


def test_an_aws_stack_on_an_extended_minor_plans_extended_support_and_warns(tmp_path):
    stack = {
        "gpu-platform:aws": REGION,
        "gpu-platform:cluster": {
            "kubernetes_version": "1.33",
            "admin_principal_arns": ["arn:aws:iam::210987654321:role/admins"],
        },
    }
    plan = build_plan(run_program("old", make_project(tmp_path, {"old": stack})))
    cluster = find(plan, "aws:eks/cluster:Cluster", "old-eks")
    # EKS API, UpgradePolicyRequest.supportType: STANDARD | EXTENDED.
    assert cluster.inputs["upgradePolicy"] == {"supportType": "EXTENDED"}
    (warning,) = [w for w in plan.warnings if "kubernetes_version" in w]
    assert "1.33 left EKS standard support on 2026-07-29" in warning
