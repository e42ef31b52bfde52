"""Every Kubernetes object a stack declares is valid for the stack's Kubernetes version."""

from __future__ import annotations

import pytest

from tests.conftest import validate_kubernetes
from tests.helpers.crds import is_custom_resource
from tests.helpers.team_stacks import STACKS_AND_TEAMS, plan_of


@pytest.fixture(params=STACKS_AND_TEAMS)
def stack_plan(request):
    """Every stack, and the fixtures whose teams have access and whose cluster has namespaces
    (tests/helpers/team_stacks.py): their RoleBindings, ClusterRoles and namespace patches."""
    return plan_of(request.param)


def test_every_object_is_valid_for_the_cluster_version(stack_plan):
    objects = stack_plan.kubernetes_objects()
    assert objects, "every stack declares Kubernetes objects"
    for obj in objects:
        # Custom resources: tests/components/test_custom_resources.py, against their operators'
        # schemas.
        if not is_custom_resource(obj):
            validate_kubernetes(obj, stack_plan.outputs["kubernetes_version"])


def test_every_object_has_an_explicit_name(stack_plan):
    for obj in stack_plan.kubernetes_objects():
        assert obj["metadata"].get("name"), obj


def test_every_object_is_declared_once(stack_plan):
    """Two resources of one kind, namespace and name are one object on the cluster: each `up`
    would overwrite the other's. Pulumi refuses only a repeated URN (run_program raises
    DuplicateResourceError for every plan), and two components' resources differ there."""
    seen: dict[tuple[str, str, str, str], int] = {}
    for obj in stack_plan.kubernetes_objects():
        group = obj["apiVersion"].rpartition("/")[0]
        meta = obj["metadata"]
        key = (group, obj["kind"], meta.get("namespace", ""), meta["name"])
        seen[key] = seen.get(key, 0) + 1
    assert [key for key, count in seen.items() if count > 1] == []


def test_the_validator_rejects_an_unknown_field():
    bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labelz": {}}}
    with pytest.raises(AssertionError, match="labelz"):
        validate_kubernetes(bad, "1.34")
