"""Customer-managed KMS keys: yearly rotation, an alias, and key policies that name who uses
each key and let the account administer it through IAM."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

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


def key_policy(account: str, *users: dict) -> str:
    return json.dumps(
        {"Version": "2012-10-17", "Statement": [account_administers(account), *users]}
    )


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
