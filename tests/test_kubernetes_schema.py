"""Every Kubernetes object a stack declares is valid for the stack's Kubernetes version."""

from __future__ import annotations

import pytest

from tests.conftest import validate_kubernetes
from tests.crds import is_custom_resource


def test_every_object_is_valid_for_the_cluster_version(stack_plan):
    objects = stack_plan.kubernetes_objects()
    assert objects, "every stack declares Kubernetes objects"
    for obj in objects:
        # Custom resources: tests/test_custom_resources.py, against their operators' schemas.
        if not is_custom_resource(obj):
            validate_kubernetes(obj, stack_plan.outputs["kubernetes_version"])


def test_every_object_has_an_explicit_name(stack_plan):
    for obj in stack_plan.kubernetes_objects():
        assert obj["metadata"].get("name"), obj


def test_the_validator_rejects_an_unknown_field():
    bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labelz": {}}}
    with pytest.raises(AssertionError, match="labelz"):
        validate_kubernetes(bad, "1.34")
