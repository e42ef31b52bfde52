"""The policy tests' raw material: real planned resources, one field changed.

Each case names a stack, the resource to change (type short name and logical name), the change,
and the resource the rule reports on when that is another one (a bucket whose encryption
configuration was removed). `fixes`: the shipped resource fails this advisory rule and the
change makes it pass (the shipped stacks are the failing case).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from plan.policy import subjects
from policy.rules import Context, Subject
from tests.conftest import planned, stack_config

TYPES = {
    "Cluster": "aws:eks/cluster:Cluster",
    "LaunchTemplate": "aws:ec2/launchTemplate:LaunchTemplate",
    "NodeGroup": "aws:eks/nodeGroup:NodeGroup",
    "IngressRule": "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "EgressRule": "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    "DefaultSecurityGroup": "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
    "Fsx": "aws:fsx/lustreFileSystem:LustreFileSystem",
    "Bucket": "aws:s3/bucket:Bucket",
    "BucketEncryption": "aws:s3/bucketServerSideEncryptionConfiguration:"
    "BucketServerSideEncryptionConfiguration",
    "PublicAccessBlock": "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "Lifecycle": "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "LogGroup": "aws:cloudwatch/logGroup:LogGroup",
    "FlowLog": "aws:ec2/flowLog:FlowLog",
    "Vpc": "aws:ec2/vpc:Vpc",
    "KmsKey": "aws:kms/key:Key",
    "RolePolicy": "aws:iam/rolePolicy:RolePolicy",
    "StorageClass": "kubernetes:storage.k8s.io/v1:StorageClass",
    "Job": "kubernetes:batch/v1:Job",
    "JobSet": "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
    "Release": "kubernetes:helm.sh/v3:Release",
    "ClusterQueue": "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
}


def context(stack: str, replaced: Subject | None = None, **changes: Any) -> Context:
    """The stack's planned resources and settings, with `replaced` swapped in by URN."""
    cfg = stack_config(stack)
    resources = tuple(
        replaced if replaced is not None and r.urn == replaced.urn else r
        for r in subjects(planned(stack))
    )
    fields = {"production": cfg.production, "settings": cfg.policy, **changes}
    return Context(resources, **fields)


def find(ctx: Context, short: str, name: str) -> Subject:
    found = ctx.named(TYPES[short], name)
    assert found is not None, f"{short} {name} is not planned: the case is stale"
    return found


def edit(change: Callable[[dict[str, Any]], Any]) -> Callable[[Subject], Subject]:
    """A change to a deep copy of the resource's properties."""

    def apply(subject: Subject) -> Subject:
        props = copy.deepcopy(subject.props)
        change(props)
        return dataclasses.replace(subject, props=props)

    return apply


# set_path's value that removes the property instead of setting it.
DELETE = object()


def set_path(path: str, value: Any) -> Callable[[Subject], Subject]:
    """Set (or, with value DELETE, remove) the property at a dotted path; digits index lists."""

    def change(props: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = props
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return edit(change)


def policy_json(change: Callable[[dict[str, Any]], Any]) -> Callable[[Subject], Subject]:
    def apply(props: dict[str, Any]) -> None:
        document = json.loads(props["policy"])
        change(document)
        props["policy"] = json.dumps(document)

    return edit(apply)


@dataclass(frozen=True)
class Case:
    rule: str
    stack: str
    target: tuple[str, str]
    change: Callable[[Subject], Subject]
    checked: tuple[str, str] | None = None
    fixes: bool = False

    def param(self, id: str):
        return pytest.param(self, id=f"{self.rule}-{id}")


__all__ = ["DELETE", "TYPES", "Case", "context", "edit", "find", "policy_json", "set_path"]


def add_host_path(props: dict[str, Any]) -> None:
    """A hostPath volume in a JobSet's pod, which no namespace of a job needs any more (the
    NVMe cache is an emptyDir): what the privileged-only-where-needed rule must catch."""
    (replicated,) = props["spec"]["replicatedJobs"]
    replicated["template"]["spec"]["template"]["spec"]["volumes"].append(
        {"name": "host", "hostPath": {"path": "/mnt/k8s-disks/0"}}
    )
