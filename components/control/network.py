"""Network: VPC over several zones, public and private subnets, NAT, endpoints, flow logs, and
the EFA security group where a GPU group uses EFA."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from components.context import StackContext
from components.log_groups import declare_log_group
from model.config import AwsSettings, NetworkSettings, subnet_layout
from model.config.network import INTERFACE_ENDPOINT_SERVICES, nat_zones

# --------------------------------------------------------------------------- pure builders


def interface_endpoint_services(region: str) -> dict[str, str]:
    """Interface endpoints, by short name, that keep image pulls and credential calls inside
    the VPC."""
    return {
        svc.replace(".", "-"): f"com.amazonaws.{region}.{svc}"
        for svc in INTERFACE_ENDPOINT_SERVICES
    }


def cluster_tag(cluster_name: str) -> str:
    return f"kubernetes.io/cluster/{cluster_name}"


def subnet_tags(name: str, cluster_name: str, public: bool) -> dict[str, str]:
    """Tags the AWS load balancer controller uses to pick subnets for ELBs."""
    role = "kubernetes.io/role/elb" if public else "kubernetes.io/role/internal-elb"
    return {"Name": name, cluster_tag(cluster_name): "shared", role: "1"}


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
    """VPC, subnets, routing, NAT, VPC endpoints, flow logs and, where a GPU group uses EFA,
    the EFA security group."""

    PLANE = "control"

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
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
            aws.ec2.RouteTableArgs(
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
                tags={"Name": f"{env}-public"},
            ),
            self.child(),
        )

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

        private_rts = []
        for zs in layout:
            nat = nats.get(zs.zone, nats[args.aws.zones[0]])
            rt = aws.ec2.RouteTable(
                f"{env}-private-rt-{zs.zone}",
                aws.ec2.RouteTableArgs(
                    vpc_id=vpc.id,
                    routes=[
                        aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)
                    ],
                    tags={"Name": f"{env}-private-{zs.zone}"},
                ),
                self.child(),
            )
            aws.ec2.RouteTableAssociation(
                f"{env}-private-{zs.zone}",
                aws.ec2.RouteTableAssociationArgs(
                    subnet_id=private_subnets[zs.zone].id, route_table_id=rt.id
                ),
                self.child(),
            )
            private_rts.append(rt)

        if net.vpc_endpoints:
            self._endpoints(env, args.aws.region, net, vpc, private_subnets, private_rts)
        if net.flow_logs:
            self._flow_logs(env, args.aws.region, net, vpc, args.context.protect)

        self.efa_security_group_id = self._efa_security_group(env, vpc) if args.efa else None

        self.vpc_id = vpc.id
        self.zones = [zs.zone for zs in layout]
        self.public_subnet_ids = [public_subnets[z].id for z in self.zones]
        self.private_subnet_ids = [private_subnets[z].id for z in self.zones]
        self.private_subnet_ids_by_zone = {z: private_subnets[z].id for z in self.zones}
        self.outputs = {
            "vpc_id": self.vpc_id,
            "public_subnet_ids": self.public_subnet_ids,
            "private_subnet_ids": self.private_subnet_ids,
        }
        if self.efa_security_group_id is not None:
            self.outputs["efa_security_group_id"] = self.efa_security_group_id
        self.register_outputs(self.outputs)

    def _efa_security_group(self, env: str, vpc: aws.ec2.Vpc) -> pulumi.Output[str]:
        # EFA OS-bypass traffic must be allowed to and from the group itself, every protocol.
        group = aws.ec2.SecurityGroup(
            f"{env}-efa-sg",
            aws.ec2.SecurityGroupArgs(
                vpc_id=vpc.id,
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

    def _flow_logs(self, env, region, net, vpc, protect) -> None:
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
                vpc_id=vpc.id,
                traffic_type="ALL",
                log_destination_type="cloud-watch-logs",
                log_destination=log_group.arn,
                iam_role_arn=role.arn,
                max_aggregation_interval=60,
            ),
            self.child(),
        )
