"""What every plane of a stack shares (components/context.py): the cluster's name and the tags
on every AWS resource."""

from __future__ import annotations

import pytest

from components.context import StackContext
from model.config import parse_config
from tests.conftest import AWS_STACKS, planned
from tests.helpers.raw_config import AWS


def test_the_cluster_is_named_after_the_project_and_the_stack():
    assert StackContext("prod").cluster_name == "gpu-platform-prod"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_aws_stack_names_its_eks_cluster_so(stack):
    """An existing cluster keeps its own name (existing.name); the platform names only the EKS
    cluster it creates."""
    assert planned(stack).outputs["cluster_name"] == f"gpu-platform-{stack}"


def test_the_stack_and_pulumi_tag_every_resource_and_the_users_tags_come_on_top():
    cfg = parse_config({**AWS, "aws": {**AWS["aws"], "tags": {"team": "ml"}}}, "t")
    assert StackContext.of("dev", cfg).tags == {
        "gpu-platform:stack": "dev",
        "managed-by": "pulumi",
        "team": "ml",
    }
