"""IAM documents and roles shared by components."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

# Pod Identity and EKS itself assume roles with session tags.
_ASSUME_WITH_TAGS = ["sts:AssumeRole", "sts:TagSession"]


def account_id(parent: pulumi.Resource) -> pulumi.Output[str]:
    """The account the stack deploys into, as the parent's AWS provider sees it (no account id
    in config to drift from the credentials)."""
    return aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent)).account_id


def service_trust_policy(service: str, actions: Sequence[str] = ("sts:AssumeRole",)) -> str:
    """A trust policy that lets one AWS service assume the role."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}
            ],
        }
    )


def pod_identity_trust_policy() -> str:
    """Trust for EKS Pod Identity: the agent assumes the role with session tags."""
    return service_trust_policy("pods.eks.amazonaws.com", _ASSUME_WITH_TAGS)


def eks_trust_policy() -> str:
    return service_trust_policy("eks.amazonaws.com", _ASSUME_WITH_TAGS)


def role_with_policies(
    name: str,
    trust_policy: str,
    managed_policy_arns: Sequence[str],
    parent: pulumi.Resource,
    inline_policy: pulumi.Input[str] | None = None,
) -> aws.iam.Role:
    """A role, its managed policy attachments and an optional inline policy, all children of
    `parent`."""
    role = aws.iam.Role(
        name,
        aws.iam.RoleArgs(assume_role_policy=trust_policy),
        pulumi.ResourceOptions(parent=parent),
    )
    for arn in managed_policy_arns:
        aws.iam.RolePolicyAttachment(
            f"{name}-{arn.rsplit('/', 1)[-1]}",
            aws.iam.RolePolicyAttachmentArgs(role=role.name, policy_arn=arn),
            pulumi.ResourceOptions(parent=parent),
        )
    if inline_policy is not None:
        aws.iam.RolePolicy(
            name,
            aws.iam.RolePolicyArgs(role=role.id, policy=inline_policy),
            pulumi.ResourceOptions(parent=parent),
        )
    return role
