"""GPU node group settings: defaults that follow FACTS.md, and a clear error for bad input."""

from __future__ import annotations

import pytest

from model.config import ConfigError, parse_config

ZONES = ["us-east-1a", "us-east-1b"]
AWS = {"region": "us-east-1", "zones": ZONES}
CLUSTER = {"admin_principal_arns": ["arn:aws:iam::111122223333:role/platform-admins"]}


def config(*groups, aws=None, **extra):
    raw = {"aws": aws or AWS, "gpu_node_groups": list(groups), "cluster": CLUSTER, **extra}
    return parse_config(raw, "stacks/Pulumi.t.yaml")


def g(**overrides):
    return {"name": "gpu", "instance_types": ["p4d.24xlarge"], **overrides}


def test_placement_group_default_follows_efa_and_reservations():
    cfg = config(
        g(name="a", efa=True),
        g(
            name="b",
            efa=True,
            capacity="reservation",
            capacity_reservation_id="cr-0123456789abcdef0",
        ),
        g(name="c"),
        g(
            name="d",
            efa=True,
            capacity="capacity_block",
            capacity_reservation_id="cr-0123456789abcdef0",
            placement_group=True,
        ),
        # An explicit placement group on a reservation holds only where the policy says the
        # reservation was made in it (mandatory rule no-placement-group-with-reservation).
        policy={"allow_placement_group_with_reservation": True},
    )
    assert [x.uses_placement_group for x in cfg.gpu_node_groups] == [True, False, False, True]


def test_efa_groups_stay_in_one_zone_others_span_all():
    cfg = config(g(name="efa", efa=True), g(name="any"), g(name="pinned", zone="us-east-1b"))
    assert [cfg.group_zones(x) for x in cfg.gpu_node_groups] == [
        ["us-east-1a"],
        ZONES,
        ["us-east-1b"],
    ]


def test_max_pods_defaults_below_the_vpc_cni_limit():
    cfg = config(g(name="p4d"), g(name="p5", instance_types=["p5.48xlarge"]))
    assert [x.max_pods for x in cfg.gpu_node_groups] == [110, 100]


GB200 = g(
    instance_types=["p6e-gb200.36xlarge"],
    capacity="capacity_block",
    capacity_reservation_id="cr-0123456789abcdef0",
    scaling={"min_size": 18, "max_size": 18, "desired_size": 18},
)


def test_a_gb200_group_as_aws_sells_it_is_accepted():
    # Whole UltraServers (9 and 18 instances, EKS UltraServer page) in a Capacity Block, on 1.34
    # (from which Kueue charges the ComputeDomain channels of its jobs: PINS.md "DRA quota") and
    # the first AMI release GB200 takes. That release keeps SOCI's directory off the
    # instance-store array, so SOCI parallel pull is off here (test_fast_image_pull).
    for size in (9, 18, 36):
        scaling = {"min_size": 0, "max_size": size}
        config(
            GB200 | {"scaling": scaling, "ami_release": "1.34.1-20251103"},
            cluster={**CLUSTER, "kubernetes_version": "1.34"},
            aws={**AWS, "zone_offerings": {"p6e-gb200.36xlarge": ZONES}},
            images={"fast_pull": False},
        )


BAD = [
    pytest.param(
        [g(instance_types=["g5.2xlarge"], efa=True)],
        {},
        "gpu_node_groups[0].instance_types[0]",
        "g5.2xlarge has no EFA",
        id="efa-on-type-without-efa",
    ),
    pytest.param(
        [g(scaling={"min_size": 3, "max_size": 1})],
        {},
        "gpu_node_groups[0].scaling.min_size",
        "min_size 3 > max_size 1",
        id="min-over-max",
    ),
    pytest.param(
        [g(scaling={"min_size": 0, "max_size": 2, "desired_size": 5})],
        {},
        "gpu_node_groups[0].scaling.desired_size",
        "desired_size 5 outside [min_size 0, max_size 2]",
        id="desired-outside",
    ),
    pytest.param(
        [g(capacity="spot", capacity_reservation_id="cr-0123456789abcdef0")],
        {},
        "gpu_node_groups[0].capacity",
        "spot cannot launch into a capacity reservation",
        id="spot-with-reservation",
    ),
    pytest.param(
        [g(capacity="capacity_block")],
        {},
        "gpu_node_groups[0].capacity_reservation_id",
        "needs the block's cr- id",
        id="block-without-id",
    ),
    pytest.param(
        [
            g(
                capacity="reservation",
                capacity_reservation_id="cr-0123456789abcdef0",
                instance_types=["p4d.24xlarge", "p4de.24xlarge"],
            )
        ],
        {},
        "gpu_node_groups[0].instance_types",
        "exactly one instance type",
        id="reservation-with-two-types",
    ),
    pytest.param(
        [g(zone="us-east-1b")],
        {"aws": {**AWS, "zone_offerings": {"p4d.24xlarge": ["us-east-1a"]}}},
        "gpu_node_groups[0].zone",
        "us-east-1b does not offer p4d.24xlarge",
        id="zone-without-the-type",
    ),
    pytest.param(
        [g(zone="us-east-1c")],
        {},
        "gpu_node_groups[0].zone",
        "not one of aws.zones",
        id="zone-outside-the-stack",
    ),
    pytest.param(
        [g(efa=True, scaling={"min_size": 0, "max_size": 64})],
        {"network": {"vpc_cidr": "10.0.0.0/20"}},
        "gpu_node_groups[0].scaling.max_size",
        "private subnet 10.0.0.0/22 in us-east-1a has 1019 usable addresses",
        id="subnet-too-small",
    ),
    pytest.param(
        [g(instance_types=["m7i.xlarge"], gpu_sharing={"mode": "mps", "replicas": 2})],
        {},
        "gpu_node_groups[0].gpu_sharing.mode",
        "mps shares GPUs, but m7i.xlarge has none",
        id="mps-on-type-without-gpus",
    ),
    pytest.param(
        [g(instance_types=["m7i.xlarge"])],
        {},
        "gpu_node_groups[0].instance_types[0]",
        "m7i.xlarge has no GPUs",
        id="cpu-type-in-gpu-group",
    ),
    pytest.param(
        [g(instance_types=["g6e.12xlarge"], gpu_sharing={"mode": "mig"})],
        {},
        "gpu_node_groups[0].gpu_sharing.mode",
        "g6e.12xlarge has L40S",
        id="mig-on-l40s",
    ),
    pytest.param(
        [g(instance_types=["p4d.24xlarge", "p5.48xlarge"], gpu_sharing={"mode": "mig"})],
        {},
        "gpu_node_groups[0].gpu_sharing.mode",
        "one GPU model",
        id="mig-across-gpu-models",
    ),
    pytest.param(
        [g(gpu_sharing={"mode": "none", "replicas": 4})],
        {},
        "gpu_node_groups[0].gpu_sharing.replicas",
        "needs mode time-slicing or mps",
        id="replicas-without-sharing",
    ),
    pytest.param(
        [g(efa=True, instance_types=["p4d.24xlarge", "p5.48xlarge"])],
        {},
        "gpu_node_groups[0].instance_types",
        "same EFA interface count",
        id="mixed-efa-layouts",
    ),
    pytest.param(
        [g(kubelet={"max_pods": 300}, instance_types=["p5.48xlarge"])],
        {},
        "gpu_node_groups[0].kubelet.max_pods",
        "exceeds p5.48xlarge's VPC CNI limit 100",
        id="max-pods-over-limit",
    ),
    pytest.param(
        [g(), g()], {}, "gpu_node_groups[1].name", "'gpu' is used twice", id="duplicate-names"
    ),
    pytest.param(
        [g(kubelet={"cpu_manager_policy": "static", "system_reserved": {}, "kube_reserved": {}})],
        {},
        "gpu_node_groups[0].kubelet.cpu_manager_policy",
        "static CPU manager needs cpu",
        id="static-cpu-without-reserved",
    ),
    # EC2 User Guide, "Launch instances using Capacity Blocks": P6e-GB200 is sold only as
    # UltraServer Capacity Blocks.
    *[
        pytest.param(
            [g(instance_types=["p6e-gb200.36xlarge"], capacity=kind, **more)],
            {},
            "gpu_node_groups[0].capacity",
            f"p6e-gb200.36xlarge is sold only as UltraServer Capacity Blocks (EC2 User Guide, "
            f'"Launch instances using Capacity Blocks"), not {kind}',
            id=f"gb200-{kind}",
        )
        for kind, more in [
            ("on_demand", {}),
            ("spot", {}),
            ("reservation", {"capacity_reservation_id": "cr-0123456789abcdef0"}),
        ]
    ],
    # EKS UltraServer page: u-p6e-gb200x36 is 9 instances, u-p6e-gb200x72 18.
    pytest.param(
        [GB200 | {"scaling": {"min_size": 0, "max_size": 10}}],
        {},
        "gpu_node_groups[0].scaling.max_size",
        "10 is not a whole number of p6e-gb200.36xlarge UltraServers (UltraServers of 9, 18 "
        "instances",
        id="gb200-part-of-an-ultraserver",
    ),
    # EKS UltraServer page: AMI release v20251103 or later (driver 580).
    pytest.param(
        [GB200 | {"ami_release": "1.33.5-20251031"}],
        {"cluster": {**CLUSTER, "kubernetes_version": "1.33"}},
        "gpu_node_groups[0].ami_release",
        "'1.33.5-20251031' is older than v20251103",
        id="gb200-ami-before-driver-580",
    ),
    # Grace is arm64, p4d x86_64: one launch template boots one AMI.
    pytest.param(
        [g(instance_types=["p4d.24xlarge", "p6e-gb200.36xlarge"])],
        {},
        "gpu_node_groups[0].instance_types",
        "one AMI, built for one CPU architecture (p4d.24xlarge x86_64, p6e-gb200.36xlarge arm64)",
        id="mixed-cpu-architectures",
    ),
    # Driver 580 turns on CDMM, and with CDMM MIG is not supported (EKS UltraServer page).
    pytest.param(
        [GB200 | {"gpu_sharing": {"mode": "mig"}}],
        {},
        "gpu_node_groups[0].gpu_sharing.mode",
        "p6e-gb200.36xlarge has GB200",
        id="gb200-mig",
    ),
    # g5.xlarge: 4 vCPUs, 1 GPU (AWS "Amazon EC2 G5 instances"); 2 reserved and 2 kept for
    # DaemonSets leave no whole core for the training pod's GPU.
    pytest.param(
        [g(instance_types=["g5.xlarge"], kubelet={"system_reserved": {"cpu": "1500m"}})],
        {},
        "gpu_node_groups[0].kubelet",
        "g5.xlarge's 4 vCPUs less 2 reserved and 2 for DaemonSets leave no whole CPU",
        id="no-cpu-left-for-training",
    ),
]


@pytest.mark.parametrize(("groups", "extra", "path", "detail"), BAD)
def test_bad_group_names_path_and_fix(groups, extra, path, detail):
    with pytest.raises(ConfigError) as caught:
        config(*groups, **extra)
    problems = caught.value.problems
    assert any(p.startswith(f"gpu-platform:{path}:") and detail in p for p in problems), problems


def test_gpu_groups_are_refused_on_existing_clusters():
    raw = {
        "provider": "existing",
        "existing": {"name": "lab", "kubeconfig_path": "kc"},
        "gpu_node_groups": [g()],
    }
    with pytest.raises(ConfigError, match=r"gpu-platform:gpu_node_groups: only valid with"):
        parse_config(raw, "stacks/Pulumi.t.yaml")


def test_topology_manager_defaults_to_restricted():
    (group,) = config(g()).gpu_node_groups
    assert group.kubelet.topology_manager_policy == "restricted"


@pytest.mark.parametrize("instance_type", ["p4d.24xlarge", "p5.48xlarge", "g5.48xlarge"])
def test_single_numa_node_is_refused_where_gpus_span_two_sockets(instance_type):
    # AWS EC2 instance specifications: p4d.24xlarge, p5.48xlarge and g5.48xlarge are
    # two-socket hosts with 4 of their 8 GPUs on each socket's PCIe tree, so an 8-GPU pod can
    # never be aligned to one NUMA node (Kubernetes docs, "Control Topology Management
    # Policies on a node": single-numa-node rejects it with TopologyAffinityError).
    kubelet = {"topology_manager_policy": "single-numa-node"}
    with pytest.raises(ConfigError) as caught:
        config(g(instance_types=[instance_type], kubelet=kubelet))
    (problem,) = caught.value.problems
    assert problem.startswith(
        "gpu-platform:gpu_node_groups[0].kubelet.topology_manager_policy: single-numa-node "
        f"rejects any pod needing GPUs from more than one of {instance_type}'s 2 NUMA nodes "
        "(8 GPUs: a pod asking for more than 4 fails with TopologyAffinityError)"
    )


def test_single_numa_node_stays_allowed_on_a_one_socket_type():
    # g5.2xlarge: one A10G on a single-socket host (AWS EC2 accelerated instance specs).
    kubelet = {"topology_manager_policy": "single-numa-node"}
    (group,) = config(g(instance_types=["g5.2xlarge"], kubelet=kubelet)).gpu_node_groups
    assert group.kubelet.topology_manager_policy == "single-numa-node"
