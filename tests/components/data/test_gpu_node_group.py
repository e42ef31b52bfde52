"""GPU node group builders (components/data/gpu_node_group.py) for every catalog type: the EFA
interface layout, the group's user data, advertised resources, MIG labels, autoscaler tags and
node labels. Rendered user data is kept as golden files (tests/golden/user-data/) so a review
shows the exact bytes; `UPDATE_GOLDEN=1 pytest tests/components/data/test_gpu_node_group.py
tests/components/data/test_nodes.py` rewrites them and fails, showing the diff for review."""

from __future__ import annotations

import typing

import pytest

from components.data.gpu_node_group import (
    advertised_resources,
    autoscaler_tags,
    efa_interfaces,
    group_user_data,
    node_labels,
)
from model.catalog import CATALOG
from model.config import GpuNodeGroupSettings
from model.config.nodes import CapacityType
from tests.conftest import check_golden
from tests.helpers.autoscaler_tags import NODE_TEMPLATE
from tests.helpers.instance_facts import FACTS
from tests.helpers.user_data import GOLDEN
from tests.helpers.varied_stacks import (
    CAPACITY_GROUPS,
    CAPACITY_STACK,
    GB200_POOL,
    GB200_STACK,
    capacity_kinds_plan,
    every_aws_plan,
    gb200_plan,
)

# EC2 User Guide, "EFA configuration for P6e-GB200 instances": one EFA-only interface at NCI 1, 5,
# 9 and 13, device index 0 (4 × 400 Gbps); EKS User Guide, "Use P6e-GB200 UltraServers with
# Amazon EKS": the interface on NCI 0 "must be of type `interface`".
DOCUMENTED_LAYOUTS = {
    "p6e-gb200.36xlarge": [
        (0, 0, "interface"),
        (1, 0, "efa-only"),
        (5, 0, "efa-only"),
        (9, 0, "efa-only"),
        (13, 0, "efa-only"),
    ],
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED_LAYOUTS))
def test_efa_interfaces_follow_the_ec2_page_where_it_lays_them_out(name):
    interfaces = efa_interfaces(CATALOG[name], ["sg-cluster", "sg-efa"])
    laid_out = [
        (i["network_card_index"], i["device_index"], i["interface_type"]) for i in interfaces
    ]
    assert laid_out == DOCUMENTED_LAYOUTS[name]
    # What the node then advertises (EKS UltraServer page: vpc.amazonaws.com/efa: 4).
    assert sum(kind != "interface" for _, _, kind in laid_out) == 4


@pytest.mark.parametrize("name", sorted(set(CATALOG) - set(DOCUMENTED_LAYOUTS)))
def test_efa_interfaces_follow_the_efa_maximum(name):
    interfaces = efa_interfaces(CATALOG[name], ["sg-cluster", "sg-efa"])
    assert len(interfaces) == FACTS[name].efa_interfaces
    if not interfaces:
        return
    assert [i["network_card_index"] for i in interfaces] == list(range(FACTS[name].efa_interfaces))
    assert {i["device_index"] for i in interfaces} == {0}
    assert interfaces[0]["interface_type"] == "efa"
    assert {i["interface_type"] for i in interfaces[1:]} <= {"efa-only"}
    for interface in interfaces:
        assert interface["associate_public_ip_address"] == "false"
        assert interface["security_groups"] == ["sg-cluster", "sg-efa"]


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("p5.48xlarge", 32),
        ("p5en.48xlarge", 16),
        ("p4d.24xlarge", 4),
        ("g6e.48xlarge", 4),
        ("g5.48xlarge", 1),
        ("p6-b200.48xlarge", 8),
    ],
)
def test_efa_interface_counts_from_the_issue(name, count):
    assert len(efa_interfaces(CATALOG[name], [])) == count


@pytest.mark.parametrize(
    ("name", "settings"),
    [
        # EFA with hugepages and every GPU setting: the longest boot script.
        (
            "p5.48xlarge",
            {
                "efa": True,
                "gpu_sharing": {"mode": "mps", "replicas": 2},
                "gpu_tuning": {
                    "compute_mode": "exclusive-process",
                    "power_limit_watts": 600,
                    "application_clocks": {"memory_mhz": 2619, "graphics_mhz": 1980},
                },
            },
        ),
        # The defaults: persistence mode only, no hugepages.
        ("g5.2xlarge", {}),
    ],
)
def test_rendered_gpu_user_data_matches_golden_file(name, settings):
    rendered = group_user_data(group(instance_types=[name], **settings), fast_pull=True)
    check_golden(GOLDEN / f"{name}.mime", rendered)


def group(**overrides) -> GpuNodeGroupSettings:
    return GpuNodeGroupSettings(**{"name": "g", "instance_types": ["p5.48xlarge"], **overrides})


@pytest.mark.parametrize(
    ("settings", "strategy", "resources"),
    [
        ({}, "single", {"nvidia.com/gpu": 8}),
        (
            {"gpu_sharing": {"mode": "time-slicing", "replicas": 4}},
            "single",
            {"nvidia.com/gpu": 32},
        ),
        ({"gpu_sharing": {"mode": "mps", "replicas": 2}}, "mixed", {"nvidia.com/gpu": 16}),
        ({"gpu_sharing": {"mode": "mig"}}, "single", {"nvidia.com/gpu": 56}),
        (
            {"gpu_sharing": {"mode": "mig"}},
            "mixed",
            {
                "nvidia.com/mig-1g.10gb": 16,
                "nvidia.com/mig-2g.20gb": 8,
                "nvidia.com/mig-3g.40gb": 8,
            },
        ),
        (
            {"instance_types": ["p5en.48xlarge"], "gpu_sharing": {"mode": "mig"}},
            "single",
            {"nvidia.com/gpu": 56},
        ),
        (
            {"instance_types": ["g5.2xlarge", "g5.12xlarge"], "capacity": "spot"},
            "mixed",
            {"nvidia.com/gpu": 1},
        ),
    ],
)
def test_advertised_resources(settings, strategy, resources):
    assert advertised_resources(group(**settings), strategy) == resources


# NVIDIA MIG user guide, "Supported MIG Profiles": H200 141GB's smallest slice is 1g.18gb.
@pytest.mark.parametrize(
    ("strategy", "label", "plugin_config"),
    [
        ("single", "all-1g.18gb", "mig-single"),
        ("mixed", "all-balanced-1g.18gb", "mig-mixed"),
    ],
)
def test_mig_layout_label_names_the_profile_of_the_gpu(strategy, label, plugin_config):
    mig = group(instance_types=["p5en.48xlarge"], gpu_sharing={"mode": "mig"})
    labels = node_labels(mig, strategy)
    assert labels["nvidia.com/mig.config"] == label
    assert labels["nvidia.com/device-plugin.config"] == plugin_config


def test_autoscaler_tags_describe_labels_taints_and_resources():
    g = group(efa=True, labels={"team": "llm"})
    tags = autoscaler_tags(g, "single")
    labels = {
        k.removeprefix(f"{NODE_TEMPLATE}/label/"): v
        for k, v in tags.items()
        if k.startswith(f"{NODE_TEMPLATE}/label/")
    }
    assert labels == node_labels(g, "single")
    assert labels["team"] == "llm"
    taints = {
        k.removeprefix(f"{NODE_TEMPLATE}/taint/"): v
        for k, v in tags.items()
        if k.startswith(f"{NODE_TEMPLATE}/taint/")
    }
    assert taints == {"nvidia.com/gpu": "present:NoSchedule"}
    assert tags[f"{NODE_TEMPLATE}/resources/nvidia.com/gpu"] == "8"
    assert tags[f"{NODE_TEMPLATE}/resources/vpc.amazonaws.com/efa"] == "32"
    assert f"{NODE_TEMPLATE}/resources/vpc.amazonaws.com/efa" not in autoscaler_tags(
        group(), "single"
    )


def test_a_dra_groups_tags_advertise_no_gpu_resource_its_nodes_do_not_have():
    """The device plugin is off on a DRA group's nodes (nvidia.com/gpu.deploy.device-plugin:
    "false"), so they advertise no nvidia.com/gpu; their GPUs are ResourceSlices, which the
    autoscaler's AWS node-template tags cannot carry (cluster-autoscaler cloudprovider/aws/
    README.md: labels, taints and resources only)."""
    tags = autoscaler_tags(
        group(efa=True, gpu_allocation="dra", scaling={"min_size": 1, "max_size": 2}), "single"
    )
    assert not [k for k in tags if k.startswith(f"{NODE_TEMPLATE}/resources/nvidia.com/")]
    assert tags[f"{NODE_TEMPLATE}/label/nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert tags[f"{NODE_TEMPLATE}/resources/vpc.amazonaws.com/efa"] == "32"


def test_labels_name_group_fabric_capacity_and_type():
    labels = node_labels(
        group(efa=True, capacity="reservation", capacity_reservation_id="cr-0123456789abcdef0"),
        "single",
    )
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["gpu-platform/node-group"] == "g"
    assert labels["gpu-platform/fabric"] == "efa"
    assert labels["gpu-platform/capacity-type"] == "reservation"
    assert labels["gpu-platform/instance-type"] == "p5.48xlarge"
    mixed = node_labels(
        group(instance_types=["g5.2xlarge", "g6e.xlarge"], capacity="spot"), "single"
    )
    assert "gpu-platform/instance-type" not in mixed
    assert "gpu-platform/gpu-model" not in mixed


# EKS API Reference, NodegroupUpdateConfig.updateStrategy (DEFAULT | MINIMAL): "The default
# strategy ... launches the new instances first, before terminating the old instances. The
# minimal strategy ... terminates the old instances before launching the new instances",
# useful where "constrained to resources or costs (for example, with hardware accelerators such
# as GPUs)". A reservation or Capacity Block has no instance beyond those bought; on-demand and
# spot keep EKS's default (unset).
UPDATE_STRATEGY = {
    "on_demand": None,
    "spot": None,
    "reservation": "MINIMAL",
    "capacity_block": "MINIMAL",
}


def test_every_capacity_kind_has_a_group_and_an_expected_update_strategy():
    kinds = typing.get_args(CapacityType)
    assert set(kinds) == set(UPDATE_STRATEGY) == set(CAPACITY_GROUPS)


@pytest.mark.parametrize("kind", typing.get_args(CapacityType))
def test_a_full_reservation_updates_without_a_spare_instance(kind):
    """Each capacity kind the model takes, as a planned node group: reserved capacity updates
    with MINIMAL, whose old node goes before the new one comes, since DEFAULT's surge instance
    would not fit in a full block and the update would stall."""
    plan = capacity_kinds_plan()
    name = f"{CAPACITY_STACK}-{CAPACITY_GROUPS[kind]}"
    (node_group,) = [r for r in plan.of_type("aws:eks/nodeGroup:NodeGroup") if r.name == name]
    assert node_group.inputs["updateConfig"].get("updateStrategy") == UPDATE_STRATEGY[kind]


# EKS User Guide, "Use P6e-GB200 UltraServers with Amazon EKS": P6e-GB200 nodes boot the AL2023
# ARM NVIDIA AMI (Grace is arm64); EKS API reference, CreateNodegroup `amiType`:
# AL2023_ARM_64_NVIDIA | AL2023_x86_64_NVIDIA. Every other GPU type here is x86_64.
ARM_FAMILIES = ("p6e-gb200",)


def test_every_gpu_node_group_boots_the_nvidia_ami_of_its_cpu_architecture():
    found = {}
    for stack, plan in every_aws_plan():
        for ng in plan.of_type("aws:eks/nodeGroup:NodeGroup"):
            labels = ng.inputs.get("labels") or {}
            if "gpu-platform/node-group" not in labels:
                continue
            family = labels.get("gpu-platform/instance-type", "").split(".")[0]
            arm = family in ARM_FAMILIES
            found[f"{stack}/{ng.name}"] = ng.inputs["amiType"]
            assert ng.inputs["amiType"] == (
                "AL2023_ARM_64_NVIDIA" if arm else "AL2023_x86_64_NVIDIA"
            ), ng.name
    assert found[f"{GB200_STACK}/{GB200_STACK}-{GB200_POOL}"] == "AL2023_ARM_64_NVIDIA"


def test_the_gb200_launch_template_lays_out_the_p6e_interfaces_as_rendered():
    (template,) = [
        r
        for r in gb200_plan().of_type("aws:ec2/launchTemplate:LaunchTemplate")
        if r.name == f"{GB200_STACK}-{GB200_POOL}"
    ]
    laid_out = [
        (i["networkCardIndex"], i["deviceIndex"], i["interfaceType"])
        for i in template.inputs["networkInterfaces"]
    ]
    assert laid_out == DOCUMENTED_LAYOUTS["p6e-gb200.36xlarge"]
    # A Capacity Block's launch template: EKS User Guide, capacity-blocks-mng.adoc.
    assert template.inputs["instanceMarketOptions"]["marketType"] == "capacity-block"
    # EKS UltraServer page: the node shows vpc.amazonaws.com/efa: 4, which the autoscaler's
    # template node must say too.
    tags = {
        t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
        for t in gb200_plan().of_type("aws:autoscaling/tag:Tag")
    }
    assert tags[f"{NODE_TEMPLATE}/resources/vpc.amazonaws.com/efa"] == "4"
