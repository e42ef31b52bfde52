"""The network plane's config: where the platform lives on AWS, and its VPC."""

from __future__ import annotations

import math
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Literal

from pydantic import Field, field_validator, model_validator

from model.config.base import (
    AwsTags,
    FieldProblem,
    InstanceTypeName,
    KmsKeyArn,
    RetentionDays,
    Settings,
    SubnetId,
    TransitGatewayId,
    VpcId,
    VpnGatewayId,
    _one_key_source,
    _overlaps,
    one_of,
)
from model.config.regions import LOCAL_ZONES, REGION_ZONES, SUPPORTED_PARTITION, partition
from model.versions import EKS_IMAGE_ACCOUNTS

# Amazon VPC user guide, "VPC CIDR blocks" and "Subnet CIDR blocks": an IPv4 block of a VPC or
# a subnet is between /16 (65,536 addresses) and /28 (16 addresses).
CIDR_PREFIX_RANGE = (16, 28)


def check_cidr_size(key: str, cidr: IPv4Network, what: str) -> None:
    low, high = CIDR_PREFIX_RANGE
    if not low <= cidr.prefixlen <= high:
        raise FieldProblem(
            key, f"{cidr} is a /{cidr.prefixlen}; AWS accepts {what} from /{low} to /{high}"
        )


class AwsSettings(Settings):
    """Where the platform lives on AWS. Required with `provider: aws`."""

    region: str = Field(
        description="AWS region, e.g. us-east-1. Every AWS resource goes through one provider "
        "pinned to it, so ambient AWS_REGION never changes where things land.",
    )
    zones: list[str] = Field(
        min_length=2,
        description="Availability zones for subnets, at least two (EKS requires two). GPU "
        "groups that talk over EFA are placed in one of them.",
    )
    local_zones: list[str] = Field(
        default_factory=list,
        description="Local Zones of the region the stack uses (e.g. us-east-1-dfw-2a, where "
        "AWS sells P6e-GB200 UltraServer Capacity Blocks), from the table in "
        "model/config/regions.py. Each gets its zone group opted in and one private subnet; "
        "only a GPU group whose `zone` names it runs there. The EKS cluster and the system "
        "nodes never do: EKS places no interfaces in Local Zone subnets (EKS User Guide, "
        '"Launch low-latency EKS clusters with AWS Local Zones").',
    )
    tags: AwsTags = Field(
        default_factory=dict,
        description="Extra tags on every AWS resource (provider default tags).",
    )
    zone_offerings: dict[InstanceTypeName, list[str]] = Field(
        default_factory=dict,
        description="Zones that offer each instance type, as `aws ec2 "
        "describe-instance-type-offerings --location-type availability-zone` shows them for "
        "this account (zone names map to physical zones per account). A GPU group in a zone "
        "not listed for its type is rejected; a type not listed is not checked. A type listed "
        "here is taken as offered in the region even where the catalog's regions for it "
        "(model/catalog_offerings.py, read on a date) do not name it.",
    )

    @field_validator("region")
    @classmethod
    def _known_region(cls, value: str) -> str:
        # Known: its zones are recorded and so is the EKS image registry its nodes pull from.
        where = (
            "an AWS region this project knows (its zones in model/config/regions.py, its EKS "
            "image registry in model/versions.py EKS_IMAGE_ACCOUNTS)"
        )
        known = [
            region
            for region in REGION_ZONES
            if region in EKS_IMAGE_ACCOUNTS and partition(region) == SUPPORTED_PARTITION
        ]
        if partition(value) != SUPPORTED_PARTITION:
            raise ValueError(
                f"{value!r} is in the {partition(value)} partition, whose ARNs begin "
                f"arn:{partition(value)}:; this project writes every ARN for the "
                f"{SUPPORTED_PARTITION} partition (managed policies, EKS access policies, key "
                "policies, the deploy policy) and its catalog has no offerings or prices there. "
                f"Use a region of the {SUPPORTED_PARTITION} partition; "
                f"known regions: {', '.join(known)}"
            )
        return one_of(value, known, where, listing="known regions")

    @model_validator(mode="after")
    def _zones_in_region(self) -> AwsSettings:
        letters = REGION_ZONES[self.region]
        valid = ", ".join(self.region + letter for letter in letters)
        for i, zone in enumerate(self.zones):
            if zone[:-1] != self.region or zone[-1:] not in letters:
                raise FieldProblem(
                    f"zones[{i}]",
                    f"{zone!r} is not a zone of region {self.region}; its zones are {valid}",
                )
        if len(set(self.zones)) != len(self.zones):
            raise FieldProblem("zones", f"zones repeat: {self.zones}")
        self._known_local_zones()
        for name, offered in self.zone_offerings.items():
            for i, zone in enumerate(offered):
                if zone not in self.local_zones and (
                    zone[:-1] != self.region or zone[-1:] not in letters
                ):
                    raise FieldProblem(
                        f"zone_offerings.{name}[{i}]",
                        f"{zone!r} is not a zone of region {self.region}; its zones are {valid}"
                        f"{self._local_zones_listed()}",
                    )
        return self

    def _known_local_zones(self) -> None:
        ours = [z for z, row in LOCAL_ZONES.items() if row.parent_region == self.region]
        known = (
            f"the Local Zones of {self.region} the table knows (model/config/regions.py "
            f"LOCAL_ZONES): {', '.join(ours) or 'none'}"
        )
        for i, zone in enumerate(self.local_zones):
            row = LOCAL_ZONES.get(zone)
            if row is None:
                raise FieldProblem(f"local_zones[{i}]", f"{zone!r} is not a Local Zone; {known}")
            if row.parent_region != self.region:
                raise FieldProblem(
                    f"local_zones[{i}]",
                    f"{zone!r} extends region {row.parent_region}, not aws.region "
                    f"{self.region}; {known}",
                )
        if len(set(self.local_zones)) != len(self.local_zones):
            raise FieldProblem("local_zones", f"Local Zones repeat: {self.local_zones}")

    def _local_zones_listed(self) -> str:
        if not self.local_zones:
            return ""
        return f", and its Local Zones in aws.local_zones {self.local_zones}"

    def zone_names(self) -> list[str]:
        """Every zone a subnet of the stack may be in: the region's, then its Local Zones."""
        return [*self.zones, *self.local_zones]


class ExistingSubnet(Settings):
    """A private subnet of an existing VPC, with the facts the plan checks it by: the plan
    reads no AWS account, so it takes the zone and the CIDR from here, as
    `aws ec2 describe-subnets --subnet-ids <id>` shows them."""

    id: SubnetId = Field(description="The subnet's id.")
    zone: str = Field(description="Its availability zone, one of aws.zones or aws.local_zones.")
    cidr: IPv4Network = Field(
        description="Its IPv4 block: nodes and every pod (VPC CNI, one address a pod) take "
        "addresses from it, so the plan checks it holds the node groups at max_size."
    )


class ExistingVpcSettings(Settings):
    """A VPC the platform uses but does not manage: no VPC, subnets, NAT gateways, route tables
    or VPC endpoints are declared, and nothing of it is deleted on `destroy`."""

    id: VpcId = Field(description="The VPC's id.")
    private_subnets: list[ExistingSubnet] = Field(
        min_length=2,
        description="One private subnet per zone of aws.zones and per Local Zone of "
        "aws.local_zones (the cluster takes only the former). Before `pulumi up`, each needs "
        "the tags kubernetes.io/role/internal-elb=1 and kubernetes.io/cluster/<cluster>=shared "
        '(EKS user guide, "Subnet requirements and considerations"; AWS Load Balancer '
        'Controller, "Subnet auto-discovery"), and egress through a NAT gateway or VPC '
        "endpoints for ECR, S3 and STS: the plan says so, since it cannot look.",
    )


class RoutedGateway(Settings):
    """A gateway the new VPC's private subnets route other networks through."""

    cidrs: list[IPv4Network] = Field(
        min_length=1,
        description="The networks routed through it (office, on-premises, peered VPCs), one "
        "route each in every private route table. A cluster.api_access_cidrs range inside one "
        "reaches a private API endpoint.",
    )


class TransitGatewaySettings(RoutedGateway):
    """A Transit Gateway the new VPC attaches to through its private subnets."""

    id: TransitGatewayId = Field(
        description="The Transit Gateway's id (shared through RAM when another account owns "
        "it; that account accepts the attachment, unless auto-accept is on)."
    )


class VpnGatewaySettings(RoutedGateway):
    """A virtual private gateway (site-to-site VPN or Direct Connect) the new VPC attaches."""

    id: VpnGatewayId = Field(
        description="The virtual private gateway's id; it must not be attached to another VPC."
    )


# What only a VPC the program declares takes: with network.existing_vpc each is refused.
NEW_VPC_KEYS = (
    "vpc_cidr",
    "public_subnet_cidrs",
    "private_subnet_cidrs",
    "local_zone_subnet_cidrs",
    "nat_gateways",
    "vpc_endpoints",
    "transit_gateway",
    "vpn_gateway",
)


class NetworkSettings(Settings):
    """The VPC (provider aws): a new one, or an existing one (existing_vpc)."""

    vpc_cidr: IPv4Network = Field(
        IPv4Network("10.0.0.0/16"),
        description="VPC CIDR; /16 leaves room for many GPU pods.",
    )
    public_subnet_cidrs: list[IPv4Network] | None = Field(
        None,
        description="One public subnet per zone, in zone order. Default: carved from vpc_cidr.",
    )
    private_subnet_cidrs: list[IPv4Network] | None = Field(
        None,
        description="One private subnet per zone, in zone order; nodes and pods live here. "
        "Default: the largest blocks carved from vpc_cidr.",
    )
    local_zone_subnet_cidrs: list[IPv4Network] | None = Field(
        None,
        description="One private subnet per Local Zone, in aws.local_zones order; only GPU "
        "groups placed in that Local Zone use it. Default: carved from the block that holds "
        "the public subnets, after them, so that adding a Local Zone moves no other subnet.",
    )
    nat_gateways: Literal["single", "per_zone"] = Field(
        "single",
        description="`single` saves cost (dev); `per_zone` survives a zone outage "
        "(production default).",
    )
    vpc_endpoints: bool = Field(
        True,
        description="S3 gateway and ECR (api, dkr) and STS interface endpoints, so image pulls "
        "and credentials stay off the NAT gateways.",
    )
    flow_logs: bool = Field(False, description="VPC flow logs to CloudWatch (production default).")
    flow_log_retention_days: RetentionDays = Field(
        90, description="Flow log retention in days (production default: 365)."
    )
    flow_log_kms_key_arn: KmsKeyArn | None = Field(
        None,
        description="Customer managed KMS key that encrypts the flow log group; its key policy "
        "must let logs.<region>.amazonaws.com use it. Default: CloudWatch Logs' own "
        "encryption, unless create_flow_log_kms_key.",
    )
    create_flow_log_kms_key: bool = Field(
        False,
        description="Create a rotated KMS key for the flow log group alone, usable only by "
        "CloudWatch Logs for that group.",
    )
    transit_gateway: TransitGatewaySettings | None = Field(
        None,
        description="Attach the new VPC to a Transit Gateway through its private subnets, and "
        "route `cidrs` through it from every private subnet.",
    )
    vpn_gateway: VpnGatewaySettings | None = Field(
        None,
        description="Attach a virtual private gateway to the new VPC, and route `cidrs` "
        "through it from every private subnet.",
    )
    existing_vpc: ExistingVpcSettings | None = Field(
        None,
        description="Use an existing VPC and its private subnets instead of declaring one; "
        "excludes every key of a new VPC (vpc_cidr, subnets, NAT, endpoints, gateways).",
    )

    @model_validator(mode="after")
    def _subnets_inside_vpc(self) -> NetworkSettings:
        _one_key_source(self, "flow_log_kms_key_arn", "create_flow_log_kms_key")
        if self.existing_vpc is not None:
            return self._existing_vpc_alone()
        check_cidr_size("vpc_cidr", self.vpc_cidr, "a VPC")
        named = [("vpc_cidr", self.vpc_cidr)]
        for key in ("public_subnet_cidrs", "private_subnet_cidrs", "local_zone_subnet_cidrs"):
            for i, cidr in enumerate(getattr(self, key) or []):
                check_cidr_size(f"{key}[{i}]", cidr, "subnets")
                if not cidr.subnet_of(self.vpc_cidr):
                    raise FieldProblem(
                        f"{key}[{i}]", f"{cidr} lies outside vpc_cidr {self.vpc_cidr}"
                    )
                named.append((f"{key}[{i}]", cidr))
        problem = _overlaps(named[1:])
        if problem:
            raise problem
        # A route to a block of the VPC itself, or two gateways for one block, is refused by
        # EC2 (CreateRoute: the local route, or RouteAlreadyExists).
        routed = [(route.key, route.cidr) for route in self.routes()]
        problem = _overlaps([("vpc_cidr", self.vpc_cidr), *routed])
        if problem:
            raise problem
        return self

    def _existing_vpc_alone(self) -> NetworkSettings:
        for key in NEW_VPC_KEYS:
            if key in self.model_fields_set:
                raise FieldProblem(
                    key,
                    f"{_shown(getattr(self, key))} configures a new VPC, but existing_vpc "
                    f"names {self.existing_vpc.id}, which the platform uses as it is: remove "
                    f"{key}, or existing_vpc to declare a new VPC",
                )
        named = []
        for i, subnet in enumerate(self.existing_vpc.private_subnets):
            key = f"existing_vpc.private_subnets[{i}].cidr"
            check_cidr_size(key, subnet.cidr, "subnets")
            named.append((key, subnet.cidr))
        problem = _overlaps(named)
        if problem:
            raise problem
        return self

    def declares_endpoints(self) -> bool:
        """Whether the platform declares the VPC endpoints: vpc_endpoints, in a VPC of its own
        (an existing VPC's endpoints are its owner's; its default stays true)."""
        return self.vpc_endpoints and self.existing_vpc is None

    def routes(self) -> list[RoutedNetwork]:
        """The networks the private subnets reach through a gateway, in the stack's order."""
        found = []
        for kind in ("transit_gateway", "vpn_gateway"):
            gateway = getattr(self, kind)
            if gateway is not None:
                found += [
                    RoutedNetwork(kind, gateway.id, cidr, f"{kind}.cidrs[{i}]")
                    for i, cidr in enumerate(gateway.cidrs)
                ]
        return found


@dataclass(frozen=True)
class RoutedNetwork:
    kind: Literal["transit_gateway", "vpn_gateway"]
    gateway_id: str
    cidr: IPv4Network
    key: str  # its key path under network


def _shown(value: object) -> str:
    if isinstance(value, Settings):
        return str(value.model_dump(mode="json"))
    if isinstance(value, list):
        return f"[{', '.join(map(str, value))}]"
    return str(value)


@dataclass(frozen=True)
class ZoneSubnets:
    zone: str
    public: IPv4Network
    private: IPv4Network


def subnet_bits(zones: int) -> int:
    """How many bits subnet_layout cuts the VPC by: 2^bits blocks hold every zone and a spare."""
    return math.ceil(math.log2(zones + 1))


def subnet_layout(network: NetworkSettings, zones: list[str]) -> list[ZoneSubnets]:
    """One public and one private subnet per zone.

    Without explicit CIDRs the VPC is cut into 2^k equal blocks (the fewest that leave one
    spare): each zone gets a whole block as its private subnet, because GPU pods take VPC
    addresses, and the spare block is cut again for the small public subnets.
    """
    bits = subnet_bits(len(zones))
    blocks = list(network.vpc_cidr.subnets(prefixlen_diff=bits))
    private = network.private_subnet_cidrs or blocks[: len(zones)]
    public = network.public_subnet_cidrs or _spare_blocks(network, zones)[: len(zones)]
    return [ZoneSubnets(z, pub, priv) for z, pub, priv in zip(zones, public, private, strict=True)]


def _spare_blocks(network: NetworkSettings, zones: list[str]) -> list[IPv4Network]:
    """The last of the VPC's 2^k blocks, cut again the same way: public subnets first."""
    bits = subnet_bits(len(zones))
    return list(list(network.vpc_cidr.subnets(prefixlen_diff=bits))[-1].subnets(bits))


def spare_blocks_left(network: NetworkSettings, zones: list[str]) -> int:
    """How many Local Zone subnets the default layout has room for after the public ones."""
    return len(_spare_blocks(network, zones)) - len(zones)


def local_zone_subnets(
    network: NetworkSettings, zones: list[str], local_zones: list[str]
) -> dict[str, IPv4Network]:
    """Each Local Zone's private subnet of a new VPC: as given, else the spare block's pieces
    left after the public subnets (2^k > zones leaves at least one), so that adding a Local
    Zone re-carves no subnet of the region's zones."""
    given = network.local_zone_subnet_cidrs
    blocks = given if given is not None else _spare_blocks(network, zones)[len(zones) :]
    return dict(zip(local_zones, blocks[: len(local_zones)], strict=True))


# The interface endpoints `vpc_endpoints` declares, one per AWS service (com.amazonaws.<region>.
# <service>), each in every private subnet: image pulls and credential calls stay in the VPC.
INTERFACE_ENDPOINT_SERVICES = ("ecr.api", "ecr.dkr", "sts")


def private_subnet_cidrs(network: NetworkSettings, aws: AwsSettings) -> dict[str, IPv4Network]:
    """Each zone's private subnet block, Local Zones' too: the existing VPC's as the stack
    gives them, else the new VPC's layout."""
    if network.existing_vpc is not None:
        return {s.zone: s.cidr for s in network.existing_vpc.private_subnets}
    return {
        **{zs.zone: zs.private for zs in subnet_layout(network, aws.zones)},
        **local_zone_subnets(network, aws.zones, aws.local_zones),
    }


def nat_zones(network: NetworkSettings, zones: list[str]) -> list[str]:
    """Zones that host a NAT gateway; a private subnet routes through its own zone's, else the
    first one. None in an existing VPC: its egress is its owner's."""
    if network.existing_vpc is not None:
        return []
    return list(zones) if network.nat_gateways == "per_zone" else [zones[0]]


def routed_to_vpc(network: NetworkSettings, cidr: IPv4Network) -> bool:
    """Whether a client in `cidr` reaches a new VPC's private subnets: it is inside the VPC, or
    in a network routed to it. An existing VPC's routes the stack does not hold: callers ask
    only of a new one."""
    return cidr.subnet_of(network.vpc_cidr) or any(cidr.subnet_of(r.cidr) for r in network.routes())
