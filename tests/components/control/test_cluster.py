"""Control plane builders, and the EKS cluster (or existing cluster) each stack declares."""

from __future__ import annotations

import json

import pytest
import yaml

from components.control.cluster import (
    POD_IDENTITY_AGENT,
    addons_for,
    endpoint_access,
    kubeconfig,
)
from model.config import ClusterSettings
from model.versions import MANAGED_ADDONS, SUPPORTED_KUBERNETES_VERSIONS
from tests.conftest import AWS_STACKS, find, planned, stack_config

ADDON = "aws:eks/addon:Addon"


def test_kubeconfig_uses_aws_cli_token_and_holds_no_credential():
    doc = yaml.safe_load(kubeconfig("c1", "https://x.eks.amazonaws.com", "Q0E=", "eu-west-1"))
    assert doc["current-context"] == "c1"
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://x.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }
    user = doc["users"][0]["user"]
    assert set(user) == {"exec"}
    assert user["exec"]["args"] == [
        "eks", "get-token", "--cluster-name", "c1", "--region", "eu-west-1",
    ]  # fmt: skip


def test_private_endpoint_drops_public_access():
    private = endpoint_access(
        ClusterSettings(endpoint_private_only=True, api_access_cidrs=["10.8.0.0/24"])
    )
    assert private == {
        "endpoint_private_access": True,
        "endpoint_public_access": False,
        "public_access_cidrs": None,
    }
    public = endpoint_access(ClusterSettings(public_access_cidrs=["198.51.100.0/24"]))
    assert public["endpoint_public_access"] is True
    assert public["public_access_cidrs"] == ["198.51.100.0/24"]


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_addon_is_pinned_for_every_supported_version(version):
    before = addons_for(version, needs_nodes=False)
    after = addons_for(version, needs_nodes=True)
    assert {a.name for a, _ in before + after} == {a.name for a in MANAGED_ADDONS}
    assert {a.name for a, _ in after} == {
        "coredns",
        "aws-ebs-csi-driver",
        "eks-node-monitoring-agent",
    }
    for _, pinned in before + after:
        assert pinned.startswith("v") and "-eksbuild." in pinned


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_cluster_encrypts_secrets_logs_and_uses_access_entries(stack):
    plan = planned(stack)
    cluster = find(plan, "aws:eks/cluster:Cluster", f"{stack}-eks")
    inputs = cluster.inputs
    assert inputs["name"] == f"gpu-platform-{stack}"
    assert inputs["encryptionConfig"] == {
        "provider": {"keyArn": f"(known after apply: {stack}-eks-secrets.arn)"},
        "resources": ["secrets"],
    }
    assert inputs["accessConfig"]["authenticationMode"] == "API"
    assert set(inputs["enabledClusterLogTypes"]) == {
        "api", "audit", "authenticator", "controllerManager", "scheduler",
    }  # fmt: skip
    assert inputs["bootstrapSelfManagedAddons"] is False
    assert len(inputs["vpcConfig"]["subnetIds"]) >= 2
    key = find(plan, "aws:kms/key:Key", f"{stack}-eks-secrets")
    assert key.inputs["enableKeyRotation"] is True
    log_group = find(plan, "aws:cloudwatch/logGroup:LogGroup", f"{stack}-eks-logs")
    assert log_group.inputs["name"] == f"/aws/eks/gpu-platform-{stack}/cluster"
    assert log_group.urn in cluster.dependencies


@pytest.mark.parametrize(("stack", "private"), [("dev", False), ("staging", True), ("prod", True)])
def test_shipped_endpoint_exposure_per_environment(stack, private):
    vpc = find(planned(stack), "aws:eks/cluster:Cluster", f"{stack}-eks").inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True
    assert vpc["endpointPublicAccess"] is not private
    assert ("publicAccessCidrs" in vpc) is not private


@pytest.mark.parametrize(("stack", "admins"), [("dev", 1), ("staging", 1), ("prod", 2)])
def test_shipped_admin_roles_get_access_entries_with_cluster_admin(stack, admins):
    plan = planned(stack)
    entries = plan.of_type("aws:eks/accessEntry:AccessEntry")
    policies = plan.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert len(entries) == len(policies) == admins
    for policy in policies:
        # EKS user guide, "Access policy permissions": AmazonEKSClusterAdminPolicy.
        assert policy.inputs["policyArn"] == (
            "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
        )
        assert policy.inputs["accessScope"] == {"type": "cluster"}


def test_only_production_stacks_protect_the_cluster_and_its_key():
    # The expectation comes from each stack's own `production`, so a user's production stack
    # holds it as prod does.
    for stack in AWS_STACKS:
        plan = planned(stack)
        protected = sorted(
            r.name for r in plan.resources if r.protect and plan.plane_of(r) == "control"
        )
        production = stack_config(stack).production
        assert protected == ([f"{stack}-eks", f"{stack}-eks-secrets"] if production else [])


def test_the_shipped_prod_refuses_deletion_of_its_cluster():
    prod = find(planned("prod"), "aws:eks/cluster:Cluster", "prod-eks")
    assert prod.inputs["deletionProtection"] is True


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_addons_pinned_to_the_stack_version_with_pod_identity(stack):
    plan = planned(stack)
    version = plan.outputs["kubernetes_version"]
    addons = {a.inputs["addonName"]: a for a in plan.of_type(ADDON)}
    assert set(addons) == {a.name for a in MANAGED_ADDONS}
    for spec in MANAGED_ADDONS:
        addon = addons[spec.name]
        assert addon.inputs["addonVersion"] == spec.versions[version]
        if spec.service_account:
            (association,) = addon.inputs["podIdentityAssociations"]
            assert association["serviceAccount"] == spec.service_account
            assert addons[POD_IDENTITY_AGENT].urn in addon.dependencies


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_pod_identity_roles_trust_only_the_pod_identity_service(stack):
    plan = planned(stack)
    for name in (f"{stack}-vpc-cni", f"{stack}-aws-ebs-csi-driver"):
        role = find(plan, "aws:iam/role:Role", name)
        (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
        assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]


def test_existing_cluster_declares_no_aws_resource():
    plan = planned("onprem")
    assert not [r for r in plan.resources if r.type.startswith(("aws:", "pulumi:providers:aws"))]
    (provider,) = plan.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == "~/.kube/onprem-a100.yaml"
    assert plan.outputs["cluster_name"] == "onprem-a100"


def test_aws_stacks_export_what_later_components_wire_to():
    outputs = planned("staging").outputs
    for key in (
        "cluster_name", "cluster_endpoint", "kubeconfig", "vpc_id", "private_subnet_ids",
        "public_subnet_ids", "efa_security_group_id", "oidc_provider_arn", "region",
    ):  # fmt: skip
        assert key in outputs
    assert len(outputs["private_subnet_ids"]) == 3
