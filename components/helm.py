"""Resources several components declare the same way."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.iam import account_id
from components.registry_mirror import mirrored_values
from model.versions import CHARTS


def pinned_release(
    resource_name: str,
    chart_key: str,
    namespace: str,
    values: dict,
    opts: pulumi.ResourceOptions,
    *,
    mirror: str | None,
) -> k8s.helm.v3.Release:
    """A Helm release of an upstream chart at the version pinned in model/versions.py, named
    after the chart so its objects keep upstream names; its images from `mirror`, where the
    stack has one (`images.registry_mirror`)."""
    chart = CHARTS[chart_key]
    # An OCI chart is named by its full reference, without repository options (Helm has no
    # `repo add` for OCI registries).
    oci = chart.repository.startswith("oci://")
    return k8s.helm.v3.Release(
        resource_name,
        k8s.helm.v3.ReleaseArgs(
            name=chart.name,
            chart=f"{chart.repository}/{chart.name}" if oci else chart.name,
            version=chart.version,
            repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository),
            namespace=namespace,
            values=mirrored_values(chart_key, values, mirror),
        ),
        opts,
    )


# Every AWS principal (narrowed by the conditions that go with it): how AWS's own key
# policies let a service act for whoever in the account calls it.
ANYONE = {"AWS": "*"}


def account_administers(account: str) -> dict:
    """The account itself may administer and use the key, through IAM policies. Without this
    statement only the principals named in the key policy could ever change it, and a key
    whose policy names no administrator can be recovered only through AWS Support (AWS KMS
    developer guide, "Default key policy": "Allows access to the AWS account and enables IAM
    policies")."""
    return {
        "Sid": "AccountAdministers",
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
        "Action": "kms:*",
        "Resource": "*",
    }


def eks_secrets_key_policy(account: str, cluster_role_arn: str) -> str:
    """The cluster role envelope-encrypts Kubernetes secrets: it encrypts, decrypts and lets
    EKS hold a grant for the control plane (EKS user guide, "Encrypt Kubernetes secrets with
    KMS")."""
    return key_policy(
        account,
        {
            "Sid": "ClusterRoleEncryptsSecrets",
            "Effect": "Allow",
            "Principal": {"AWS": cluster_role_arn},
            "Action": ["kms:Encrypt", "kms:Decrypt", "kms:DescribeKey", "kms:ListGrants"],
            "Resource": "*",
        },
        {
            "Sid": "ClusterRoleGrantsToEks",
            "Effect": "Allow",
            "Principal": {"AWS": cluster_role_arn},
            "Action": "kms:CreateGrant",
            "Resource": "*",
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
    )


def fsx_key_policy(account: str, region: str) -> str:
    """FSx uses the key through grants, on behalf of principals of this account only (the
    statement AWS's own aws/fsx key carries)."""
    return key_policy(
        account,
        {
            "Sid": "FsxUsesTheKeyForThisAccount",
            "Effect": "Allow",
            "Principal": ANYONE,
            "Action": [
                "kms:Encrypt",
                "kms:Decrypt",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:CreateGrant",
                "kms:DescribeKey",
            ],
            "Resource": "*",
            "Condition": {
                "StringEquals": {
                    "kms:ViaService": f"fsx.{region}.amazonaws.com",
                    "kms:CallerAccount": account,
                }
            },
        },
    )


def log_group_key_policy(account: str, region: str, log_group_name: str) -> str:
    """CloudWatch Logs encrypts one log group with the key, and nothing else (CloudWatch Logs
    user guide, "Encrypt log data in CloudWatch Logs using AWS Key Management Service")."""
    return key_policy(
        account,
        {
            "Sid": "LogsEncryptsThisLogGroup",
            "Effect": "Allow",
            "Principal": {"Service": f"logs.{region}.amazonaws.com"},
            "Action": [
                "kms:Encrypt*",
                "kms:Decrypt*",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:Describe*",
            ],
            "Resource": "*",
            "Condition": {
                "ArnEquals": {
                    "kms:EncryptionContext:aws:logs:arn": log_group_arn(
                        account, region, log_group_name
                    )
                }
            },
        },
    )


def log_group_arn(account: str, region: str, name: str) -> str:
    return f"arn:aws:logs:{region}:{account}:log-group:{name}"


def key_policy(account: str, *users: dict) -> str:
    return json.dumps(
        {"Version": "2012-10-17", "Statement": [account_administers(account), *users]}
    )


def privileged_namespace(
    resource_name: str, name: str, labels: dict[str, str], parent: pulumi.Resource
) -> k8s.core.v1.Namespace:
    """A namespace whose pods Pod Security admits privileged: for operators whose DaemonSets
    reach into the host (drivers, device plugins, CNI, storage daemons)."""
    return k8s.core.v1.Namespace(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=name, labels={**labels, "pod-security.kubernetes.io/enforce": "privileged"}
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def rotated_kms_key(
    resource_name: str,
    description: str,
    alias: str,
    parent: pulumi.Resource,
    protect: bool,
    policy: pulumi.Input[str],
) -> aws.kms.Key:
    """A customer-managed key with yearly rotation, an explicit key policy and an alias,
    children of `parent`."""
    key = aws.kms.Key(
        resource_name,
        aws.kms.KeyArgs(
            description=description,
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=policy,
        ),
        pulumi.ResourceOptions(parent=parent, protect=protect),
    )
    aws.kms.Alias(
        resource_name,
        aws.kms.AliasArgs(name=f"alias/{alias}", target_key_id=key.key_id),
        pulumi.ResourceOptions(parent=parent),
    )
    return key


def declare_log_group(
    resource_name: str,
    name: str,
    retention_days: int,
    kms_key_arn: str | None,
    create_kms_key: bool,
    region: str,
    parent: pulumi.Resource,
    protect: bool,
) -> aws.cloudwatch.LogGroup:
    """A log group with the configured retention, encrypted with the given key, a key created
    for it alone, or (neither) CloudWatch Logs' own encryption."""
    kms_key_id: pulumi.Input[str] | None = kms_key_arn
    if create_kms_key:
        key = rotated_kms_key(
            f"{resource_name}-key",
            f"CloudWatch Logs encryption of {name}",
            f"gpu-platform{name.replace('/', '-')}",
            parent,
            protect,
            account_id(parent).apply(lambda account: log_group_key_policy(account, region, name)),
        )
        kms_key_id = key.arn
    return aws.cloudwatch.LogGroup(
        resource_name,
        aws.cloudwatch.LogGroupArgs(
            name=name, retention_in_days=retention_days, kms_key_id=kms_key_id
        ),
        pulumi.ResourceOptions(parent=parent),
    )
