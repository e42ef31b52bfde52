"""The system node group (components/data/system_node_group.py): a few on-demand non-GPU nodes
for the add-ons on every AWS stack, so the GPU groups can scale to zero, and where add-ons are
placed on an existing cluster."""

from __future__ import annotations

import base64

import pytest

from components.data.system_node_group import add_on_nodes
from tests.conftest import AWS_STACKS, STACKS, find, planned, stack_config
from tests.helpers.user_data import parse_user_data

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


@pytest.mark.parametrize("stack", STACKS)
def test_add_ons_go_to_the_system_nodes_on_aws_and_anywhere_on_an_existing_cluster(stack):
    cfg = stack_config(stack)
    expected = {"gpu-platform/node-role": "system"} if cfg.provider == "aws" else {}
    assert add_on_nodes(cfg) == expected


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_aws_stack_has_an_untainted_on_demand_al2023_system_group(stack):
    """EKS API reference, CreateNodegroup: `amiType` AL2023_x86_64_STANDARD is the standard
    (non-accelerated) Amazon Linux 2023 AMI, `capacityType` ON_DEMAND; no taint, so coredns
    and the operators, which tolerate none of the GPU taint, land here."""
    ng = find(planned(stack), NODE_GROUP, f"{stack}-system").inputs
    assert ng["amiType"] == "AL2023_x86_64_STANDARD"
    assert ng["capacityType"] == "ON_DEMAND"
    assert ng["labels"] == {"gpu-platform/node-role": "system"}
    assert ng["taints"] == []
    assert ng["instanceTypes"] == stack_config(stack).system_nodes.instance_types


def test_shipped_dev_system_group_is_two_to_four_m7i_xlarge_with_58_pods():
    """stacks/Pulumi.dev.yaml's system nodes (the defaults); 58 pods on an m7i.xlarge: 4 ENIs of
    15 IPv4 addresses, 4 x (15 - 1) + 2 (amazon-vpc-cni-k8s misc/eni-max-pods.txt)."""
    plan = planned("dev")
    ng = find(plan, NODE_GROUP, "dev-system").inputs
    assert ng["instanceTypes"] == ["m7i.xlarge"]
    assert ng["scalingConfig"] == {"desiredSize": 2, "maxSize": 4, "minSize": 2}
    lt = find(plan, LAUNCH_TEMPLATE, "dev-system").inputs
    (config,) = parse_user_data(base64.b64decode(lt["userData"]).decode())
    assert config["spec"]["kubelet"]["config"]["maxPods"] == 58


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_system_nodes_pin_no_cpus_and_align_no_numa(stack):
    """Add-ons need neither: the kubelet's own defaults, `none` for both (Kubernetes docs,
    "Control CPU Management Policies on the Node" and "Control Topology Management Policies on
    a node"), where the GPU nodes run `static` and `restricted`."""
    lt = find(planned(stack), LAUNCH_TEMPLATE, f"{stack}-system").inputs
    (config,) = parse_user_data(base64.b64decode(lt["userData"]).decode())
    kubelet = config["spec"]["kubelet"]["config"]
    assert kubelet["cpuManagerPolicy"] == "none"
    assert kubelet["topologyManagerPolicy"] == "none"
    assert "instance" not in config["spec"], "m7i types have no instance storage to RAID"
