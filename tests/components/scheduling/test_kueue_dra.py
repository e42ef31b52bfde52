"""Kueue's device-class mappings (components/scheduling/kueue.py, model/dra.py) where a pool
allocates GPUs through DRA: every DeviceClass a DRA pool's claims may name is mapped, to the
quota names of the device-plugin path, in a Configuration Kueue v0.19.2 accepts, and the DRA
pools' flavors hold quota in those names.

Literals: the driver chart's DeviceClass `gpu.nvidia.com` (../shared/PINS.md, "DeviceClasses,
drivers and what the chart renders"); the device plugin's resource names `nvidia.com/gpu` and
`nvidia.com/mig-<profile>` (gpu-operator v26.7.0, mig.strategy mixed); the H100 80GB's MIG
profiles 1g.10gb, 2g.20gb, 3g.40gb (NVIDIA MIG User Guide, "Supported MIG Profiles"); the MIG
device attribute `profile` (dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/mig.go
CommonAttributesMig)."""

from __future__ import annotations

import functools

import pytest

from model.config import PlatformConfig
from model.dra import device_class_quota
from plan.model import Plan
from plan.render import render_plan
from tests.conftest import SHARED_HELM, STACKS, planned, rendered, stack_config
from tests.controllers.kueue_admission import (
    device_class_mapping_problems,
    manager_config_of,
    unmapped_device_classes,
)
from tests.helpers.varied_stacks import (
    DRA_CONFIGS,
    DRA_EXISTING_STACK,
    DRA_STACK,
    dra_config,
    dra_plan,
)

H100_MIG = ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]


def config(stack: str) -> PlatformConfig:
    return dra_config(stack) if stack in DRA_CONFIGS else stack_config(stack)


def plan(stack: str) -> Plan:
    return dra_plan(stack) if stack in DRA_CONFIGS else planned(stack)


@functools.cache
def objects(stack: str) -> list[dict]:
    rendering = (
        render_plan(dra_plan(stack), (SHARED_HELM,)) if stack in DRA_CONFIGS else rendered(stack)
    )
    return [*plan(stack).kubernetes_objects(), *(o for _, o in rendering.objects())]


def kueue_config(stack: str) -> dict:
    found = manager_config_of(objects(stack))
    assert found is not None, f"{stack}: no rendered Kueue Configuration"
    return found


def test_the_dra_stack_maps_gpus_and_each_mig_profile_to_the_device_plugins_names():
    assert kueue_config(DRA_STACK)["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": "nvidia.com/mig-1g.10gb", "deviceClassNames": ["mig-1g.10gb.gpu-platform"]},
        {"name": "nvidia.com/mig-2g.20gb", "deviceClassNames": ["mig-2g.20gb.gpu-platform"]},
        {"name": "nvidia.com/mig-3g.40gb", "deviceClassNames": ["mig-3g.40gb.gpu-platform"]},
    ]
    assert kueue_config(DRA_EXISTING_STACK)["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}
    ]


@pytest.mark.parametrize("stack", [*STACKS, *DRA_CONFIGS])
def test_kueue_accepts_the_mappings_and_maps_every_class_a_dra_claim_may_name(stack):
    cfg = config(stack)
    if not cfg.scheduling.enabled or manager_config_of(objects(stack)) is None:
        assert not any(p.gpu_allocation == "dra" for p in cfg.gpu_pools)
        return
    found = kueue_config(stack)
    assert device_class_mapping_problems(found) == []
    table = device_class_quota(cfg.gpu_pools)
    assert unmapped_device_classes(found, table) == []
    if not table:
        assert "deviceClassMappings" not in found["resources"]
    # Every class the table names exists on the cluster: the chart's or the platform's own.
    declared = {o["metadata"]["name"] for o in objects(stack) if o.get("kind") == "DeviceClass"}
    assert set(table) <= declared


def test_each_mig_class_selects_its_profile_of_the_drivers_mig_devices():
    (mig,) = [
        o
        for o in objects(DRA_STACK)
        if o.get("kind") == "DeviceClass" and o["metadata"]["name"] == "mig-2g.20gb.gpu-platform"
    ]
    assert mig["apiVersion"] == "resource.k8s.io/v1"
    assert mig["spec"]["selectors"] == [
        {
            "cel": {
                "expression": 'device.driver == "gpu.nvidia.com" && '
                'device.attributes["gpu.nvidia.com"].type == "mig" && '
                'device.attributes["gpu.nvidia.com"].profile == "2g.20gb"'
            }
        }
    ]


@pytest.mark.parametrize(
    ("stack", "flavor_labels", "names"),
    [
        (DRA_STACK, {"gpu-platform/node-group": "a100-efa"}, ["nvidia.com/gpu"]),
        (DRA_STACK, {"gpu-platform/node-group": "h100-mig"}, H100_MIG),
        (
            DRA_EXISTING_STACK,
            {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            ["nvidia.com/gpu"],
        ),
    ],
)
def test_a_dra_pools_flavor_holds_quota_in_the_mapped_names(stack, flavor_labels, names):
    objs = objects(stack)
    flavors = [
        o["metadata"]["name"]
        for o in objs
        if o.get("kind") == "ResourceFlavor"
        and flavor_labels.items() <= (o["spec"].get("nodeLabels") or {}).items()
    ]
    assert flavors
    # The flavor selects only nodes where the device plugin is off.
    for o in objs:
        if o.get("kind") == "ResourceFlavor" and o["metadata"]["name"] in flavors:
            assert o["spec"]["nodeLabels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    held = set()
    for queue in (o for o in objs if o.get("kind") == "ClusterQueue"):
        for group in queue["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                if flavor["name"] in flavors:
                    assert set(names) <= set(group["coveredResources"])
                    held |= {r["name"] for r in flavor["resources"]}
    assert set(names) <= held


@pytest.mark.parametrize(
    ("mappings", "problem"),
    [
        (
            [{"name": f"example.com/r{i}", "deviceClassNames": [f"c{i}"]} for i in range(17)],
            "at most 16",
        ),
        ([{"name": "nvidia.com/gpu", "deviceClassNames": []}], "1 to 8"),
        ([{"name": "nvidia.com/gpu", "deviceClassNames": [f"c{i}" for i in range(9)]}], "1 to 8"),
        (
            [
                {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]},
                {"name": "nvidia.com/mig", "deviceClassNames": ["gpu.nvidia.com"]},
            ],
            "Duplicate value: 'gpu.nvidia.com'",
        ),
        (
            [
                {"name": "nvidia.com/gpu", "deviceClassNames": ["a"]},
                {"name": "nvidia.com/gpu", "deviceClassNames": ["b"]},
            ],
            "Duplicate value: 'nvidia.com/gpu'",
        ),
        ([{"name": "not a name", "deviceClassNames": ["a"]}], "Invalid value"),
    ],
)
def test_the_kueue_model_refuses_what_its_validation_refuses(mappings, problem):
    config = {"resources": {"deviceClassMappings": mappings}}
    assert any(problem in p for p in device_class_mapping_problems(config))
