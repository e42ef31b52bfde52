"""docs/operations.md, "Teardown", names everything a `pulumi destroy` of any stack (a user's
too) would stop at: each resource the plan protects, and each one AWS refuses to delete while
it holds data (ECR `forceDelete: false`: "RepositoryNotEmptyException"; S3 `forceDestroy:
false`: a bucket must be empty before DeleteBucket, S3 API reference) or keeps after it (FSx
`skipFinalBackup: false`: the final backup outlives the file system, FSx API reference,
DeleteFileSystem)."""

from __future__ import annotations

import re

import pytest

from model.stacks import ROOT
from tests.conftest import STACKS, planned
from tests.helpers.team_stacks import STACKS_AND_TEAMS, plan_of

# Input values that make AWS refuse a delete or keep something after it.
REFUSALS = {
    ("aws:eks/cluster:Cluster", "deletionProtection", True): "cluster.deletion_protection",
    ("aws:ecr/repository:Repository", "forceDelete", False): "`forceDelete: false`",
    ("aws:s3/bucket:Bucket", "forceDestroy", False): "`forceDestroy: false`",
    ("aws:fsx/lustreFileSystem:LustreFileSystem", "skipFinalBackup", False): (
        "`skipFinalBackup: false`"
    ),
}


def teardown() -> str:
    page = (ROOT / "docs" / "operations.md").read_text()
    (section,) = re.findall(r"^## Teardown\n(.*?)(?=^## )", page, re.S | re.M)
    return section


@pytest.mark.parametrize("stack", STACKS)
def test_teardown_names_what_stops_a_destroy_of_the_stack(stack):
    section = teardown()
    for resource in planned(stack).resources:
        if resource.protect:
            assert f"`{resource.type}" in section, (stack, resource.name, resource.type)
        for (token, key, value), said in REFUSALS.items():
            if resource.type == token and resource.inputs.get(key) is value:
                assert f"`{token}" in section and said in section, (stack, resource.name, key)


def test_teardown_says_how_to_lift_protection_and_what_is_left():
    section = teardown()
    # pulumi.com, "Resource option: protect": unprotect with `pulumi state unprotect`;
    # "pulumi destroy": --exclude-protected keeps protected resources.
    for said in ("pulumi state unprotect", "--exclude-protected", "pulumi stack rm",
                 "final backup", "reclaimPolicy: Retain", "30-day waiting period"):  # fmt: skip
        assert said in section, said


@pytest.mark.parametrize("stack", STACKS_AND_TEAMS)
def test_teardown_names_what_a_destroy_of_the_stack_leaves_on_purpose(stack):
    # Issue 38: the page said an on-prem destroy deletes only the platform's objects while it
    # deleted `training` and every team namespace with the teams' work in them.
    section = " ".join(teardown().split())
    for resource in plan_of(stack).resources:
        if resource.retain_on_delete:
            assert f"`{resource.type}`" in section and "`retain_on_delete`" in section, (
                stack,
                resource.name,
            )
        if resource.type == "kubernetes:core/v1:NamespacePatch":
            assert "`existing.namespaces`" in section and "NamespacePatch" in section, stack
    assert "a destroy deletes only the platform's Kubernetes objects" not in section
