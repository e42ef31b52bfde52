"""Least privilege and hygiene on AWS: what each role may do, key policies, log groups and the
data bucket's lifecycle. Expected values are the documented facts, written out."""

from __future__ import annotations

import json

import pytest

from components.autoscaler import iam_policy
from components.fsx_csi import dynamic_provisioning_policy, fsx_csi_values
from infra.plan import run_program
from tests.conftest import AWS_STACKS, find, make_project, planned

RELEASE = "kubernetes:helm.sh/v3:Release"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"


def small_stack(**storage_fsx) -> dict:
    return {
        "gpu-platform:aws": {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]},
        "gpu-platform:storage": {"fsx": storage_fsx},
    }


# -------------------------------------------------------------------------- FSx CSI driver


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_static_provisioning_gives_the_fsx_csi_driver_no_aws_permission(stack):
    # A static PV is mounted by the node plugin from its dnsname and mountname; the
    # controller's CreateVolume/DeleteVolume (the only FSx API callers in
    # kubernetes-sigs/aws-fsx-csi-driver pkg/driver/controller.go) run only for a StorageClass.
    plan = planned(stack)
    assert not [r for r in plan.of_type(POD_IDENTITY) if "fsx" in r.name]
    assert not [r for r in plan.of_type(ROLE_POLICY) if "fsx" in r.name]
    values = find(plan, RELEASE, f"{stack}-fsx-csi").inputs["values"]
    assert "extraTags" not in values["controller"]


def test_dynamic_provisioning_creates_only_tagged_file_systems_and_spares_the_platforms():
    policy = json.loads(
        dynamic_provisioning_policy(
            "gpu-platform-dev", "arn:aws:fsx:us-east-1:111122223333:file-system/fs-0123"
        )
    )
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    create = by_sid["CreateOwnedFileSystems"]
    # FSx user guide, "Grant permission to tag resources during creation": tags given to
    # CreateFileSystem are also authorised as fsx:TagResource.
    assert sorted(create["Action"]) == ["fsx:CreateFileSystem", "fsx:TagResource"]
    assert create["Condition"] == {
        "StringEquals": {"aws:RequestTag/fsx.csi.aws.com/cluster": "gpu-platform-dev"}
    }
    change = by_sid["ResizeAndDeleteOwnedFileSystems"]
    assert sorted(change["Action"]) == ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem"]
    assert change["Condition"] == {
        "StringEquals": {"aws:ResourceTag/fsx.csi.aws.com/cluster": "gpu-platform-dev"}
    }
    deny = by_sid["NeverThePlatformFileSystem"]
    assert deny["Effect"] == "Deny"
    assert deny["Resource"] == "arn:aws:fsx:us-east-1:111122223333:file-system/fs-0123"
    assert "fsx:DeleteFileSystem" in deny["Action"] and "fsx:TagResource" in deny["Action"]
    granted = {a for s in policy["Statement"] if s["Effect"] == "Allow" for a in _list(s)}
    # The old grant let the driver create, update and delete any file system unconditionally.
    for statement in policy["Statement"]:
        if statement["Effect"] == "Allow" and statement["Resource"] == "*":
            unconditioned = set(_list(statement)) - {"fsx:DescribeFileSystems"}
            assert not unconditioned or "Condition" in statement
    assert "s3:ListBucket" not in granted


def _list(statement) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_dynamic_mode_tags_what_the_controller_creates():
    # aws-fsx-csi-driver chart 1.17.0 values.yaml: `controller.extraTags`, "Extra tags to
    # attach to each dynamically provisioned file system".
    values = fsx_csi_values("eu-west-1", "gpu-platform-x", dynamic=True)
    assert values["controller"]["extraTags"] == {"fsx.csi.aws.com/cluster": "gpu-platform-x"}


def test_dynamic_mode_gives_the_controller_its_role(tmp_path):
    project = make_project(tmp_path, {"x": small_stack(csi_provisioning="dynamic")})
    recording = run_program("x", project)
    by_name = {(r.type, r.name): r for r in recording.resources.values()}
    association = by_name[(POD_IDENTITY, "x-fsx-csi")].raw_inputs
    assert association["serviceAccount"] == "fsx-csi-controller-sa"
    assert association["namespace"] == "kube-system"
    assert (ROLE_POLICY, "x-fsx-csi") in by_name


# ----------------------------------------------------------------------------- data bucket


def test_versioned_bucket_expires_old_versions_and_abandoned_uploads():
    plan = planned("dev")
    rules = find(plan, LIFECYCLE, "dev-fsx-data").inputs["rules"]
    assert len(rules) == 1
    rule = rules[0]
    assert rule["status"] == "Enabled"
    # Default of storage.fsx.data_repository.noncurrent_version_expiration_days.
    assert rule["noncurrentVersionExpiration"]["noncurrentDays"] == 30
    assert rule["abortIncompleteMultipartUpload"]["daysAfterInitiation"] == 7
    assert rule["filter"] == {}
    assert find(plan, LIFECYCLE, "dev-fsx-data").inputs["bucket"] == (
        "(known after apply: dev-fsx-data.id)"
    )


def test_noncurrent_version_expiration_follows_the_config(tmp_path):
    stack = small_stack(data_repository={"noncurrent_version_expiration_days": 90})
    recording = run_program("x", make_project(tmp_path, {"x": stack}))
    (lifecycle,) = [r for r in recording.resources.values() if r.type == LIFECYCLE]
    assert lifecycle.raw_inputs["rules"][0]["noncurrentVersionExpiration"]["noncurrentDays"] == 90


# ------------------------------------------------------------------------ cluster-autoscaler


def test_autoscaler_describes_only_this_clusters_node_groups():
    policy = json.loads(iam_policy("gpu-platform-dev", "us-east-1", "111122223333"))
    (describe,) = [s for s in policy["Statement"] if "eks:DescribeNodegroup" in s["Action"]]
    # Service Authorization Reference, Amazon EKS: the nodegroup resource is
    # arn:${Partition}:eks:${Region}:${Account}:nodegroup/${ClusterName}/${NodegroupName}/${UUID}.
    assert describe["Resource"] == "arn:aws:eks:us-east-1:111122223333:nodegroup/gpu-platform-dev/*"
    assert describe["Action"] == ["eks:DescribeNodegroup"]
    (unscoped,) = [s for s in policy["Statement"] if s["Resource"] == "*" and "Condition" not in s]
    # The reads cluster-autoscaler's AWS README lists that IAM allows only on "*".
    assert sorted(unscoped["Action"]) == [
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLaunchConfigurations",
        "autoscaling:DescribeScalingActivities",
        "autoscaling:DescribeTags",
        "ec2:DescribeImages",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:GetInstanceTypesFromInstanceRequirements",
    ]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_plan_names_the_deploying_account_in_the_autoscaler_policy(stack):
    plan = planned(stack)
    policy = json.loads(find(plan, ROLE_POLICY, f"{stack}-cluster-autoscaler").inputs["policy"])
    (describe,) = [s for s in policy["Statement"] if "eks:DescribeNodegroup" in s["Action"]]
    region = plan.outputs["region"]
    assert describe["Resource"] == (
        f"arn:aws:eks:{region}:(from the deploying credentials: accountId):"
        f"nodegroup/gpu-platform-{stack}/*"
    )
