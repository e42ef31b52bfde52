"""Settings whose exact value a vendor documents, pinned as literals with the source named.

Each expected value here is copied from AWS, Kubernetes, NVIDIA, Rook or chart documentation and
never read back from the module that sets it, so a single flipped fact fails a test whose name
says why the setting matters.
"""

from __future__ import annotations

import json

import pytest
import yaml

from components.data.gpu_node_group import autoscaler_tags
from model.config import GpuNodeGroupSettings
from model.stacks import ROOT
from plan.engine import run_program
from plan.model import Plan
from tests.conftest import (
    AWS_STACKS,
    CEPH_STACKS,
    STACKS,
    find,
    planned,
    stack_config,
)
from tests.helpers.varied_stacks import capacity_kinds_plan

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"
# cluster-autoscaler, cloudprovider/aws/README.md, "Auto-Discovery Setup" and "Scaling a node
# group to 0": the ASG tag prefix the autoscaler reads a node's labels, taints and resources from.
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


def gpu_group(**overrides) -> GpuNodeGroupSettings:
    return GpuNodeGroupSettings(**{"name": "g", "instance_types": ["p5.48xlarge"], **overrides})


# ------------------------------------------------------------- scale from zero: ASG tags


@pytest.mark.parametrize(
    ("sharing", "strategy", "resources"),
    [
        # p5.48xlarge: 8 × H100 (EC2 accelerated computing specifications).
        (None, "single", {"nvidia.com/gpu": "8"}),
        # NVIDIA device plugin time-slicing: each GPU is advertised `replicas` times; 8 × 4.
        # The cluster's MIG strategy does not touch a pool that is not cut.
        ({"mode": "time-slicing", "replicas": 4}, "mixed", {"nvidia.com/gpu": "32"}),
        # NVIDIA MIG user guide: H100 splits into at most 7 × 1g slices; strategy single
        # advertises them as nvidia.com/gpu, 8 × 7.
        ({"mode": "mig"}, "single", {"nvidia.com/gpu": "56"}),
        # MIG mixed advertises nvidia.com/mig-<profile>; the balanced layout is two 1g.10gb,
        # one 2g.20gb and one 3g.40gb per H100 80GB (GPU Operator default mig-parted config).
        (
            {"mode": "mig"},
            "mixed",
            {
                "nvidia.com/mig-1g.10gb": "16",
                "nvidia.com/mig-2g.20gb": "8",
                "nvidia.com/mig-3g.40gb": "8",
            },
        ),
    ],
)
def test_autoscaler_sees_the_gpus_a_node_will_offer_so_it_can_scale_from_zero(
    sharing, strategy, resources
):
    settings = {"gpu_sharing": sharing} if sharing else {}
    tags = autoscaler_tags(gpu_group(**settings), strategy)
    advertised = {
        k.removeprefix(f"{TEMPLATE}/resources/"): v
        for k, v in tags.items()
        if k.startswith(f"{TEMPLATE}/resources/")
    }
    assert advertised == resources


def test_autoscaler_sees_the_efa_interfaces_of_an_efa_node():
    # EC2 User Guide, EFA supported instance types: p5.48xlarge has 32 EFA interfaces.
    tags = autoscaler_tags(gpu_group(efa=True), "single")
    assert tags[f"{TEMPLATE}/resources/vpc.amazonaws.com/efa"] == "32"


def test_autoscaler_sees_the_gpu_taint_so_it_does_not_expect_ordinary_pods_to_fit():
    tags = autoscaler_tags(gpu_group(), "single")
    taints = {k: v for k, v in tags.items() if "/taint/" in k}
    assert taints == {f"{TEMPLATE}/taint/nvidia.com/gpu": "present:NoSchedule"}


JOIN_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join"


# ------------------------------------------------------------------ node groups in the plan


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_gpu_nodes_repel_pods_that_do_not_ask_for_gpus(stack):
    """`nvidia.com/gpu=present:NoSchedule`; EKS's API spells the effect NO_SCHEDULE
    (EKS API reference, Taint)."""
    plan = planned(stack)
    for group in stack_config(stack).gpu_node_groups:
        ng = find(plan, NODE_GROUP, f"{stack}-{group.name}")
        gpu, *others = ng.inputs["taints"]
        assert gpu == {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
        # Beside it only the node-join check's startup taint, where new nodes are tested
        # (contract/node_join.py; cluster-autoscaler utils/taints/taints.go StartupTaintPrefix).
        assert others in ([], [{"key": JOIN_TAINT, "value": "pending", "effect": "NO_SCHEDULE"}])
        asg_tags = {
            t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
            for t in plan.of_type("aws:autoscaling/tag:Tag")
            if t.name.startswith(f"{stack}-{group.name}-taint/")
        }
        assert asg_tags == {f"{TEMPLATE}/taint/nvidia.com/gpu": "present:NoSchedule"}


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_node_group_sizes_are_the_configured_ones(stack):
    plan = planned(stack)
    for group in stack_config(stack).gpu_node_groups:
        scaling = find(plan, NODE_GROUP, f"{stack}-{group.name}").inputs["scalingConfig"]
        assert scaling == {
            "minSize": group.scaling.min_size,
            "maxSize": group.scaling.max_size,
            "desiredSize": group.scaling.desired,
        }


def test_shipped_prod_block_group_sizes():
    scaling = find(planned("prod"), NODE_GROUP, "prod-h100-block").inputs["scalingConfig"]
    # stacks/Pulumi.prod.yaml: scaling {min_size: 4, max_size: 4, desired_size: 4}, the block's
    # count (reservation_window.instances 4): its instances are paid whether they run or not.
    assert scaling == {"minSize": 4, "maxSize": 4, "desiredSize": 4}


def test_pulumi_leaves_the_desired_size_to_the_autoscaler():
    """Without ignore_changes every `pulumi up` would reset the size the autoscaler chose."""
    registered = run_program("prod").resources.values()
    ignored = {r.name: r.ignore_changes for r in registered if r.type == NODE_GROUP}
    for name in ("prod-system", "prod-h100-block", "prod-h100-ondemand"):
        assert ignored[name] == ["scalingConfig.desiredSize"], name


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_pods_cannot_reach_node_credentials_through_imds(stack):
    """IMDSv2 only, one hop: a pod's request crosses a second hop and is dropped (EC2 User
    Guide, "Configure the instance metadata options": hop limit 1 keeps IMDS to the host)."""
    for lt in planned(stack).of_type(LAUNCH_TEMPLATE):
        assert lt.inputs["metadataOptions"] == {
            "httpEndpoint": "enabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 1,
        }, lt.name


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_efa_groups_pack_nodes_close_for_latency(stack):
    """EC2 User Guide, placement groups: strategy `cluster` packs instances in one zone for
    low-latency node-to-node traffic, which EFA needs."""
    groups = planned(stack).of_type("aws:ec2/placementGroup:PlacementGroup")
    for pg in groups:
        assert pg.inputs["strategy"] == "cluster"


@pytest.mark.parametrize(
    "stack", [s for s in AWS_STACKS if any(g.efa for g in stack_config(s).gpu_node_groups)]
)
def test_efa_traffic_is_allowed_among_members_on_every_protocol(stack):
    """EC2 User Guide, "Prepare an EFA-enabled security group": all traffic in and out, to and
    from the group itself (protocol -1)."""
    plan = planned(stack)
    sg = f"(known after apply: {stack}-efa-sg.id)"
    for kind, name in (("Ingress", "in"), ("Egress", "out")):
        rule = find(
            plan,
            f"aws:vpc/securityGroup{kind}Rule:SecurityGroup{kind}Rule",
            f"{stack}-efa-{name}-self",
        )
        assert rule.inputs["ipProtocol"] == "-1"
        assert rule.inputs["securityGroupId"] == rule.inputs["referencedSecurityGroupId"] == sg


@pytest.fixture(scope="module")
def capacity_plan() -> Plan:
    return capacity_kinds_plan()


@pytest.mark.parametrize(
    ("group", "capacity_type"),
    [
        # EKS API reference, CreateNodegroup capacityType: ON_DEMAND | SPOT | CAPACITY_BLOCK.
        # An On-Demand Capacity Reservation is used through ON_DEMAND plus the launch template's
        # reservation target (EKS user guide, "Capacity Reservations").
        ("od", "ON_DEMAND"),
        ("spot", "SPOT"),
        ("odcr", "ON_DEMAND"),
        ("block", "CAPACITY_BLOCK"),
    ],
)
def test_each_capacity_kind_gets_the_capacity_type_eks_bills_it_as(
    capacity_plan, group, capacity_type
):
    ng = find(capacity_plan, NODE_GROUP, f"cap-{group}")
    assert ng.inputs["capacityType"] == capacity_type


def test_a_capacity_block_launch_template_asks_for_the_block_market(capacity_plan):
    """EC2 User Guide, "Launch instances into a Capacity Block": market type capacity-block."""
    lt = find(capacity_plan, LAUNCH_TEMPLATE, "cap-block")
    assert lt.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    odcr = find(capacity_plan, LAUNCH_TEMPLATE, "cap-odcr")
    assert "instanceMarketOptions" not in odcr.inputs
    target = odcr.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"}


# ----------------------------------------------------------------------- cluster-autoscaler


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_autoscaler_flags_that_decide_which_group_grows_and_which_node_goes(stack):
    """cluster-autoscaler FAQ, "What are the parameters to CA?"."""
    release = find(planned(stack), RELEASE, f"{stack}-cluster-autoscaler")
    args = release.inputs["values"]["extraArgs"]
    # Reserved capacity first, through the priority expander's ConfigMap.
    assert args["expander"] == "priority"
    # Identical groups in several zones grow together instead of one after another.
    assert args["balance-similar-node-groups"] is True
    # GPU nodes keep datasets on local NVMe: that must not keep an idle node alive.
    assert args["skip-nodes-with-local-storage"] is False
    delay = stack_config(stack).autoscaler.scale_down_delay_after_add_minutes
    assert args["scale-down-delay-after-add"] == f"{delay}m"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_autoscaler_waits_the_configured_time_before_removing_an_idle_gpu_node(stack):
    """Per-ASG `autoscaling-options/scaledownunneededtime` (cluster-autoscaler AWS README) as a
    Go duration."""
    plan = planned(stack)
    for group in stack_config(stack).gpu_node_groups:
        (tag,) = [
            t.inputs["tag"]
            for t in plan.of_type("aws:autoscaling/tag:Tag")
            if t.name == f"{stack}-{group.name}-autoscaling-options/scaledownunneededtime"
        ]
        assert tag["key"] == f"{TEMPLATE}/autoscaling-options/scaledownunneededtime"
        assert tag["value"] == f"{group.scale_down_unneeded_minutes}m0s"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_autoscaler_writes_only_to_groups_of_its_own_cluster(stack):
    """EKS tags each managed node group's ASG `k8s.io/cluster-autoscaler/<cluster>=owned`
    (cluster-autoscaler AWS README, "Auto-Discovery Setup")."""
    policy = json.loads(
        find(planned(stack), "aws:iam/rolePolicy:RolePolicy", f"{stack}-cluster-autoscaler").inputs[
            "policy"
        ]
    )
    (write,) = [s for s in policy["Statement"] if "Condition" in s]
    assert sorted(write["Action"]) == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    key = f"aws:ResourceTag/k8s.io/cluster-autoscaler/gpu-platform-{stack}"
    assert write["Condition"] == {"StringEquals": {key: "owned"}}


# ------------------------------------------------------------------- storage data safety


@pytest.mark.parametrize("stack", CEPH_STACKS)
def test_ceph_keeps_copies_on_separate_hosts_and_refuses_unsafe_sizes(stack):
    """Rook CephFilesystem CRD docs: failureDomain `host` puts each replica on another node;
    `requireSafeReplicaSize` refuses a size that would lose data on one failure; size 3 is
    Rook's production example (deploy/examples/filesystem.yaml)."""
    (fs,) = [o for o in planned(stack).kubernetes_objects() if o["kind"] == "CephFilesystem"]
    size = stack_config(stack).storage.ceph.replication
    for pool in [fs["spec"]["metadataPool"], *fs["spec"]["dataPools"]]:
        assert pool["failureDomain"] == "host"
        assert pool["replicated"] == {"size": size, "requireSafeReplicaSize": True}


def test_shipped_onprem_ceph_keeps_three_copies():
    (fs,) = [o for o in planned("onprem").kubernetes_objects() if o["kind"] == "CephFilesystem"]
    # stacks/Pulumi.onprem.yaml: replication 3, Rook's production example.
    assert fs["spec"]["dataPools"][0]["replicated"]["size"] == 3


@pytest.mark.parametrize("stack", CEPH_STACKS)
def test_deleting_the_ceph_filesystem_object_keeps_the_data(stack):
    """Rook CephFilesystem docs: `preserveFilesystemOnDelete: true` keeps the pools when the
    custom resource is deleted (by a rename or a `pulumi destroy`)."""
    (fs,) = [o for o in planned(stack).kubernetes_objects() if o["kind"] == "CephFilesystem"]
    assert fs["spec"]["preserveFilesystemOnDelete"] is True


@pytest.mark.parametrize("stack", STACKS)
def test_releasing_a_claim_never_deletes_the_shared_data(stack):
    """Kubernetes docs, Persistent Volumes, "Reclaiming": Retain keeps the volume and its data
    after the claim goes; Delete would erase the training data."""
    objects = planned(stack).kubernetes_objects()
    policies = [
        o["spec"]["persistentVolumeReclaimPolicy"]
        for o in objects
        if o["kind"] == "PersistentVolume"
    ]
    policies += [o["reclaimPolicy"] for o in objects if o["kind"] == "StorageClass"]
    assert policies and set(policies) == {"Retain"}


@pytest.mark.parametrize("stack", CEPH_STACKS)
def test_ceph_node_plugin_runs_on_tainted_gpu_nodes(stack):
    """The CephFS node plugin must run on every node that mounts the file system, GPU nodes
    (tainted nvidia.com/gpu) included: tolerate every taint (Kubernetes docs, "Taints and
    Tolerations": an empty key with operator Exists matches everything)."""
    values = find(planned(stack), RELEASE, f"{stack}-ceph-csi-drivers").inputs["values"]
    node_plugin = values["operatorConfig"]["driverSpecDefaults"]["nodePlugin"]
    assert node_plugin["tolerations"] == [{"operator": "Exists"}]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_fsx_node_plugin_runs_on_tainted_gpu_nodes(stack):
    """aws-fsx-csi-driver chart 1.17.0 values.yaml: `node.tolerateAllTaints: true` by default;
    the project must not turn it off, or GPU nodes could not mount Lustre."""
    defaults = yaml.safe_load(
        (ROOT.parent / "shared/charts/aws-fsx-csi-driver/1.17.0/values.yaml").read_text()
    )
    assert defaults["node"]["tolerateAllTaints"] is True
    values = find(planned(stack), RELEASE, f"{stack}-fsx-csi").inputs["values"]
    assert values.get("node", {}).get("tolerateAllTaints", True) is True
