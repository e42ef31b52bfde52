"""CloudWatch log groups with the configured retention, encrypted with a key of their own or a
given one."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components.iam import account_id
from components.kms import key_policy, rotated_kms_key


def log_group_arn(account: str, region: str, name: str) -> str:
    return f"arn:aws:logs:{region}:{account}:log-group:{name}"


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
