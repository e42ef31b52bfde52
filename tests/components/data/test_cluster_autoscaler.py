"""The data plane each AWS stack declares: node groups, launch templates, node role and
cluster-autoscaler."""

from __future__ import annotations

import base64
import json

import pytest

from components.data.cluster_autoscaler import expander_priorities
from model.config import AutoscalerSettings
from tests.conftest import AWS_STACKS, find, planned, stack_config
from tests.helpers.autoscaler_tags import NODE_TEMPLATE
from tests.helpers.instance_facts import FACTS
from tests.helpers.user_data import parse_user_data

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_TAG = "aws:autoscaling/tag:Tag"
RELEASE = "kubernetes:helm.sh/v3:Release"


def gpu_groups(plan):
    return [ng for ng in plan.of_type(NODE_GROUP) if ng.inputs["amiType"].endswith("NVIDIA")]


def launch_template_of(plan, node_group):
    return find(plan, LAUNCH_TEMPLATE, node_group.name)


# (capacity type, node group instance types, launch template instance type, EFA interfaces).
# EKS user guide, "Capacity Blocks for managed node groups": a CAPACITY_BLOCK group's launch
# template names the instance type and the node group lists none.
@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (
            "dev",
            {
                "dev-spot-small": (
                    "SPOT",
                    ["g5.2xlarge", "g5.4xlarge", "g6e.xlarge", "g6e.2xlarge"],
                    None,
                    False,
                )
            },
        ),
        ("staging", {"staging-a100-efa": ("ON_DEMAND", ["p4d.24xlarge"], None, True)}),
        (
            "prod",
            {
                "prod-h100-block": ("CAPACITY_BLOCK", None, "p5.48xlarge", True),
                "prod-h100-ondemand": ("ON_DEMAND", ["p5.48xlarge"], None, True),
                # Its canary (selftest.node_join.canary): the block's window has none.
                "prod-h100-ondemand-canary": ("ON_DEMAND", ["p5.48xlarge"], None, True),
            },
        ),
    ],
)
def test_shipped_gpu_groups_per_stack(stack, expected):
    plan = planned(stack)
    found = {}
    for ng in gpu_groups(plan):
        lt = launch_template_of(plan, ng)
        found[ng.name] = (
            ng.inputs["capacityType"],
            ng.inputs.get("instanceTypes"),
            lt.inputs.get("instanceType"),
            "networkInterfaces" in lt.inputs,
        )
    assert found == expected


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_node_group_follows_the_cluster_version(stack):
    # An upgrade of the control plane then rolls every node group after it.
    plan = planned(stack)
    for ng in plan.of_type(NODE_GROUP):
        assert ng.inputs["version"] == stack_config(stack).cluster.kubernetes_version


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_launch_template_requires_imdsv2_and_encrypts_its_root(stack):
    plan = planned(stack)
    for lt in plan.of_type(LAUNCH_TEMPLATE):
        assert lt.inputs["metadataOptions"]["httpTokens"] == "required"
        (root,) = lt.inputs["blockDeviceMappings"]
        assert root["ebs"]["encrypted"] == "true"
        assert root["ebs"]["volumeType"] == "gp3"
        assert "iamInstanceProfile" not in lt.inputs
        # The stack's own tags (aws.tags) plus the two every resource carries.
        expected = {"gpu-platform:stack": stack, "managed-by": "pulumi"}
        expected |= stack_config(stack).aws.tags
        for spec in lt.inputs["tagSpecifications"]:
            assert expected.items() <= spec["tags"].items()
        kinds = {spec["resourceType"] for spec in lt.inputs["tagSpecifications"]}
        assert kinds == {"instance", "volume", "network-interface"}


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_each_efa_group_sits_in_one_subnet_of_its_zone_with_the_efa_group(stack):
    plan, cfg = planned(stack), stack_config(stack)
    for group in cfg.gpu_node_groups:
        ng = find(plan, NODE_GROUP, f"{stack}-{group.name}")
        zones = cfg.group_zones(group)
        assert ng.inputs["subnetIds"] == [
            f"(known after apply: {stack}-private-{z}.id)" for z in zones
        ]
        lt = launch_template_of(plan, ng)
        if group.efa:
            assert len(zones) == 1
            interfaces = lt.inputs["networkInterfaces"]
            assert len(interfaces) == FACTS[group.instance_types[0]].efa_interfaces
            for interface in interfaces:
                assert f"(known after apply: {stack}-efa-sg.id)" in interface["securityGroups"]
                assert interface["associatePublicIpAddress"] == "false"
            assert "vpcSecurityGroupIds" not in lt.inputs
        else:
            assert "networkInterfaces" not in lt.inputs


@pytest.mark.parametrize(
    ("stack", "group", "placement"),
    [
        ("staging", "a100-efa", True),
        ("prod", "h100-block", False),
        ("prod", "h100-ondemand", True),
        ("dev", "spot-small", False),
    ],
)
def test_shipped_placement_group_on_efa_groups_but_not_with_reserved_capacity(
    stack, group, placement
):
    plan = planned(stack)
    name = f"{stack}-{group}"
    groups = [p.name for p in plan.of_type("aws:ec2/placementGroup:PlacementGroup")]
    assert (name in groups) is placement
    lt = find(plan, LAUNCH_TEMPLATE, name)
    assert ("placement" in lt.inputs) is placement


def test_shipped_prod_capacity_block_group_targets_its_block():
    plan = planned("prod")
    lt = find(plan, LAUNCH_TEMPLATE, "prod-h100-block")
    assert lt.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}
    overflow = find(plan, LAUNCH_TEMPLATE, "prod-h100-ondemand")
    assert "instanceMarketOptions" not in overflow.inputs
    assert "capacityReservationSpecification" not in overflow.inputs


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_user_data_of_every_group_asks_raid0_only_with_instance_storage(stack):
    plan, cfg = planned(stack), stack_config(stack)
    for group in cfg.gpu_node_groups:
        lt = find(plan, LAUNCH_TEMPLATE, f"{stack}-{group.name}")
        (config,) = parse_user_data(base64.b64decode(lt.inputs["userData"]).decode())
        has_raid = "instance" in config["spec"]
        assert has_raid is (FACTS[group.instance_types[0]].nvme_disks > 0)
        assert config["spec"]["kubelet"]["config"]["maxPods"] == group.max_pods


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_asg_tags_match_the_node_groups_labels_and_taints(stack):
    plan = planned(stack)
    for ng in gpu_groups(plan):
        tags = {
            t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
            for t in plan.of_type(ASG_TAG)
            if t.inputs["autoscalingGroupName"].startswith(f"(known after apply: {ng.name}.")
        }
        labels = {
            k.removeprefix(f"{NODE_TEMPLATE}/label/"): v for k, v in tags.items() if "/label/" in k
        }
        assert labels == ng.inputs["labels"]
        taints = {
            k.removeprefix(f"{NODE_TEMPLATE}/taint/"): v for k, v in tags.items() if "/taint/" in k
        }
        effects = {"NO_SCHEDULE": "NoSchedule"}
        # Not a startup taint (the node-join check's): the autoscaler drops those from the nodes
        # it plans with (cluster-autoscaler FAQ.md, "Startup taints"), so no tag carries it.
        assert taints == {
            t["key"]: f"{t['value']}:{effects[t['effect']]}"
            for t in ng.inputs["taints"]
            if not t["key"].startswith("startup-taint.cluster-autoscaler.kubernetes.io/")
        }
        assert all(not t.inputs["tag"]["propagateAtLaunch"] for t in plan.of_type(ASG_TAG))


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_node_role_has_only_what_nodes_need(stack):
    plan = planned(stack)
    attached = {
        a.inputs["policyArn"]
        for a in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.name.startswith(f"{stack}-node-")
    }
    # EKS user guide, "Amazon EKS node IAM role": worker node policy and ECR read-only (the VPC
    # CNI policy sits on the CNI's own Pod Identity role); SSM core for Session Manager access.
    expected = {
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    }
    if stack_config(stack).cluster.node_ssm_access:
        expected.add("arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore")
    assert attached == expected
    role = find(plan, "aws:iam/role:Role", f"{stack}-node")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "ec2.amazonaws.com"}
    for ng in plan.of_type(NODE_GROUP):
        assert ng.inputs["nodeRoleArn"] == f"(known after apply: {stack}-node.arn)"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_system_group_runs_add_ons_and_pod_add_ons_wait_for_it(stack):
    plan = planned(stack)
    system = find(plan, NODE_GROUP, f"{stack}-system")
    assert system.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert "taints" not in system.inputs or not system.inputs["taints"]
    coredns = find(plan, "aws:eks/addon:Addon", f"{stack}-coredns")
    assert system.urn in coredns.dependencies
    vpc_cni = find(plan, "aws:eks/addon:Addon", f"{stack}-vpc-cni")
    for ng in plan.of_type(NODE_GROUP):
        assert vpc_cni.urn in ng.dependencies


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_cluster_autoscaler_is_scoped_pinned_and_prefers_reserved(stack):
    plan = planned(stack)
    release = find(plan, "kubernetes:helm.sh/v3:Release", f"{stack}-cluster-autoscaler")
    values = release.inputs["values"]
    # cluster-autoscaler README, "Releases": run the autoscaler minor that matches the cluster's.
    assert values["image"]["tag"].startswith(f"v{plan.outputs['kubernetes_version']}.")
    assert values["extraArgs"]["expander"] == "priority"
    assert values["autoDiscovery"]["clusterName"] == f"gpu-platform-{stack}"
    policy = json.loads(
        find(plan, "aws:iam/rolePolicy:RolePolicy", f"{stack}-cluster-autoscaler").inputs["policy"]
    )
    (write,) = [s for s in policy["Statement"] if "autoscaling:SetDesiredCapacity" in s["Action"]]
    tag = f"k8s.io/cluster-autoscaler/gpu-platform-{stack}"
    assert write["Condition"] == {"StringEquals": {f"aws:ResourceTag/{tag}": "owned"}}
    association = find(
        plan, "aws:eks/podIdentityAssociation:PodIdentityAssociation", f"{stack}-cluster-autoscaler"
    )
    assert association.inputs["serviceAccount"] == values["rbac"]["serviceAccount"]["name"]
    assert association.inputs["namespace"] == release.inputs["namespace"]


def test_shipped_prod_priorities_put_reserved_before_on_demand_before_spot():
    cfg = stack_config("prod")
    spot = cfg.gpu_node_groups[1].model_copy(update={"name": "spare", "capacity": "spot"})
    priorities = expander_priorities("prod", [*cfg.gpu_node_groups, spot], AutoscalerSettings())
    ranked = [p for level in sorted(priorities, reverse=True) for p in priorities[level]]
    assert ranked == [
        "^eks-prod-h100-block-.*",
        "^eks-prod-h100-ondemand-.*",
        "^eks-prod-spare-.*",
        ".*",
    ]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_helm_release_waits_for_nodes_to_run_its_pods(stack):
    """A release waits for its pods; declared before any node, `pulumi up` would time out."""
    plan = planned(stack)
    index = plan.by_urn
    system = find(plan, NODE_GROUP, f"{stack}-system").urn

    def closure(urn, seen):
        for dep in index[urn].dependencies:
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    releases = plan.of_type("kubernetes:helm.sh/v3:Release")
    assert releases
    for release in releases:
        assert system in closure(release.urn, set()), release.name


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_imds_hop_limit_one_keeps_node_credentials_away_from_pods(stack):
    # EC2 user guide, "Instance metadata options": with a hop limit of 1 a request from a
    # container (one more network hop) gets no answer. Deliberate: see README, IMDS.
    for lt in planned(stack).of_type(LAUNCH_TEMPLATE):
        assert lt.inputs["metadataOptions"] == {
            "httpEndpoint": "enabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        }


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_the_autoscaler_serves_provisioning_requests_with_the_crd_installed_first(stack):
    plan = planned(stack)
    (release,) = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler"]
    assert release.inputs["values"]["extraArgs"]["enable-provisioning-requests"] is True
    (crd,) = plan.of_type("kubernetes:yaml/v2:ConfigFile")
    assert crd.inputs["file"] == (
        "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-chart-9.59.0/"
        "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"
    )
    assert crd.urn in release.dependencies
