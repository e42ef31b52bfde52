"""Network: VPC over several zones, public and private subnets, NAT, endpoints, flow logs, and
the EFA security group where a GPU group uses EFA."""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from components.context import StackContext
from components.log_groups import declare_log_group
from model.config import AwsSettings, NetworkSettings, subnet_layout
from model.config.network import INTERFACE_ENDPOINT_SERVICES, local_zone_subnets, nat_zones
from model.config.regions import LOCAL_ZONES

# --------------------------------------------------------------------------- pure builders


def interface_endpoint_services(region: str) -> dict[str, str]:
    """Interface endpoints, by short name, that keep image pulls and credential calls inside
    the VPC."""
    return {
        svc.replace(".", "-"): f"com.amazonaws.{region}.{svc}"
        for svc in INTERFACE_ENDPOINT_SERVICES
    }


# The RouteArgs field that names each kind of gateway (EC2 API reference, CreateRoute:
# TransitGatewayId for a transit gateway, GatewayId for an internet or virtual private gateway).
ROUTE_TARGET = {"transit_gateway": "transit_gateway_id", "vpn_gateway": "gateway_id"}


def route_name(table: str, destination: IPv4Network) -> str:
    """A route's logical name, from its table and destination: the same route keeps its name
    when others are added or reordered, and a changed destination is a new route."""
    dest = f"{destination.network_address}-{destination.prefixlen}".replace(".", "-")
    return f"{table}-to-{dest}"


def cluster_tag(cluster_name: str) -> str:
    return f"kubernetes.io/cluster/{cluster_name}"


def subnet_tags(
    name: str, cluster_name: str, public: bool, for_elbs: bool = True
) -> dict[str, str]:
    """Tags the AWS load balancer controller uses to pick subnets for ELBs. A Local Zone
    subnet is not offered to it (`for_elbs`): it picks one subnet a zone for a load balancer,
    and Local Zones take Application Load Balancers only (EKS User Guide, "Launch low-latency
    EKS clusters with AWS Local Zones")."""
    tags = {"Name": name, cluster_tag(cluster_name): "shared"}
    if for_elbs:
        tags["kubernetes.io/role/elb" if public else "kubernetes.io/role/internal-elb"] = "1"
    return tags


def zone_groups(local_zones: list[str]) -> list[str]:
    """The zone groups to opt in to, one per group the stack's Local Zones belong to, in their
    order: EC2 opts in a group (ModifyAvailabilityZoneGroup takes its GroupName), not a zone."""
    return list(dict.fromkeys(LOCAL_ZONES[z].group for z in local_zones))


def flow_log_assume_role_policy() -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )


def flow_log_write_policy(log_group_arn: str) -> str:
    """What AWS's VPC guide says the flow-log role needs ("IAM role for publishing flow logs to
    CloudWatch Logs"), but logs:CreateLogGroup: the program creates the group, with its
    retention and key, and a role that could create one would recreate it without them."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": [
                        "logs:CreateLogStream",
                        "logs:PutLogEvents",
                        "logs:DescribeLogStreams",
                    ],
                    "Resource": [log_group_arn, f"{log_group_arn}:*"],
                },
                # Lists the account's groups: a read, which takes no group's ARN.
                {"Effect": "Allow", "Action": ["logs:DescribeLogGroups"], "Resource": "*"},
            ],
        }
    )


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class NetworkArgs:
    context: StackContext
    aws: AwsSettings
    network: NetworkSettings
    # A GPU group uses EFA: only then the EFA security group, which only EFA interfaces join.
    efa: bool


class Network(PlatformComponent):
    """A new VPC (subnets, routing, NAT, VPC endpoints, Transit Gateway or VPN attachment), or
    an existing one taken as the stack describes it; flow logs and, where a GPU group uses EFA,
    the EFA security group in either."""

    PLANE = "control"

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        env, net = args.context.env, args.network
        self.zones = list(args.aws.zones)
        if net.existing_vpc is None:
            self._new_vpc(args)
        else:
            # Nothing of the VPC is declared: `destroy` leaves it, and its routes, as they are.
            by_zone = {s.zone: s.id for s in net.existing_vpc.private_subnets}
            self.vpc_id = net.existing_vpc.id
            self.public_subnet_ids = []
            self.private_subnet_ids_by_zone = {z: by_zone[z] for z in args.aws.zone_names()}
        # The region's zones only: the cluster, the system nodes and the endpoints take these,
        # and EKS places no interfaces in a Local Zone subnet. A GPU group in a Local Zone
        # finds its subnet in private_subnet_ids_by_zone.
        self.private_subnet_ids = [self.private_subnet_ids_by_zone[z] for z in self.zones]
        if net.flow_logs:
            self._flow_logs(env, args.aws.region, net, self.vpc_id, args.context.protect)

        self.efa_security_group_id = (
            self._efa_security_group(env, self.vpc_id) if args.efa else None
        )
        self.outputs = {
            "vpc_id": self.vpc_id,
            "public_subnet_ids": self.public_subnet_ids,
            "private_subnet_ids": self.private_subnet_ids,
        }
        if self.efa_security_group_id is not None:
            self.outputs["efa_security_group_id"] = self.efa_security_group_id
        self.register_outputs(self.outputs)

    def _new_vpc(self, args: NetworkArgs) -> None:
        env, net = args.context.env, args.network
        layout = subnet_layout(net, args.aws.zones)
        vpc = aws.ec2.Vpc(
            f"{env}-vpc",
            aws.ec2.VpcArgs(
                cidr_block=str(net.vpc_cidr),
                enable_dns_hostnames=True,
                enable_dns_support=True,
                tags={"Name": f"{env}-vpc"},
            ),
            self.child(),
        )
        # Adopted with no rules: anything launched without a group of its own lands in the
        # default group, and must get no traffic from it (Security Hub control EC2.2). Adopting
        # it removes every rule it had (the provider's DefaultSecurityGroup docs).
        aws.ec2.DefaultSecurityGroup(
            f"{env}-default-sg",
            aws.ec2.DefaultSecurityGroupArgs(
                vpc_id=vpc.id, ingress=[], egress=[], tags={"Name": f"{env}-default-unused"}
            ),
            self.child(),
        )
        igw = aws.ec2.InternetGateway(
            f"{env}-igw",
            aws.ec2.InternetGatewayArgs(vpc_id=vpc.id, tags={"Name": f"{env}-igw"}),
            self.child(),
        )
        public_rt = aws.ec2.RouteTable(
            f"{env}-public-rt",
            aws.ec2.RouteTableArgs(vpc_id=vpc.id, tags={"Name": f"{env}-public"}),
            self.child(),
        )
        self._route(public_rt, IPv4Network("0.0.0.0/0"), gateway_id=igw.id, into=f"{env}-public")

        public_subnets: dict[str, aws.ec2.Subnet] = {}
        private_subnets: dict[str, aws.ec2.Subnet] = {}
        for zs in layout:
            for public, cidr, into in (
                (True, zs.public, public_subnets),
                (False, zs.private, private_subnets),
            ):
                name = f"{env}-{'public' if public else 'private'}-{zs.zone}"
                into[zs.zone] = aws.ec2.Subnet(
                    name,
                    aws.ec2.SubnetArgs(
                        vpc_id=vpc.id,
                        cidr_block=str(cidr),
                        availability_zone=zs.zone,
                        map_public_ip_on_launch=False,
                        tags=subnet_tags(name, args.context.cluster_name, public),
                    ),
                    self.child(),
                )
            aws.ec2.RouteTableAssociation(
                f"{env}-public-{zs.zone}",
                aws.ec2.RouteTableAssociationArgs(
                    subnet_id=public_subnets[zs.zone].id, route_table_id=public_rt.id
                ),
                self.child(),
            )

        nats: dict[str, aws.ec2.NatGateway] = {}
        for zone in nat_zones(net, args.aws.zones):
            eip = aws.ec2.Eip(
                f"{env}-nat-{zone}",
                aws.ec2.EipArgs(domain="vpc", tags={"Name": f"{env}-nat-{zone}"}),
                self.child(),
            )
            nats[zone] = aws.ec2.NatGateway(
                f"{env}-nat-{zone}",
                aws.ec2.NatGatewayArgs(
                    allocation_id=eip.id,
                    subnet_id=public_subnets[zone].id,
                    tags={"Name": f"{env}-nat-{zone}"},
                ),
                self.child(depends_on=[igw]),
            )
        gateways = self._gateways(env, net, vpc, [private_subnets[zs.zone] for zs in layout])

        private_rts = [
            self._private_routes(
                env,
                net,
                vpc,
                zs.zone,
                private_subnets[zs.zone],
                nats.get(zs.zone, nats[args.aws.zones[0]]),
                gateways,
            )
            for zs in layout
        ]

        if net.declares_endpoints():
            self._endpoints(env, args.aws.region, net, vpc, private_subnets, private_rts)
        local = self._local_zones(args, vpc, nats[args.aws.zones[0]], gateways)
        self.vpc_id = vpc.id
        self.public_subnet_ids = [public_subnets[z].id for z in self.zones]
        self.private_subnet_ids_by_zone = {
            **{z: private_subnets[z].id for z in self.zones},
            **{z: subnet.id for z, subnet in local.items()},
        }

    def _local_zones(
        self,
        args: NetworkArgs,
        vpc: aws.ec2.Vpc,
        nat: aws.ec2.NatGateway,
        gateways: dict[str, pulumi.Resource],
    ) -> dict[str, aws.ec2.Subnet]:
        """Each Local Zone's private subnet, after its zone group is opted in (EC2 refuses a
        subnet in a zone not opted in). Its default route goes through the region's first NAT
        gateway: that a NAT gateway can be created in the Dallas Local Zone was not verified,
        and a private subnet's egress must not hang on it. It joins no VPC endpoint: the
        interface endpoints' private DNS names resolve to the region's subnets, which the
        Local Zone reaches inside the VPC, and S3 goes through the NAT gateway."""
        env, net, zones = args.context.env, args.network, args.aws
        # Opting out is not what removing it does: the provider's delete is a no-op
        # (terraform-provider-aws ec2_availability_zone_group.go: `Delete: schema.Noop`).
        opted_in = {
            group: aws.ec2.AvailabilityZoneGroup(
                f"{env}-zone-group-{group}",
                aws.ec2.AvailabilityZoneGroupArgs(group_name=group, opt_in_status="opted-in"),
                self.child(),
            )
            for group in zone_groups(zones.local_zones)
        }
        subnets = {}
        for zone, cidr in local_zone_subnets(net, zones.zones, zones.local_zones).items():
            name = f"{env}-private-{zone}"
            subnets[zone] = aws.ec2.Subnet(
                name,
                aws.ec2.SubnetArgs(
                    vpc_id=vpc.id,
                    cidr_block=str(cidr),
                    availability_zone=zone,
                    map_public_ip_on_launch=False,
                    tags=subnet_tags(name, args.context.cluster_name, False, for_elbs=False),
                ),
                self.child(depends_on=[opted_in[LOCAL_ZONES[zone].group]]),
            )
            self._private_routes(env, net, vpc, zone, subnets[zone], nat, gateways)
        return subnets

    def _private_routes(
        self,
        env: str,
        net: NetworkSettings,
        vpc: aws.ec2.Vpc,
        zone: str,
        subnet: aws.ec2.Subnet,
        nat: aws.ec2.NatGateway,
        gateways: dict[str, pulumi.Resource],
    ) -> aws.ec2.RouteTable:
        """A private subnet's route table: the default route through `nat`, each routed
        network through its gateway."""
        into = f"{env}-private-{zone}"
        rt = aws.ec2.RouteTable(
            f"{env}-private-rt-{zone}",
            aws.ec2.RouteTableArgs(vpc_id=vpc.id, tags={"Name": into}),
            self.child(),
        )
        self._route(rt, IPv4Network("0.0.0.0/0"), nat_gateway_id=nat.id, into=into)
        for route in net.routes():
            self._route(
                rt,
                route.cidr,
                after=gateways[route.kind],
                into=into,
                **{ROUTE_TARGET[route.kind]: route.gateway_id},
            )
        aws.ec2.RouteTableAssociation(
            into,
            aws.ec2.RouteTableAssociationArgs(subnet_id=subnet.id, route_table_id=rt.id),
            self.child(),
        )
        return rt

    def _route(
        self,
        table: aws.ec2.RouteTable,
        destination: IPv4Network,
        *,
        into: str,  # the table's name, which the route's name begins with
        after: pulumi.Resource | None = None,
        **target: pulumi.Input[str],
    ) -> None:
        # One resource per route, never the table's inline `routes`: a table with inline
        # routes owns all of them and deletes, on the next `up`, any route added beside it.
        aws.ec2.Route(
            route_name(into, destination),
            aws.ec2.RouteArgs(
                route_table_id=table.id, destination_cidr_block=str(destination), **target
            ),
            self.child(depends_on=[after]) if after is not None else self.child(),
        )

    def _gateways(
        self, env: str, net: NetworkSettings, vpc: aws.ec2.Vpc, private: list[aws.ec2.Subnet]
    ) -> dict[str, pulumi.Resource]:
        """The attachments a route through each gateway waits for: EC2 refuses a route to a
        gateway not yet attached to the VPC."""
        attached: dict[str, pulumi.Resource] = {}
        if net.transit_gateway is not None:
            # Its interfaces go in the private subnets, one per zone, where the nodes are.
            attached["transit_gateway"] = aws.ec2transitgateway.VpcAttachment(
                f"{env}-tgw",
                aws.ec2transitgateway.VpcAttachmentArgs(
                    transit_gateway_id=net.transit_gateway.id,
                    vpc_id=vpc.id,
                    subnet_ids=[s.id for s in private],
                    tags={"Name": f"{env}-tgw"},
                ),
                self.child(),
            )
        if net.vpn_gateway is not None:
            attached["vpn_gateway"] = aws.ec2.VpnGatewayAttachment(
                f"{env}-vgw",
                aws.ec2.VpnGatewayAttachmentArgs(vpc_id=vpc.id, vpn_gateway_id=net.vpn_gateway.id),
                self.child(),
            )
        return attached

    def _efa_security_group(self, env: str, vpc_id: pulumi.Input[str]) -> pulumi.Output[str]:
        # EFA OS-bypass traffic must be allowed to and from the group itself, every protocol.
        group = aws.ec2.SecurityGroup(
            f"{env}-efa-sg",
            aws.ec2.SecurityGroupArgs(
                vpc_id=vpc_id,
                description="EFA: all traffic to and from members of this group",
                tags={"Name": f"{env}-efa"},
            ),
            self.child(),
        )
        for direction, rule, rule_args in (
            ("in", aws.vpc.SecurityGroupIngressRule, aws.vpc.SecurityGroupIngressRuleArgs),
            ("out", aws.vpc.SecurityGroupEgressRule, aws.vpc.SecurityGroupEgressRuleArgs),
        ):
            rule(
                f"{env}-efa-{direction}-self",
                rule_args(
                    security_group_id=group.id,
                    referenced_security_group_id=group.id,
                    ip_protocol="-1",
                    description=f"EFA {direction}, members only",
                ),
                self.child(),
            )
        return group.id

    def _endpoints(self, env, region, net, vpc, private_subnets, private_rts) -> None:
        aws.ec2.VpcEndpoint(
            f"{env}-s3",
            aws.ec2.VpcEndpointArgs(
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{region}.s3",
                vpc_endpoint_type="Gateway",
                route_table_ids=[rt.id for rt in private_rts],
                tags={"Name": f"{env}-s3"},
            ),
            self.child(),
        )
        endpoint_sg = aws.ec2.SecurityGroup(
            f"{env}-endpoints-sg",
            aws.ec2.SecurityGroupArgs(
                vpc_id=vpc.id,
                description="HTTPS from the VPC to interface endpoints",
                ingress=[
                    aws.ec2.SecurityGroupIngressArgs(
                        protocol="tcp",
                        from_port=443,
                        to_port=443,
                        cidr_blocks=[str(net.vpc_cidr)],
                        description="HTTPS from the VPC to the endpoints",
                    )
                ],
                tags={"Name": f"{env}-endpoints"},
            ),
            self.child(),
        )
        for short, service in interface_endpoint_services(region).items():
            name = f"{env}-{short}"
            aws.ec2.VpcEndpoint(
                name,
                aws.ec2.VpcEndpointArgs(
                    vpc_id=vpc.id,
                    service_name=service,
                    vpc_endpoint_type="Interface",
                    private_dns_enabled=True,
                    subnet_ids=[s.id for s in private_subnets.values()],
                    security_group_ids=[endpoint_sg.id],
                    tags={"Name": name},
                ),
                self.child(),
            )

    def _flow_logs(self, env, region, net, vpc_id, protect) -> None:
        log_group = declare_log_group(
            f"{env}-flow-logs",
            f"/gpu-platform/{env}/vpc-flow-logs",
            net.flow_log_retention_days,
            net.flow_log_kms_key_arn,
            net.create_flow_log_kms_key,
            region,
            self,
            protect,
        )
        role = aws.iam.Role(
            f"{env}-flow-logs",
            aws.iam.RoleArgs(assume_role_policy=flow_log_assume_role_policy()),
            self.child(),
        )
        aws.iam.RolePolicy(
            f"{env}-flow-logs",
            aws.iam.RolePolicyArgs(role=role.id, policy=log_group.arn.apply(flow_log_write_policy)),
            self.child(),
        )
        aws.ec2.FlowLog(
            f"{env}-flow-logs",
            aws.ec2.FlowLogArgs(
                vpc_id=vpc_id,
                traffic_type="ALL",
                log_destination_type="cloud-watch-logs",
                log_destination=log_group.arn,
                iam_role_arn=role.arn,
                max_aggregation_interval=60,
            ),
            self.child(),
        )
