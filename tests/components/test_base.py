"""The skeleton every platform component shares (components/base.py): the labels every
Kubernetes object of the platform carries, and the type token naming each component's plane."""

from __future__ import annotations

import pytest

from components.base import PLATFORM_LABELS, plane_labels
from tests.conftest import STACKS, planned

PLANES = {"control", "data", "observability", "scheduling", "selftest", "storage"}


def test_every_object_says_it_is_part_of_the_platform_and_names_its_plane():
    # Kubernetes docs, "Recommended Labels": app.kubernetes.io/part-of names "the higher level
    # application this one is part of".
    assert PLATFORM_LABELS == {"app.kubernetes.io/part-of": "gpu-platform"}
    assert plane_labels("storage") == {
        "app.kubernetes.io/part-of": "gpu-platform",
        "gpu-platform/plane": "storage",
    }


@pytest.mark.parametrize("stack", STACKS)
def test_every_component_type_token_is_gpu_platform_plane_kind(stack):
    """`gpu-platform:<plane>:<Kind>`: Pulumi's type token is package:module:type, and the
    module here is the plane (the root `Platform` alone sits in `platform`)."""
    tokens = {r.type for r in planned(stack).resources if r.type.startswith("gpu-platform:")}
    assert "gpu-platform:platform:Platform" in tokens
    for token in tokens - {"gpu-platform:platform:Platform"}:
        package, plane, kind = token.split(":")
        assert package == "gpu-platform", token
        assert plane in PLANES, token
        assert kind[0].isupper() and kind.isidentifier(), token


def test_the_shipped_dev_stack_declares_each_plane_s_components():
    tokens = {r.type for r in planned("dev").resources if r.type.startswith("gpu-platform:")}
    assert {
        "gpu-platform:control:Network",
        "gpu-platform:data:SystemNodeGroup",
        "gpu-platform:scheduling:Launcher",
        "gpu-platform:scheduling:JobSetController",
        "gpu-platform:observability:Pushgateway",
        "gpu-platform:storage:FsxLustre",
        "gpu-platform:observability:Monitoring",
        "gpu-platform:selftest:SelfTest",
    } <= tokens
