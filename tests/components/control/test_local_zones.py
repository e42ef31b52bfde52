"""Local Zones: a GPU group placed where AWS sells its capacity (P6e-GB200 UltraServer Capacity
Blocks: only in the Dallas Local Zone of us-east-1, EC2 User Guide, "Launch instances using
Capacity Blocks"), the rest of the platform in the region."""

from __future__ import annotations

from ipaddress import IPv4Network

from components.control.network import zone_groups
from model.config.regions import LOCAL_ZONES
from tests.helpers.varied_stacks import GB200_POOL, GB200_STACK, every_aws_plan, gb200_plan

SUBNET = "aws:ec2/subnet:Subnet"
ZONE_GROUP = "aws:ec2/availabilityZoneGroup:AvailabilityZoneGroup"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
DALLAS = "us-east-1-dfw-2a"


def _handle(resource) -> str:
    return f"(known after apply: {resource.name}.id)"


def _local_zone_subnets(plan) -> dict[str, object]:
    """The plan's subnets in a zone whose name has no region letter: Local Zone names end in
    `-<metro>-<n><letter>` (AWS Local Zones User Guide, "Available Local Zones")."""
    return {
        _handle(s): s for s in plan.of_type(SUBNET) if s.inputs["availabilityZone"].count("-") > 2
    }


def test_the_dallas_local_zone_is_the_one_aws_lists():
    # AWS Local Zones User Guide, "Available Local Zones", North America: US East (Dallas) 2,
    # us-east-1-dfw-2a, use1-dfw2-az1, network border group us-east-1-dfw-2, parent us-east-1
    # from use1-az4.
    row = LOCAL_ZONES[DALLAS]
    assert (row.zone_id, row.group, row.parent_region, row.parent_zone_id) == (
        "use1-dfw2-az1",
        "us-east-1-dfw-2",
        "us-east-1",
        "use1-az4",
    )


def test_the_eks_cluster_and_the_system_nodes_never_take_a_local_zone_subnet():
    """The class, over every AWS stack and fixture: EKS User Guide, "Launch low-latency EKS
    clusters with AWS Local Zones": "Amazon EKS can't place network interfaces in your Local
    Zone subnets. This means that you must not specify Local Zone subnets when you create your
    cluster." The system nodes run the cluster's own software and stay in the region with it.
    At least one stack (the GB200 one) has a Local Zone subnet, or the class is untested."""
    found, wrong = [], []
    for stack, plan in every_aws_plan():
        local = _local_zone_subnets(plan)
        found += [f"{stack}: {s.name}" for s in local.values()]
        (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
        takers = [(cluster.name, cluster.inputs["vpcConfig"]["subnetIds"])]
        takers += [
            (ng.name, ng.inputs["subnetIds"])
            for ng in plan.of_type(NODE_GROUP)
            if "gpu-platform/node-group" not in (ng.inputs.get("labels") or {})
        ]
        wrong += [
            f"{stack}: {name} takes {local[s].name}"
            for name, ids in takers
            for s in ids
            if s in local
        ]
    assert found, "no stack declares a Local Zone subnet"
    assert not wrong, wrong


def test_the_gb200_pool_launches_only_in_the_dallas_local_zone_subnet():
    """A Capacity Block's node group takes subnets only in the block's zone (EKS User Guide,
    capacity-blocks-mng.adoc), and the GB200 blocks are in the Dallas Local Zone."""
    plan = gb200_plan()
    (pool,) = [ng for ng in plan.of_type(NODE_GROUP) if ng.name == f"{GB200_STACK}-{GB200_POOL}"]
    (subnet,) = [s for s in plan.of_type(SUBNET) if _handle(s) in pool.inputs["subnetIds"]]
    assert pool.inputs["subnetIds"] == [_handle(subnet)]
    assert subnet.inputs["availabilityZone"] == DALLAS
    assert subnet.inputs["mapPublicIpOnLaunch"] is False


def test_the_local_zone_group_is_opted_in_before_its_subnet():
    """EC2 API Reference, ModifyAvailabilityZoneGroup: a Local Zone is used once its zone group
    (us-east-1-dfw-2 for Dallas) is `opted-in`; a subnet in a zone not opted in is refused."""
    plan = gb200_plan()
    (opt_in,) = plan.of_type(ZONE_GROUP)
    assert (opt_in.inputs["groupName"], opt_in.inputs["optInStatus"]) == (
        "us-east-1-dfw-2",
        "opted-in",
    )
    (subnet,) = _local_zone_subnets(plan).values()
    assert opt_in.urn in subnet.dependencies


def test_a_stack_without_local_zones_opts_in_to_none():
    assert [
        f"{s}: {r.name}"
        for s, p in every_aws_plan()
        if s != GB200_STACK
        for r in p.of_type(ZONE_GROUP)
    ] == []


def test_a_local_zone_subnet_routes_out_through_a_nat_gateway_of_the_region():
    """Its default route goes through the NAT gateway of the region's first zone: that a NAT
    gateway can be created in the Dallas Local Zone was not verified."""
    plan = gb200_plan()
    (subnet,) = _local_zone_subnets(plan).values()
    (association,) = [
        a
        for a in plan.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation")
        if a.inputs["subnetId"] == _handle(subnet)
    ]
    (default,) = [
        r
        for r in plan.of_type("aws:ec2/route:Route")
        if r.inputs["routeTableId"] == association.inputs["routeTableId"]
        and r.inputs["destinationCidrBlock"] == "0.0.0.0/0"
    ]
    nats = {_handle(n): n for n in plan.of_type("aws:ec2/natGateway:NatGateway")}
    nat = nats[default.inputs["natGatewayId"]]
    subnets = {_handle(s): s for s in plan.of_type(SUBNET)}
    assert subnets[nat.inputs["subnetId"]].inputs["availabilityZone"] == "us-east-1a"


def test_local_zone_nodes_reach_the_file_system_and_their_efa_peers():
    """FSx for Lustre stays in the region; the rules that let GPU nodes reach it (and EFA peers
    each other) name security groups, so a node in the Local Zone is covered by joining them:
    the cluster's group (the FSx rules' peer) and the EFA group. A rule that admits the region's
    private subnets by address admits the Local Zone subnet too."""
    plan = gb200_plan()
    (subnet,) = _local_zone_subnets(plan).values()
    (fsx,) = plan.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    subnets = {_handle(s): s for s in plan.of_type(SUBNET)}
    assert subnets[fsx.inputs["subnetIds"]].inputs["availabilityZone"] == "us-east-1a"
    (template,) = [
        t
        for t in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
        if t.name == f"{GB200_STACK}-{GB200_POOL}"
    ]
    for nic in template.inputs["networkInterfaces"]:
        assert nic["securityGroups"] == [
            f"(known after apply: {GB200_STACK}-eks.vpcConfig.clusterSecurityGroupId)",
            f"(known after apply: {GB200_STACK}-efa-sg.id)",
        ]
    block = IPv4Network(subnet.inputs["cidrBlock"])
    region_private = [
        IPv4Network(s.inputs["cidrBlock"])
        for s in plan.of_type(SUBNET)
        if "-private-" in s.name and s is not subnet
    ]
    checked = 0
    for group in plan.of_type("aws:ec2/securityGroup:SecurityGroup"):
        for rule in group.inputs.get("ingress") or []:
            cidrs = [IPv4Network(c) for c in rule.get("cidrBlocks") or []]
            if any(p.subnet_of(c) for p in region_private for c in cidrs):
                assert any(block.subnet_of(c) for c in cidrs), (group.name, rule)
                checked += 1
    assert checked, "no address rule admits the region's private subnets"


def test_each_zone_group_is_opted_in_once_in_the_stacks_order():
    # AWS Local Zones User Guide, "Available Local Zones": the network border group (the zone
    # group ModifyAvailabilityZoneGroup names) of us-east-1-atl-2a is us-east-1-atl-2, of
    # us-east-1-dfw-2a us-east-1-dfw-2.
    assert zone_groups(["us-east-1-atl-2a", DALLAS, "us-east-1-atl-2a"]) == [
        "us-east-1-atl-2",
        "us-east-1-dfw-2",
    ]


def test_no_local_zone_subnet_is_offered_to_the_load_balancer_controller():
    """The controller picks one subnet a zone by the role tags (AWS Load Balancer Controller,
    "Subnet auto-discovery"), and a Local Zone takes Application Load Balancers only (EKS User
    Guide, "Launch low-latency EKS clusters with AWS Local Zones"): its subnet carries the
    cluster tag, no role tag."""
    tagged = [
        f"{stack}: {s.name}"
        for stack, plan in every_aws_plan()
        for s in _local_zone_subnets(plan).values()
        if any(k.startswith("kubernetes.io/role/") for k in s.inputs["tags"])
    ]
    assert tagged == []
