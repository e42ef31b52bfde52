"""The IAM policy the runner of `pulumi up` needs, generated from each stack's plan
(plan/deploy_policy.py, plan/deploy_actions.py): every resource type the plan
declares has its actions, every action is one the AWS Service Authorization Reference lists (the
snapshot plan/iam_actions.json), every tag condition is one its action takes, and every
document fits IAM's managed policy quota."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re

import pytest

from model.stacks import ROOT
from plan import deploy_policy
from plan.cli import main
from plan.critical_path import format_critical_path
from plan.deploy_actions import DEPLOY_ACTIONS, NO_AWS_CALLS, TypeActions
from plan.deploy_policy import (
    DeployPolicyError,
    documents,
    format_policy,
    lint,
    size,
    write_policy,
)
from plan.model import PlannedResource
from tests.conftest import AWS_STACKS, STACKS, planned, project_plan, stack_config
from tests.helpers.cache_stacks import STACKS as CACHE_STACKS
from tests.helpers.varied_stacks import AWS_FIXTURES, GB200_STACK, aws_plan, every_aws_plan

# The class tests run over every AWS stack and fixture: a type only a fixture declares (the
# GB200 stack's Local Zone opt-in) needs its row as much as a shipped stack's.
AWS_PLANS = (*AWS_STACKS, *AWS_FIXTURES)

# IAM User Guide, "IAM and AWS STS quotas": managed policy size 6,144 characters, whitespace
# not counted.
MANAGED_POLICY_QUOTA = 6144


def _actions(docs) -> set[str]:
    return {a for d in docs for s in d["Statement"] for a in s["Action"]}


@pytest.mark.parametrize("stack", AWS_PLANS)
def test_every_planned_type_has_its_calls_in_the_policy(stack):
    """Checked against the plan's resource types: each type the runner calls AWS for has a
    row, and the row's create, read and delete calls are all in the stack's policy."""
    plan = aws_plan(stack)
    granted = _actions(documents(plan))
    types = {r.type for r in plan.resources if not r.type.startswith(NO_AWS_CALLS)}
    assert types, f"{stack}: an AWS stack without AWS resource types"
    for token in types:
        row = DEPLOY_ACTIONS[token]
        missing = {*row.create, *row.read, *row.delete} - granted
        assert not missing, f"{stack}: {token} needs {sorted(missing)}"


def test_a_local_zone_opt_in_is_granted_the_calls_ec2_documents():
    """EC2 API Reference, ModifyAvailabilityZoneGroup: "Use DescribeAvailabilityZones to view
    the value for GroupName"; the opt-in itself is ModifyAvailabilityZoneGroup."""
    granted = _actions(documents(aws_plan(GB200_STACK)))
    assert {"ec2:ModifyAvailabilityZoneGroup", "ec2:DescribeAvailabilityZones"} <= granted


@pytest.mark.parametrize("stack", AWS_PLANS)
def test_policy_is_valid_iam_json_within_the_quota(stack, tmp_path):
    path = write_policy(aws_plan(stack), tmp_path)
    assert path == tmp_path / "deploy-policy.json"
    docs = json.loads(path.read_text())
    assert docs
    for doc in docs:
        assert doc["Version"] == "2012-10-17"
        assert set(doc) == {"Version", "Statement"}
        sids = [s["Sid"] for s in doc["Statement"]]
        assert len(sids) == len(set(sids)), f"{stack}: a Sid repeats in one policy: {sids}"
        assert all(s["Sid"].isalnum() for s in doc["Statement"])
        assert all(s["Effect"] == "Allow" for s in doc["Statement"])
        compact = json.dumps(doc, separators=(",", ":"))
        assert len(compact.replace(" ", "")) <= MANAGED_POLICY_QUOTA


@pytest.mark.parametrize("stack", AWS_PLANS)
def test_every_action_is_known_and_takes_its_condition(stack):
    """The lint, redone here from the snapshot: a misspelt action or a tag condition on an
    action whose row does not take the key (a statement that would never match)."""
    catalog = json.loads(deploy_policy.CATALOG.read_text())["services"]
    for statement in (s for d in documents(aws_plan(stack)) for s in d["Statement"]):
        conditions = json.dumps(statement.get("Condition", {}))
        for action in statement["Action"]:
            service, name = action.split(":")
            assert name in catalog[service]["actions"], action
            if "aws:RequestTag/" in conditions:
                assert name in catalog[service]["request_tag"], action
            if "aws:ResourceTag/" in conditions:
                assert name in catalog[service]["resource_tag"], action


@pytest.mark.parametrize("stack", AWS_PLANS)
def test_changes_are_scoped_to_the_stack(stack):
    """Tag conditions name this stack; roles are passed only to the services that take them,
    and only the stack's own roles; no change is granted on `*` outside the reasoned rows."""
    plan = aws_plan(stack)
    statements = [s for d in documents(plan) for s in d["Statement"]]
    for s in statements:
        for op in s.get("Condition", {}).values():
            for key, value in op.items():
                if key.startswith(("aws:RequestTag/", "aws:ResourceTag/")):
                    assert key.endswith("/gpu-platform:stack") and value == stack
    passing = [s for s in statements if "iam:PassRole" in s["Action"]]
    assert len(passing) == 1 and passing[0]["Action"] == ["iam:PassRole"]
    roles = {f"arn:aws:iam::*:role/{r.name}-*" for r in plan.of_type("aws:iam/role:Role")}
    resources = passing[0]["Resource"]
    assert set([resources] if isinstance(resources, str) else resources) == roles
    assert "iam:PassedToService" in passing[0]["Condition"]["StringEquals"]
    # On `*` without a condition: the refresh's reads and the rows that say why not.
    reasoned = {a for row in DEPLOY_ACTIONS.values() if row.scope is None for a in row.changes()}
    for s in statements:
        if s["Resource"] == "*" and "Condition" not in s and not s["Sid"].startswith("Refresh"):
            assert set(s["Action"]) <= reasoned, s


CREATE_LINKED = "iam:CreateServiceLinkedRole"
# The service-linked roles a type's create makes, per its service's guide: (service, the role's
# name, what the caller needs on it). The role sits at
# arn:aws:iam::<account>:role/aws-service-role/<service>/<name> (IAM User Guide, "Using
# service-linked roles"), and making one takes iam:CreateServiceLinkedRole there.
DOCUMENTED_SERVICE_LINKED_ROLES = {
    # Amazon EKS User Guide, "Using roles for Amazon EKS clusters".
    "aws:eks/cluster:Cluster": [
        ("eks.amazonaws.com", "AWSServiceRoleForAmazonEKS", (CREATE_LINKED,))
    ],
    # Amazon EKS User Guide, "Using roles for Amazon EKS node groups".
    "aws:eks/nodeGroup:NodeGroup": [
        ("eks-nodegroup.amazonaws.com", "AWSServiceRoleForAmazonEKSNodegroup", (CREATE_LINKED,))
    ],
    # FSx for Lustre User Guide, "Using service-linked roles for Amazon FSx".
    "aws:fsx/lustreFileSystem:LustreFileSystem": [
        ("fsx.amazonaws.com", "AWSServiceRoleForAmazonFSx", (CREATE_LINKED,))
    ],
    # FSx for Lustre User Guide, "Adding permissions to use data repositories in Amazon S3":
    # iam:CreateServiceLinkedRole, iam:AttachRolePolicy and iam:PutRolePolicy on
    # arn:aws:iam::*:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/*; the role
    # is AWSServiceRoleForFSxS3Access_<file system id> ("Using service-linked roles").
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": [
        (
            "s3.data-source.lustre.fsx.amazonaws.com",
            "AWSServiceRoleForFSxS3Access_fs-01234567890",
            (CREATE_LINKED, "iam:AttachRolePolicy", "iam:PutRolePolicy"),
        )
    ],
    # Amazon ECR User Guide, "Amazon ECR service-linked role for pull through cache"
    # (slr-pullthroughcache.html): AWSServiceRoleForECRPullThroughCache, trusted by
    # pullthroughcache.ecr.amazonaws.com; "Using service-linked roles for Amazon ECR": made
    # automatically once pull through cache is configured for the registry.
    # Amazon VPC Transit Gateways guide, "Use service-linked roles for transit gateways"
    # (service-linked-roles.html): AWSServiceRoleForVPCTransitGateway, trusted by
    # transitgateway.amazonaws.com, made when a VPC of the account is attached.
    "aws:ec2transitgateway/vpcAttachment:VpcAttachment": [
        ("transitgateway.amazonaws.com", "AWSServiceRoleForVPCTransitGateway", (CREATE_LINKED,))
    ],
    "aws:ecr/pullThroughCacheRule:PullThroughCacheRule": [
        (
            "pullthroughcache.ecr.amazonaws.com",
            "AWSServiceRoleForECRPullThroughCache",
            (CREATE_LINKED,),
        )
    ],
}


def _every_aws_plan():
    """Every AWS stack and fixture (tests/helpers/varied_stacks.every_aws_plan), and the
    pull-through cache stacks, whose rules no shipped stack declares."""
    cached = ((name, project_plan(name, {name: stack})) for name, stack in CACHE_STACKS.items())
    return [*every_aws_plan(), *cached]


def _condition_holds(operator: str, key: str, allowed, context: dict[str, str]) -> bool:
    """IAM's evaluation of one condition key: a key the request lacks fails the match."""
    allowed = [allowed] if isinstance(allowed, str) else allowed
    if key not in context:
        return False
    if operator in ("StringEquals", "ArnEquals"):
        return context[key] in allowed
    if operator in ("StringLike", "ArnLike"):
        return any(fnmatch.fnmatchcase(context[key], pattern) for pattern in allowed)
    raise AssertionError(f"no model of condition operator {operator}")


def _allows(docs, action: str, arn: str, context: dict[str, str]) -> bool:
    for statement in (s for d in docs for s in d["Statement"]):
        resources = statement["Resource"]
        resources = [resources] if isinstance(resources, str) else resources
        if (
            action in statement["Action"]
            and any(fnmatch.fnmatchcase(arn, r) for r in resources)
            and all(
                _condition_holds(operator, key, allowed, context)
                for operator, keys in statement.get("Condition", {}).items()
                for key, allowed in keys.items()
            )
        ):
            return True
    return False


def test_service_linked_roles_of_the_table_are_the_documented_ones():
    """A type whose create makes a service-linked role is in the documented table, with the
    same services, so the class test below covers it."""
    rows = {t: set(row.service_linked) for t, row in DEPLOY_ACTIONS.items() if row.service_linked}
    documented = {
        t: {service for service, _, _ in roles}
        for t, roles in DOCUMENTED_SERVICE_LINKED_ROLES.items()
    }
    assert rows == documented


def test_every_service_linked_role_gets_the_documented_calls_on_its_path():
    """Each service-linked role a declared type makes, on every AWS stack and fixture: the
    policy allows what the service's guide says the caller needs, on the role's own ARN."""
    missing, seen = [], set()
    for stack, plan in _every_aws_plan():
        docs = documents(plan)
        declared = {r.type for r in plan.resources} & set(DOCUMENTED_SERVICE_LINKED_ROLES)
        seen |= declared
        for token in sorted(declared):
            for service, role, actions in DOCUMENTED_SERVICE_LINKED_ROLES[token]:
                arn = f"arn:aws:iam::111122223333:role/aws-service-role/{service}/{role}"
                # iam:AWSServiceName is in the request context of CreateServiceLinkedRole only.
                for action in actions:
                    context = {"iam:AWSServiceName": service} if action == CREATE_LINKED else {}
                    if not _allows(docs, action, arn, context):
                        missing.append(f"{stack}: {action} on {arn} (for {token})")
    assert not missing, "the deploy policy does not allow " + "; ".join(missing)
    # Each documented type is declared by some stack, so its row is checked, not assumed.
    assert seen == set(DOCUMENTED_SERVICE_LINKED_ROLES)


def test_rows_without_scope_say_why():
    for token, row in DEPLOY_ACTIONS.items():
        assert (row.scope is None) == bool(row.unscoped), token
        assert row.source.startswith("internal/"), token


@pytest.mark.parametrize("stack", [s for s in STACKS if stack_config(s).provider != "aws"])
def test_a_stack_without_aws_resources_has_no_policy(stack, tmp_path):
    stale = tmp_path / "deploy-policy.json"
    stale.write_text("[]")
    assert write_policy(planned(stack), tmp_path) is None
    assert not stale.exists()


QUEUE = "aws:sqs/queue:Queue"


def _with_a_queue():
    plan = planned(AWS_STACKS[0])
    queue = PlannedResource(
        urn=f"urn:pulumi:x::p::{QUEUE}::jobs",
        type=QUEUE,
        name="jobs",
        parent="",
        inputs={},
        dependencies=[],
        protect=False,
        custom=True,
    )
    return dataclasses.replace(plan, resources=[*plan.resources, queue])


def test_a_type_without_a_row_fails_naming_it():
    broken = _with_a_queue()
    with pytest.raises(DeployPolicyError) as error:
        documents(broken)
    message = str(error.value)
    assert "aws:sqs/queue:Queue (resource jobs)" in message
    assert "plan/deploy_actions.py" in message


def test_a_service_missing_from_the_snapshot_fails_naming_it(monkeypatch):
    row = TypeActions("internal/service/sqs/queue.go", create=("sqs:CreateQueue",), read=())
    monkeypatch.setitem(DEPLOY_ACTIONS, QUEUE, row)
    with pytest.raises(
        DeployPolicyError, match=re.escape("service 'sqs' is not in iam_actions.json")
    ):
        documents(_with_a_queue())


@pytest.mark.parametrize(
    ("statement", "complaint"),
    [
        ({"Sid": "A", "Action": ["ec2:CreateVpcs"], "Resource": "*"}, "not an IAM action"),
        ({"Sid": "A", "Action": ["eks2:CreateCluster"], "Resource": "*"}, "not an IAM action"),
        (
            {
                "Sid": "A",
                "Action": ["ec2:DescribeVpcs"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestTag/k": "v"}},
            },
            "does not take aws:RequestTag/k",
        ),
    ],
)
def test_lint_refuses(statement, complaint):
    doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **statement}]}
    with pytest.raises(DeployPolicyError, match=complaint):
        lint([doc])


@pytest.mark.parametrize(
    ("sids", "complaint"),
    [(["A", "A"], "Sid A repeats"), (["Read-1"], "Sid 'Read-1' is not ASCII letters")],
)
def test_lint_refuses_sids_iam_refuses(sids, complaint):
    """IAM JSON policy element reference, "Sid": unique in a policy; A-Z, a-z and 0-9 only."""
    statements = [
        {"Sid": sid, "Effect": "Allow", "Action": ["ec2:DescribeVpcs"], "Resource": "*"}
        for sid in sids
    ]
    with pytest.raises(DeployPolicyError, match=complaint):
        lint([{"Version": "2012-10-17", "Statement": statements}])


def test_lint_refuses_an_oversized_document():
    actions = sorted(json.loads(deploy_policy.CATALOG.read_text())["services"]["ec2"]["actions"])
    doc = {
        "Version": "2012-10-17",
        "Statement": [{"Sid": "A", "Effect": "Allow", "Action": actions, "Resource": "*"}],
    }
    assert size(doc) > MANAGED_POLICY_QUOTA
    with pytest.raises(DeployPolicyError, match="characters > 6144"):
        lint([doc])


@pytest.mark.usefixtures("cli_on_session_plans")
def test_plan_writes_the_policy_and_prints_its_path_and_the_critical_path(tmp_path, capsys):
    assert main(["dev", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"Deploy policy: {tmp_path / 'deploy-policy.json'} (" in out
    assert "First `pulumi up`: about 30 minutes, decided by a chain of 10 resources" in out
    assert json.loads((tmp_path / "deploy-policy.json").read_text())


def test_docs_show_prods_policy_line_and_devs_critical_path_as_the_plan_prints_them(tmp_path):
    """docs/review.md quotes the plan's output; a change to either shows here."""
    page = (ROOT / "docs" / "review.md").read_text()
    line = format_policy(planned("prod"), write_policy(planned("prod"), tmp_path))
    assert line.replace(str(tmp_path), "out/prod") in page.splitlines()
    assert format_critical_path(planned("dev")) in page
