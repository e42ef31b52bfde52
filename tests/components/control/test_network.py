"""Network builders, and the network each AWS stack declares."""

from __future__ import annotations

import json
from ipaddress import IPv4Network

import pytest

from components.control.network import (
    flow_log_write_policy,
    interface_endpoint_services,
    route_name,
)
from model.config import NetworkSettings, subnet_layout
from model.config.network import nat_zones
from plan.diff import flatten
from tests.conftest import AWS_STACKS, planned, stack_config
from tests.helpers.network_stacks import (
    EXISTING_LOCAL_SUBNET,
    EXISTING_SUBNETS,
    EXISTING_VPC,
    OFFICE,
    TGW,
    existing_vpc_plan,
    frankfurt_plan,
)
from tests.helpers.varied_stacks import every_aws_plan

ZONES3 = ["us-east-1a", "us-east-1b", "us-east-1c"]
ROUTE = "aws:ec2/route:Route"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"


@pytest.mark.parametrize("zones", [ZONES3[:2], ZONES3, [*ZONES3, "us-east-1d", "us-east-1e"]])
def test_default_layout_fits_the_vpc_without_overlap(zones):
    layout = subnet_layout(NetworkSettings(vpc_cidr=IPv4Network("10.0.0.0/16")), zones)
    assert [zs.zone for zs in layout] == zones
    nets = [zs.public for zs in layout] + [zs.private for zs in layout]
    for i, a in enumerate(nets):
        assert a.subnet_of(IPv4Network("10.0.0.0/16"))
        for b in nets[i + 1 :]:
            assert not a.overlaps(b)
    # Private subnets carry nodes and pods: each is much larger than a public one.
    assert all(zs.private.num_addresses >= 4 * zs.public.num_addresses for zs in layout)


def test_two_zones_get_quarter_vpc_private_subnets():
    layout = subnet_layout(NetworkSettings(vpc_cidr=IPv4Network("10.0.0.0/16")), ZONES3[:2])
    assert [str(zs.private) for zs in layout] == ["10.0.0.0/18", "10.0.64.0/18"]
    assert [str(zs.public) for zs in layout] == ["10.0.192.0/20", "10.0.208.0/20"]


def test_explicit_subnets_are_used_as_given():
    settings = NetworkSettings(
        vpc_cidr=IPv4Network("10.0.0.0/16"),
        public_subnet_cidrs=[IPv4Network("10.0.250.0/24"), IPv4Network("10.0.251.0/24")],
        private_subnet_cidrs=[IPv4Network("10.0.0.0/17"), IPv4Network("10.0.128.0/18")],
    )
    layout = subnet_layout(settings, ZONES3[:2])
    assert [str(zs.private) for zs in layout] == ["10.0.0.0/17", "10.0.128.0/18"]
    assert [str(zs.public) for zs in layout] == ["10.0.250.0/24", "10.0.251.0/24"]


def test_nat_per_zone_or_single():
    assert nat_zones(NetworkSettings(nat_gateways="single"), ZONES3) == ["us-east-1a"]
    assert nat_zones(NetworkSettings(nat_gateways="per_zone"), ZONES3) == ZONES3


def test_interface_endpoints_cover_ecr_and_sts():
    assert interface_endpoint_services("eu-west-1") == {
        "ecr-api": "com.amazonaws.eu-west-1.ecr.api",
        "ecr-dkr": "com.amazonaws.eu-west-1.ecr.dkr",
        "sts": "com.amazonaws.eu-west-1.sts",
    }


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_subnets_span_every_zone_and_are_tagged_for_load_balancers(stack):
    plan = planned(stack)
    subnets = plan.of_type("aws:ec2/subnet:Subnet")
    zones = {s.inputs["availabilityZone"] for s in subnets}
    assert len(zones) >= 2
    assert len(subnets) == 2 * len(zones)
    for s in subnets:
        assert s.inputs["mapPublicIpOnLaunch"] is False
        assert s.inputs["tags"][f"kubernetes.io/cluster/gpu-platform-{stack}"] == "shared"
        role = "elb" if "-public-" in s.name else "internal-elb"
        assert s.inputs["tags"][f"kubernetes.io/role/{role}"] == "1"


@pytest.mark.parametrize(("stack", "nats"), [("dev", 1), ("staging", 3), ("prod", 3)])
def test_shipped_nat_gateways_per_environment(stack, nats):
    plan = planned(stack)
    assert len(plan.of_type("aws:ec2/natGateway:NatGateway")) == nats
    used = {r.inputs["natGatewayId"] for r in plan.of_type(ROUTE) if "natGatewayId" in r.inputs}
    assert len(used) == nats


@pytest.mark.parametrize(("stack", "flow_logs"), [("dev", 0), ("staging", 1), ("prod", 1)])
def test_shipped_flow_logs_in_staging_and_prod(stack, flow_logs):
    plan = planned(stack)
    logs = plan.of_type("aws:ec2/flowLog:FlowLog")
    assert len(logs) == flow_logs
    for log in logs:
        assert log.inputs["trafficType"] == "ALL"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_vpc_endpoints_for_s3_ecr_and_sts(stack):
    plan = planned(stack)
    endpoints = {
        e.inputs["serviceName"]: e for e in plan.of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    }
    region = stack_config(stack).aws.region
    assert set(endpoints) == {
        f"com.amazonaws.{region}.{svc}" for svc in ("s3", "ecr.api", "ecr.dkr", "sts")
    }
    assert endpoints[f"com.amazonaws.{region}.s3"].inputs["vpcEndpointType"] == "Gateway"
    assert endpoints[f"com.amazonaws.{region}.sts"].inputs["privateDnsEnabled"] is True


EFA_STACKS = [s for s in AWS_STACKS if any(g.efa for g in stack_config(s).gpu_node_groups)]


@pytest.mark.parametrize("stack", EFA_STACKS)
def test_efa_security_group_allows_all_traffic_to_and_from_itself_only(stack):
    plan = planned(stack)
    sg_id = f"(known after apply: {stack}-efa-sg.id)"
    ingress = plan.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    egress = plan.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    for rules in (ingress, egress):
        efa = [r for r in rules if r.inputs["securityGroupId"] == sg_id]
        assert len(efa) == 1
        assert efa[0].inputs["ipProtocol"] == "-1"
        assert efa[0].inputs["referencedSecurityGroupId"] == sg_id
        assert "cidrIpv4" not in efa[0].inputs


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_default_security_group_is_adopted_with_no_rules(stack):
    # AWS Security Hub control EC2.2: "VPC default security groups should not allow inbound
    # or outbound traffic". An adopted group with no rule blocks, rather than allows.
    plan = planned(stack)
    (group,) = plan.of_type("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
    assert group.inputs["vpcId"] == f"(known after apply: {stack}-vpc.id)"
    assert not group.inputs.get("ingress")
    assert not group.inputs.get("egress")


SECURITY_GROUP_TYPES = (
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:ec2/securityGroupRule:SecurityGroupRule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_security_group_and_rule_says_what_it_is_for(stack):
    # A reviewer (and AWS Config's security group checks) reads the description to judge a
    # rule; one without it cannot be reviewed.
    plan = planned(stack)
    checked = 0
    for token in SECURITY_GROUP_TYPES:
        for resource in plan.of_type(token):
            assert resource.inputs.get("description"), f"{resource.name} has no description"
            for inline in resource.inputs.get("ingress", []) + resource.inputs.get("egress", []):
                assert inline.get("description"), f"{resource.name}: an inline rule has none"
            checked += 1
    assert checked > 0


def test_the_flow_log_role_grants_what_the_vpc_guide_lists_on_its_own_group():
    group = "arn:aws:logs:us-east-1:210987654321:log-group:/gpu-platform/x/vpc-flow-logs"
    policy = json.loads(flow_log_write_policy(group))
    granted = {
        action: statement["Resource"]
        for statement in policy["Statement"]
        if statement["Effect"] == "Allow"
        for action in statement["Action"]
    }
    # Amazon VPC User Guide, "IAM role for publishing flow logs to CloudWatch Logs": the policy
    # "must include at least" these. CreateLogGroup is left out on purpose: the program creates
    # the group with its retention and key, and a role that could create groups would recreate
    # a deleted one without either.
    guide = {
        "logs:CreateLogGroup",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "logs:DescribeLogGroups",
        "logs:DescribeLogStreams",
    }
    assert set(granted) == guide - {"logs:CreateLogGroup"}
    # Writes and stream reads stay on the stack's own group; listing groups is account-wide.
    for action in ("logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"):
        assert granted[action] == [group, f"{group}:*"], action
    assert granted["logs:DescribeLogGroups"] == "*"


SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
RULES = (
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)


def test_every_security_group_declared_is_used_by_another_resource():
    """The class: a security group is worth declaring only if something joins or names it (a
    launch template's interfaces, the cluster, an endpoint, a file system, another group's
    rule); its own rules alone do not count. dev, whose one GPU group has no EFA, declared the
    EFA group and its two self rules for nothing."""
    unused = []
    for stack, plan in every_aws_plan():
        for group in plan.of_type(SECURITY_GROUP):
            handle = f"(known after apply: {group.name}.id)"
            users = [
                f"{r.type} {r.name}"
                for r in plan.resources
                if r is not group
                and not (r.type in RULES and r.inputs.get("securityGroupId") == handle)
                and handle in flatten(r.inputs).values()
            ]
            if not users:
                unused.append(f"{stack}: {group.name}")
    assert not unused, "security groups nothing but their own rules use: " + ", ".join(unused)


def test_a_stack_without_efa_declares_no_efa_group_nor_output():
    plan = planned("dev")
    assert not any(g.efa for g in stack_config("dev").gpu_node_groups)
    assert [r.name for r in plan.of_type(SECURITY_GROUP) if "efa" in r.name] == []
    assert "efa_security_group_id" not in plan.outputs


# ------------------------------------------------------------------ routes and gateways


def test_no_route_table_declares_its_routes_inline():
    """The class: a route table with inline `routes` owns every route of the table, so the next
    `up` deletes a route someone added beside them (the pulumi-aws RouteTable docs: inline
    routes and Route resources cannot be used together). Every route is its own resource."""
    inline = [
        f"{stack}: {table.name}"
        for stack, plan in every_aws_plan()
        for table in plan.of_type(ROUTE_TABLE)
        if "routes" in table.inputs
    ]
    assert not inline, "route tables with inline routes: " + ", ".join(inline)


def test_every_route_table_has_its_default_route_as_a_resource_of_its_own():
    # Public tables to the internet gateway, private ones to a NAT gateway.
    plan = planned("dev")
    defaults = {
        r.inputs["routeTableId"]: r
        for r in plan.of_type(ROUTE)
        if r.inputs["destinationCidrBlock"] == "0.0.0.0/0"
    }
    for table in plan.of_type(ROUTE_TABLE):
        route = defaults[f"(known after apply: {table.name}.id)"]
        target = "gatewayId" if "-public" in table.name else "natGatewayId"
        assert target in route.inputs, route.name


def test_a_route_is_named_by_its_table_and_destination():
    # Stable when other routes come or go: a name from the list's order would move them all.
    assert route_name("fra-private-eu-central-1a", IPv4Network("198.18.0.0/15")) == (
        "fra-private-eu-central-1a-to-198-18-0-0-15"
    )
    assert route_name("dev-public", IPv4Network("0.0.0.0/0")) == "dev-public-to-0-0-0-0-0"


def test_every_route_through_a_gateway_waits_for_its_attachment():
    """EC2 refuses a route to a gateway not yet attached to the VPC: each route through a
    transit gateway depends on the VPC attachment, each through a virtual private gateway on
    the VPN gateway attachment."""
    attachments = {
        "transitGatewayId": "aws:ec2transitgateway/vpcAttachment:VpcAttachment",
        "gatewayId": "aws:ec2/vpnGatewayAttachment:VpnGatewayAttachment",
    }
    checked = 0
    for stack, plan in every_aws_plan():
        for route in plan.of_type(ROUTE):
            for target, token in attachments.items():
                gateway = route.inputs.get(target, "")
                if gateway.startswith(("tgw-", "vgw-")):
                    (attachment,) = plan.of_type(token)
                    assert attachment.urn in route.dependencies, f"{stack}: {route.name}"
                    checked += 1
    assert checked > 0


def test_the_office_reaches_every_private_subnet_through_the_transit_gateway():
    plan = frankfurt_plan()
    (attachment,) = plan.of_type("aws:ec2transitgateway/vpcAttachment:VpcAttachment")
    assert attachment.inputs["transitGatewayId"] == TGW
    assert attachment.inputs["vpcId"] == "(known after apply: frankfurt-vpc.id)"
    # Its interfaces in the private subnets, one per zone.
    assert attachment.inputs["subnetIds"] == [
        "(known after apply: frankfurt-private-eu-central-1a.id)",
        "(known after apply: frankfurt-private-eu-central-1b.id)",
    ]
    office = {
        r.inputs["routeTableId"]: r.inputs["transitGatewayId"]
        for r in plan.of_type(ROUTE)
        if r.inputs["destinationCidrBlock"] == OFFICE
    }
    assert office == {
        "(known after apply: frankfurt-private-rt-eu-central-1a.id)": TGW,
        "(known after apply: frankfurt-private-rt-eu-central-1b.id)": TGW,
    }


def test_the_staging_vpn_range_comes_in_through_the_virtual_private_gateway():
    # stacks/Pulumi.staging.yaml: vpn_gateway vgw-0a1b2c3d4e5f60718 routes 10.8.0.0/24.
    plan = planned("staging")
    (attachment,) = plan.of_type("aws:ec2/vpnGatewayAttachment:VpnGatewayAttachment")
    assert attachment.inputs["vpnGatewayId"] == "vgw-0a1b2c3d4e5f60718"
    assert attachment.inputs["vpcId"] == "(known after apply: staging-vpc.id)"
    routed = [r for r in plan.of_type(ROUTE) if r.inputs["destinationCidrBlock"] == "10.8.0.0/24"]
    assert len(routed) == 3  # one per private route table, three zones
    assert {r.inputs["gatewayId"] for r in routed} == {"vgw-0a1b2c3d4e5f60718"}


# ------------------------------------------------------------------------ existing VPC

NETWORK_OF_ITS_OWN = (
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/eip:Eip",
    ROUTE_TABLE,
    ROUTE,
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
)


def test_an_existing_vpc_is_used_and_nothing_of_a_network_declared():
    plan = existing_vpc_plan()
    declared = [f"{r.type} {r.name}" for t in NETWORK_OF_ITS_OWN for r in plan.of_type(t)]
    assert declared == []
    ids = [subnet for subnet, _ in EXISTING_SUBNETS.values()]
    (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
    # The region's subnets only: not the Local Zone's (EKS User Guide, "Launch low-latency EKS
    # clusters with AWS Local Zones": "you must not specify Local Zone subnets when you create
    # your cluster").
    assert cluster.inputs["vpcConfig"]["subnetIds"] == ids
    assert EXISTING_LOCAL_SUBNET[0] not in cluster.inputs["vpcConfig"]["subnetIds"]
    # staging's EFA group and its Lustre file system sit in us-east-1c.
    zone_c = EXISTING_SUBNETS["us-east-1c"][0]
    (fsx,) = plan.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fsx.inputs["subnetIds"] == zone_c
    groups = {g.name: g.inputs for g in plan.of_type("aws:eks/nodeGroup:NodeGroup")}
    assert all(set(g["subnetIds"]) <= set(ids) for g in groups.values())
    assert [g["subnetIds"] for n, g in groups.items() if "a100" in n] == [[zone_c]]
    for group in plan.of_type("aws:ec2/securityGroup:SecurityGroup"):
        assert group.inputs["vpcId"] == EXISTING_VPC, group.name
    (flow_log,) = plan.of_type("aws:ec2/flowLog:FlowLog")
    assert flow_log.inputs["vpcId"] == EXISTING_VPC
