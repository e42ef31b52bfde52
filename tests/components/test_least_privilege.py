"""Least privilege and hygiene on AWS: what each role may do, key policies, log groups and the
data bucket's lifecycle. Expected values are the documented facts, written out."""

from __future__ import annotations

import json

import pytest

from components.data.cluster_autoscaler import iam_policy
from components.kms import eks_secrets_key_policy, fsx_key_policy
from components.log_groups import log_group_key_policy
from components.storage.fsx_csi import dynamic_provisioning_policy, fsx_csi_values
from model.config import ConfigError, parse_config
from plan.engine import run_program
from tests.conftest import AWS_STACKS, find, make_project, planned
from tests.helpers.bad_stacks import first_round

RELEASE = "kubernetes:helm.sh/v3:Release"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"


ADMIN = "arn:aws:iam::210987654321:role/platform-admins"
EU_WEST = {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]}


def small_stack(**storage_fsx) -> dict:
    return {
        "gpu-platform:aws": {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]},
        "gpu-platform:cluster": {"admin_principal_arns": [ADMIN]},
        "gpu-platform:storage": {"fsx": storage_fsx},
    }


# -------------------------------------------------------------------------- FSx CSI driver


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_static_provisioning_gives_the_fsx_csi_driver_no_aws_permission(stack):
    # A static PV is mounted by the node plugin from its dnsname and mountname. The FSx calls
    # of kubernetes-sigs/aws-fsx-csi-driver are all in the controller (pkg/driver/controller.go:
    # CreateVolume, DeleteVolume, ControllerExpandVolume, ValidateVolumeCapabilities), which
    # serves volumes a StorageClass provisions, never the mount of a static one.
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


# ------------------------------------------------------------------------------- KMS keys

ACCOUNT = "111122223333"
ROOT_ADMIN = {
    "Sid": "AccountAdministers",
    "Effect": "Allow",
    # AWS KMS developer guide, "Default key policy": the account root principal with kms:*,
    # so IAM policies can always administer the key.
    "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
    "Action": "kms:*",
    "Resource": "*",
}


def test_eks_secrets_key_is_administered_by_the_account_and_used_by_the_cluster_role():
    role = "arn:aws:iam::111122223333:role/dev-eks-cluster"
    statements = json.loads(eks_secrets_key_policy(ACCOUNT, role))["Statement"]
    assert statements[0] == ROOT_ADMIN
    use, grant = statements[1:]
    assert use["Principal"] == {"AWS": role} and grant["Principal"] == {"AWS": role}
    assert sorted(use["Action"]) == [
        "kms:Decrypt",
        "kms:DescribeKey",
        "kms:Encrypt",
        "kms:ListGrants",
    ]
    assert grant["Action"] == "kms:CreateGrant"
    assert grant["Condition"] == {"Bool": {"kms:GrantIsForAWSResource": "true"}}


def test_fsx_key_is_used_only_through_fsx_for_this_account():
    statements = json.loads(fsx_key_policy(ACCOUNT, "eu-west-1"))["Statement"]
    assert statements[0] == ROOT_ADMIN
    (fsx,) = statements[1:]
    # The conditions of AWS's own aws/fsx key policy.
    assert fsx["Condition"] == {
        "StringEquals": {
            "kms:ViaService": "fsx.eu-west-1.amazonaws.com",
            "kms:CallerAccount": "111122223333",
        }
    }
    assert "kms:CreateGrant" in fsx["Action"]


def test_log_key_serves_only_its_own_log_group():
    statements = json.loads(
        log_group_key_policy(ACCOUNT, "eu-west-1", "/aws/eks/gpu-platform-x/cluster")
    )["Statement"]
    assert statements[0] == ROOT_ADMIN
    (logs,) = statements[1:]
    # CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs using AWS KMS".
    assert logs["Principal"] == {"Service": "logs.eu-west-1.amazonaws.com"}
    assert logs["Condition"] == {
        "ArnEquals": {
            "kms:EncryptionContext:aws:logs:arn": (
                "arn:aws:logs:eu-west-1:111122223333:log-group:/aws/eks/gpu-platform-x/cluster"
            )
        }
    }


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_key_the_plan_declares_has_an_explicit_policy_with_an_administrator(stack):
    keys = planned(stack).of_type("aws:kms/key:Key")
    assert keys
    for key in keys:
        statements = json.loads(key.inputs["policy"])["Statement"]
        assert statements[0]["Principal"] == {
            "AWS": "arn:aws:iam::(from the deploying credentials: accountId):root"
        }, key.name
        assert key.inputs["enableKeyRotation"] is True


def test_secrets_key_names_the_cluster_role_it_serves():
    key = find(planned("dev"), "aws:kms/key:Key", "dev-eks-secrets")
    principals = [s["Principal"] for s in json.loads(key.inputs["policy"])["Statement"][1:]]
    assert principals == [{"AWS": "(known after apply: dev-eks-cluster.arn)"}] * 2


# ----------------------------------------------------------------------------- log groups

LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"


def test_production_keeps_flow_and_audit_logs_for_a_year():
    cluster = {"admin_principal_arns": [ADMIN], "api_access_cidrs": ["10.0.240.0/24"]}
    cfg = parse_config({"production": True, "aws": EU_WEST, "cluster": cluster}, "test")
    assert cfg.network.flow_log_retention_days == 365
    assert cfg.cluster.log_retention_days == 365
    plain = parse_config({"aws": EU_WEST, "cluster": {"admin_principal_arns": [ADMIN]}}, "t")
    assert plain.cluster.log_retention_days == 90


def test_prod_log_groups_keep_a_year():
    plan = planned("prod")
    groups = {g.inputs["name"]: g.inputs["retentionInDays"] for g in plan.of_type(LOG_GROUP)}
    assert groups == {
        "/aws/eks/gpu-platform-prod/cluster": 365,
        "/gpu-platform/prod/vpc-flow-logs": 365,
    }


def test_created_log_keys_encrypt_their_log_groups(tmp_path):
    stack = small_stack()
    stack["gpu-platform:cluster"] = {"admin_principal_arns": [ADMIN], "create_log_kms_key": True}
    stack["gpu-platform:network"] = {"flow_logs": True, "create_flow_log_kms_key": True}
    recording = run_program("x", make_project(tmp_path, {"x": stack}))
    by_name = {(r.type, r.name): r.raw_inputs for r in recording.resources.values()}
    eks_logs = by_name[(LOG_GROUP, "x-eks-logs")]
    assert eks_logs["kmsKeyId"] == "(known after apply: x-eks-logs-key.arn)"
    flow_logs = by_name[(LOG_GROUP, "x-flow-logs")]
    assert flow_logs["kmsKeyId"] == "(known after apply: x-flow-logs-key.arn)"
    policy = json.loads(by_name[("aws:kms/key:Key", "x-flow-logs-key")]["policy"])
    assert policy["Statement"][1]["Principal"] == {"Service": "logs.eu-west-1.amazonaws.com"}


def test_a_given_log_key_is_used_as_is():
    arn = "arn:aws:kms:eu-west-1:111122223333:key/0123abcd-0123-abcd-0123-0123456789ab"
    cfg = parse_config(
        {
            "aws": EU_WEST,
            "cluster": {"admin_principal_arns": [ADMIN], "log_kms_key_arn": arn},
        },
        "t",
    )
    assert cfg.cluster.log_kms_key_arn == arn


@pytest.mark.parametrize(
    ("section", "arn_key", "create_key"),
    [
        ("cluster", "log_kms_key_arn", "create_log_kms_key"),
        ("network", "flow_log_kms_key_arn", "create_flow_log_kms_key"),
    ],
)
def test_a_log_key_is_given_or_created_not_both(section, arn_key, create_key):
    arn = "arn:aws:kms:eu-west-1:111122223333:key/0123abcd-0123-abcd-0123-0123456789ab"
    with pytest.raises(ConfigError) as error:
        parse_config(
            {
                "aws": {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]},
                section: {arn_key: arn, create_key: True},
            },
            "t",
        )
    assert first_round(error.value.problems) == [
        f"gpu-platform:{section}.{create_key}: set {arn_key} or {create_key}, not both"
    ]


def test_lifecycle_rules_wait_for_versioning():
    plan = planned("dev")
    lifecycle = find(plan, LIFECYCLE, "dev-fsx-data")
    versioning = find(plan, "aws:s3/bucketVersioning:BucketVersioning", "dev-fsx-data")
    assert versioning.urn in lifecycle.dependencies
