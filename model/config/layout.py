"""AWS layout rules that need several sections at once: the VPC and its subnets, the zones
the GPU groups use, and whether each private subnet has room for every node at max_size."""

from __future__ import annotations

import math
from ipaddress import IPv4Network
from typing import TYPE_CHECKING

from model.catalog import CATALOG
from model.catalog_offerings import OFFERINGS_AS_OF
from model.config.base import FieldProblem, FieldProblems
from model.config.network import (
    CIDR_PREFIX_RANGE,
    NetworkSettings,
    local_zone_subnets,
    private_subnet_cidrs,
    spare_blocks_left,
    subnet_bits,
    subnet_layout,
)

if TYPE_CHECKING:
    from model.config import PlatformConfig


def check_aws_layout(cfg: PlatformConfig) -> None:
    """The VPC, its subnets and the GPU groups' zones hold together, as AWS would insist."""
    zones = len(cfg.aws.zones)
    for key in ("public_subnet_cidrs", "private_subnet_cidrs"):
        given = getattr(cfg.network, key)
        if given is not None and len(given) != zones:
            raise FieldProblem(
                f"network.{key}",
                f"{len(given)} subnets for {zones} zones ({', '.join(cfg.aws.zones)}); "
                "give exactly one per zone",
            )
    given = cfg.network.local_zone_subnet_cidrs
    if given is not None and len(given) != len(cfg.aws.local_zones):
        raise FieldProblem(
            "network.local_zone_subnet_cidrs",
            f"{len(given)} subnets for {len(cfg.aws.local_zones)} Local Zones "
            f"(aws.local_zones {cfg.aws.local_zones}); give exactly one per Local Zone",
        )
    if cfg.network.existing_vpc is not None:
        _check_existing_subnets(cfg)
    else:
        _check_carved_subnets(cfg)
    routed = [(f"network.{r.key}", r.cidr) for r in cfg.network.routes()]
    for key, block in _vpc_blocks(cfg) + routed:
        if block.overlaps(cfg.cluster.service_ipv4_cidr):
            raise FieldProblem(
                "cluster.service_ipv4_cidr",
                f"{cfg.cluster.service_ipv4_cidr} overlaps {key} {block}",
            )
    if cfg.cluster.endpoint_private_only and "public_access_cidrs" in (
        cfg.cluster.model_fields_set
    ):
        raise FieldProblem(
            "cluster.public_access_cidrs",
            "has no effect with endpoint_private_only: true; remove one of them",
        )


def _vpc_blocks(cfg: PlatformConfig) -> list[tuple[str, IPv4Network]]:
    """The address blocks the stack knows of its VPC: a new VPC's CIDR, else the existing
    subnets' (the existing VPC's own CIDR is not the plan's to read). A network routed to the
    VPC may not overlap the service range either: kube-proxy would take its addresses for
    Services."""
    existing = cfg.network.existing_vpc
    if existing is None:
        return [("network.vpc_cidr", cfg.network.vpc_cidr)]
    return [
        (f"network.existing_vpc.private_subnets[{i}].cidr", s.cidr)
        for i, s in enumerate(existing.private_subnets)
    ]


def _check_existing_subnets(cfg: PlatformConfig) -> None:
    """One private subnet in each zone of aws.zones: EKS places its control-plane interfaces
    in them and needs two zones; a node group of a zone without one has nowhere to go. So in
    each of aws.local_zones, for the GPU groups placed there."""
    zones = cfg.aws.zone_names()
    subnets = cfg.network.existing_vpc.private_subnets
    seen: dict[str, int] = {}
    for i, subnet in enumerate(subnets):
        key = f"network.existing_vpc.private_subnets[{i}].zone"
        if subnet.zone not in zones:
            raise FieldProblem(key, f"{subnet.zone!r} is not one of {_zones_listed(cfg)}")
        if subnet.zone in seen:
            raise FieldProblem(
                key,
                f"{subnet.zone} already has private_subnets[{seen[subnet.zone]}]; give one "
                "subnet per zone",
            )
        seen[subnet.zone] = i
    missing = [z for z in zones if z not in seen]
    if missing:
        raise FieldProblem(
            "network.existing_vpc.private_subnets",
            f"no subnet in {', '.join(missing)}; give one private subnet for each of "
            f"{_zones_listed(cfg)}",
        )


def _zones_listed(cfg: PlatformConfig) -> str:
    """The zones a subnet or a GPU group may name, as the error shows them."""
    listed = f"aws.zones {cfg.aws.zones}"
    if cfg.aws.local_zones:
        listed += f" or aws.local_zones {cfg.aws.local_zones}"
    return listed


def _check_carved_subnets(cfg: PlatformConfig) -> None:
    """Subnets carved from vpc_cidr must still be ones AWS accepts (/28 or larger)."""
    network, zones = cfg.network, len(cfg.aws.zones)
    bits = subnet_bits(zones)
    smallest = CIDR_PREFIX_RANGE[1]
    carved = []
    if network.private_subnet_cidrs is None:
        carved.append(("private", network.vpc_cidr.prefixlen + bits))
    if network.public_subnet_cidrs is None:
        carved.append(("public", network.vpc_cidr.prefixlen + 2 * bits))
    for kind, prefix in carved:
        if prefix > smallest:
            largest = smallest - max(p for _, p in carved) + network.vpc_cidr.prefixlen
            raise FieldProblem(
                "network.vpc_cidr",
                f"{network.vpc_cidr} is too small for {zones} zones: its {kind} subnets would "
                f"be /{prefix}, and AWS accepts subnets up to /{smallest}; use a /{largest} "
                "or larger VPC, or set network.private_subnet_cidrs and public_subnet_cidrs",
            )
    _check_local_zone_subnets(cfg)


def _check_local_zone_subnets(cfg: PlatformConfig) -> None:
    """The Local Zones' subnets fit beside the region's: the default layout has room for as
    many as the spare block keeps after the public subnets, and none overlaps another subnet
    (the explicit ones are checked against each other in NetworkSettings)."""
    network, aws = cfg.network, cfg.aws
    if not aws.local_zones or network.local_zone_subnet_cidrs is not None:
        return
    room = spare_blocks_left(network, aws.zones)
    if len(aws.local_zones) > room:
        raise FieldProblem(
            "aws.local_zones",
            f"{len(aws.local_zones)} Local Zones, but the default layout of "
            f"{network.vpc_cidr} for {len(aws.zones)} zones has room for {room} Local Zone "
            "subnets beside the public ones; set network.local_zone_subnet_cidrs",
        )
    named = [
        (f"network.{kind}_subnet_cidrs[{i}]", getattr(zs, kind))
        for kind in ("public", "private")
        for i, zs in enumerate(subnet_layout(network, aws.zones))
    ]
    for zone, carved in local_zone_subnets(network, aws.zones, aws.local_zones).items():
        for key, block in named:
            if carved.overlaps(block):
                raise FieldProblem(
                    "network.local_zone_subnet_cidrs",
                    f"the subnet the default layout carves for Local Zone {zone}, {carved}, "
                    f"overlaps {key} ({block}); set network.local_zone_subnet_cidrs",
                )


def check_region_offers(cfg: PlatformConfig) -> None:
    """Every instance type the stack names is one EC2 offers in aws.region, where the catalog
    has read that region's offerings: a managed node group of a type the region lacks fails
    only at `pulumi up`, after the VPC and the cluster exist. A type the stack lists in
    aws.zone_offerings is taken as offered: the account's own reading is newer than ours.
    Every type the region lacks is reported at once, each at its own key, so that moving a
    stack to another region takes one round of fixes, not one per type. A burst's
    instance_type runs on the workers, in their regions: it is checked against the pools the
    workers export (components/scheduling/multikueue_contract.py), not here."""
    region = cfg.aws.region
    named = [
        (f"system_nodes.instance_types[{j}]", name)
        for j, name in enumerate(cfg.system_nodes.instance_types)
    ]
    named += [
        (f"gpu_node_groups[{i}].instance_types[{j}]", name)
        for i, group in enumerate(cfg.gpu_node_groups)
        for j, name in enumerate(group.instance_types)
    ]
    problems = [
        FieldProblem(
            key,
            f"{name} is not offered in region {region} (aws.region); the regions that "
            f"offer it: {', '.join(CATALOG[name].regions) or 'none the catalog read'} (EC2 "
            f"DescribeInstanceTypeOfferings as of {OFFERINGS_AS_OF}, "
            "model/catalog_offerings.py; `python -m tools.offers "
            f"{region}` lists what it offers). Choose another type or region; if AWS offers "
            f"it there now, list its zones under aws.zone_offerings.{name}",
        )
        for key, name in named
        if CATALOG[name].offered_in(region) is False and name not in cfg.aws.zone_offerings
    ]
    if problems:
        raise FieldProblems(problems)


def check_gpu_group_zones(cfg: PlatformConfig) -> None:
    for i, group in enumerate(cfg.gpu_node_groups):
        path = f"gpu_node_groups[{i}]"
        if group.zone is not None and group.zone not in cfg.aws.zone_names():
            raise FieldProblem(f"{path}.zone", f"{group.zone} is not one of {_zones_listed(cfg)}")
        for zone in cfg.group_zones(group):
            for name in group.instance_types:
                offered = cfg.aws.zone_offerings.get(name)
                if offered is not None and zone not in offered:
                    raise FieldProblem(
                        f"{path}.zone",
                        f"{zone} does not offer {name}; it is offered in "
                        f"{', '.join(offered) or 'no zone'} (aws.zone_offerings)",
                    )
    _check_subnet_room(cfg)


def _check_subnet_room(cfg: PlatformConfig) -> None:
    """Every private subnet must hold, at full scale, each node's pods and the addresses
    its interfaces take."""
    demand: dict[str, list[tuple[str, int]]] = {z: [] for z in cfg.aws.zone_names()}
    system_row = CATALOG[cfg.system_nodes.instance_types[0]]
    per_zone = math.ceil(cfg.system_nodes.scaling.max_size / len(cfg.aws.zones))
    for zone in cfg.aws.zones:
        need = per_zone * system_row.addresses_per_node(system_row.max_pods)
        demand[zone].append(("system_nodes", need))
    for i, group in enumerate(cfg.gpu_node_groups):
        zones = cfg.group_zones(group)
        nodes = math.ceil(group.scaling.max_size / len(zones))
        for zone in zones:
            demand[zone].append((f"gpu_node_groups[{i}]", nodes * group.addresses_per_node))
    for zone, private in private_subnet_cidrs(cfg.network, cfg.aws).items():
        key = "local_zone_subnet_cidrs" if zone in cfg.aws.local_zones else "private_subnet_cidrs"
        more_room = (
            f"give network.{key} more room"
            if cfg.network.existing_vpc is None
            else "name larger subnets under network.existing_vpc.private_subnets"
        )
        usable = private.num_addresses - 5  # AWS keeps five addresses of every subnet
        users = demand[zone]
        if sum(n for _, n in users) > usable:
            detail = ", ".join(f"{who} {n}" for who, n in users)
            raise FieldProblem(
                _crowded_key(cfg, zone, max(users, key=lambda u: u[1])[0]),
                f"private subnet {private} in {zone} has {usable} usable addresses, "
                f"but nodes at max_size need {sum(n for _, n in users)} ({detail}); lower "
                f"max_size or kubelet.max_pods, or {more_room}",
            )


def _crowded_key(cfg: PlatformConfig, zone: str, biggest: str) -> str:
    """The key the user set that made a private subnet too small: its own CIDR, the
    scaling of the group that needs the most addresses, else a VPC narrower than the
    default one."""
    existing = cfg.network.existing_vpc
    if existing is not None:
        index = next(i for i, s in enumerate(existing.private_subnets) if s.zone == zone)
        return f"network.existing_vpc.private_subnets[{index}].cidr"
    if zone in cfg.aws.local_zones and cfg.network.local_zone_subnet_cidrs is not None:
        return f"network.local_zone_subnet_cidrs[{cfg.aws.local_zones.index(zone)}]"
    if zone in cfg.aws.zones and cfg.network.private_subnet_cidrs is not None:
        return f"network.private_subnet_cidrs[{cfg.aws.zones.index(zone)}]"
    owners = {"system_nodes": cfg.system_nodes}
    owners.update((f"gpu_node_groups[{i}]", g) for i, g in enumerate(cfg.gpu_node_groups))
    default = NetworkSettings.model_fields["vpc_cidr"].default
    narrowed = cfg.network.vpc_cidr.prefixlen > default.prefixlen
    if narrowed and "scaling" not in owners[biggest].model_fields_set:
        return "network.vpc_cidr"
    return f"{biggest}.scaling.max_size"
