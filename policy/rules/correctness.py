"""Correctness rules: the mistakes users of peer GPU platforms report most often (EFA groups
missing a piece, Capacity Block templates without a type, Lustre unreachable, two DCGM
exporters, labels naming configs that do not exist, autoscaler bounds the wrong way round)."""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from model.catalog import CATALOG
from model.config.regions import LOCAL_ZONES
from policy.rules.base import Context, Subject, as_list, reference, rule, truthy

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
SUBNET = "aws:ec2/subnet:Subnet"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
EFA_TYPES = ("efa", "efa-only")
EFA_DEVICE_PLUGIN_CHART = "aws-efa-k8s-device-plugin"
# FSx for Lustre user guide, "File system access control with Amazon VPC": Lustre traffic uses
# TCP 988 and 1018-1023, between the clients and the file servers and among the servers.
LUSTRE_PORTS = ((988, 988), (1018, 1023))
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"


def efa_interfaces(template: Subject) -> list[dict]:
    return [
        nic
        for nic in as_list(template.props.get("networkInterfaces"))
        if nic.get("interfaceType") in EFA_TYPES
    ]


def launch_template_of(group: Subject, ctx: Context) -> Subject | None:
    ref = reference((group.props.get("launchTemplate") or {}).get("id"))
    return ctx.named(LAUNCH_TEMPLATE, ref)


def instance_types_of(group: Subject, ctx: Context) -> list[str]:
    template = launch_template_of(group, ctx)
    from_template = template.props.get("instanceType") if template else None
    return as_list(group.props.get("instanceTypes")) or as_list(from_template)


def _self_rule(token: str, group: str, ctx: Context) -> bool:
    return any(
        reference(r.props.get("securityGroupId")) == group
        and reference(r.props.get("referencedSecurityGroupId")) == group
        and str(r.props.get("ipProtocol")) == "-1"
        for r in ctx.of_type(token)
    )


@rule(
    "efa-security-group-self-rules",
    "mandatory",
    [LAUNCH_TEMPLATE],
    "EFA interfaces carry a security group that allows all traffic in and out among its "
    "members (AWS EFA user guide), or NCCL hangs at its first collective.",
    "components/data/efa.py declares the EFA group and its two self rules: restore them",
    linked=True,
)
def efa_security_group_self_rules(r: Subject, ctx: Context) -> Iterator[str]:
    nics = efa_interfaces(r)
    if not nics:
        return
    groups = {reference(g) for g in as_list(nics[0].get("securityGroups"))} - {None}
    if not any(
        _self_rule(INGRESS_RULE, g, ctx) and _self_rule(EGRESS_RULE, g, ctx) for g in groups
    ):
        yield "no security group on the EFA interfaces allows all traffic among its members"


@rule(
    "efa-interface-count",
    "mandatory",
    [NODE_GROUP],
    "An EFA node group's launch template has as many EFA interfaces as the instance type "
    "supports (the catalog's count), so no network card sits idle.",
    "gpu_node_groups[].efa derives the interfaces from the catalog (model/catalog.py): "
    "fix the catalog row or the builder",
    linked=True,
)
def efa_interface_count(r: Subject, ctx: Context) -> Iterator[str]:
    template = launch_template_of(r, ctx)
    nics = efa_interfaces(template) if template else []
    if not nics:
        return
    for name in instance_types_of(r, ctx):
        expected = CATALOG[name].efa_interfaces if name in CATALOG else None
        if expected is not None and expected != len(nics):
            yield f"{len(nics)} EFA interfaces, {name} supports {expected}"


@rule(
    "efa-single-subnet",
    "mandatory",
    [NODE_GROUP],
    "An EFA node group launches in exactly one subnet: EFA traffic does not cross zones.",
    "set gpu_node_groups[].zone",
    linked=True,
)
def efa_single_subnet(r: Subject, ctx: Context) -> Iterator[str]:
    template = launch_template_of(r, ctx)
    subnets = as_list(r.props.get("subnetIds"))
    if template and efa_interfaces(template) and len(subnets) != 1:
        yield f"EFA group spans {len(subnets)} subnets"


@rule(
    "efa-device-plugin-installed",
    "mandatory",
    [LAUNCH_TEMPLATE],
    "A cluster with EFA nodes runs the EFA device plugin, or pods cannot request "
    "vpc.amazonaws.com/efa.",
    "the EFA device plugin follows gpu_node_groups[].efa; restore components/data/efa.py",
)
def efa_device_plugin_installed(r: Subject, ctx: Context) -> Iterator[str]:
    if not efa_interfaces(r):
        return
    charts = {h.props.get("chart") for h in ctx.of_type(HELM_RELEASE)}
    if EFA_DEVICE_PLUGIN_CHART not in charts:
        yield "EFA interfaces but no EFA device plugin in the cluster"


@rule(
    "capacity-block-instance-type",
    "mandatory",
    [LAUNCH_TEMPLATE],
    "A Capacity Block launch template names its instance type (EKS refuses the group otherwise).",
    "gpu_node_groups[].instance_types: exactly one type with capacity: capacity_block",
)
def capacity_block_instance_type(r: Subject, ctx: Context) -> Iterator[str]:
    market = (r.props.get("instanceMarketOptions") or {}).get("marketType")
    if market == "capacity-block" and not r.props.get("instanceType"):
        yield "Capacity Block launch template without instanceType"


def _zones_of(values: object, ctx: Context) -> set[str]:
    zones = set()
    for value in as_list(values):
        subnet = ctx.named(SUBNET, reference(value))
        if subnet is not None:
            zones.add(subnet.props.get("availabilityZone"))
    return zones


def _gpu_groups(ctx: Context) -> list[Subject]:
    return [
        g
        for g in ctx.of_type(NODE_GROUP)
        if truthy((g.props.get("labels") or {}).get("nvidia.com/gpu.present"))
    ]


@rule(
    "fsx-in-gpu-zone",
    "mandatory",
    [FSX],
    "The file system sits in a zone the GPU nodes run in, so reads never cross zones.",
    "set storage.fsx.zone to the GPU groups' zone (gpu_node_groups[].zone)",
    linked=True,
)
def fsx_in_gpu_zone(r: Subject, ctx: Context) -> Iterator[str]:
    fsx_zones = _zones_of(r.props.get("subnetIds"), ctx)
    # Nodes in a Local Zone read it from the region whichever of its zones it is in: the file
    # system stays in the region (model/config/storage.py).
    gpu_zones = set().union(
        *(_zones_of(g.props.get("subnetIds"), ctx) for g in _gpu_groups(ctx))
    ) - set(LOCAL_ZONES)
    if fsx_zones and gpu_zones and not fsx_zones & gpu_zones:
        yield f"file system in {sorted(fsx_zones)}, GPU nodes in {sorted(gpu_zones)}"


@rule(
    "fsx-lustre-ports",
    "mandatory",
    [FSX],
    "The file system's security group admits Lustre on TCP 988 and 1018-1023 from itself.",
    "components/storage/fsx.py declares the Lustre rules: restore them",
    linked=True,
)
def fsx_lustre_ports(r: Subject, ctx: Context) -> Iterator[str]:
    for group in {reference(g) for g in as_list(r.props.get("securityGroupIds"))} - {None}:
        rules = [
            i.props
            for i in ctx.of_type(INGRESS_RULE)
            if reference(i.props.get("securityGroupId")) == group
            and reference(i.props.get("referencedSecurityGroupId")) == group
        ]
        for low, high in LUSTRE_PORTS:
            if not any(p.get("fromPort", 0) <= low and high <= p.get("toPort", 0) for p in rules):
                yield f"security group {group} does not admit TCP {low}-{high} from itself"


@rule(
    "no-placement-group-with-reservation",
    "mandatory",
    [LAUNCH_TEMPLATE],
    "No cluster placement group on a group that launches into a capacity reservation: the "
    "launch fails unless the reservation was made in that placement group.",
    "set gpu_node_groups[].placement_group: false, or "
    "policy.allow_placement_group_with_reservation: true",
)
def no_placement_group_with_reservation(r: Subject, ctx: Context) -> Iterator[str]:
    reserved = (r.props.get("capacityReservationSpecification") or {}).get(
        "capacityReservationTarget"
    )
    placed = (r.props.get("placement") or {}).get("groupName")
    if reserved and placed and not ctx.settings.allow_placement_group_with_reservation:
        yield "placement group and capacity reservation together"


def _dcgm_exporters(ctx: Context) -> list[str]:
    found = []
    for release in ctx.of_type(HELM_RELEASE):
        chart = str(release.props.get("chart", ""))
        values = release.props.get("values") or {}
        operator_exporter = (values.get("dcgmExporter") or {}).get("enabled", True)
        if (chart == "gpu-operator" and operator_exporter) or chart.endswith("dcgm-exporter"):
            found.append(release.name)
    return found


@rule(
    "one-dcgm-exporter",
    "mandatory",
    [HELM_RELEASE],
    "Exactly one DCGM exporter runs: two double every GPU series and fight over the "
    "profiling counters.",
    "the GPU Operator's exporter is the cluster's one (components/data/gpu_operator.py): "
    "remove any other exporter release",
)
def one_dcgm_exporter(r: Subject, ctx: Context) -> Iterator[str]:
    if r.props.get("chart") != "gpu-operator":
        return
    exporters = _dcgm_exporters(ctx)
    if len(exporters) != 1:
        yield f"{len(exporters)} DCGM exporters: {', '.join(exporters) or 'none'}"


def _operator_configs(ctx: Context) -> tuple[set[str], set[str]]:
    """The device-plugin config keys and MIG layouts the GPU Operator's values define."""
    plugin, mig = set(), set()
    for release in ctx.of_type(HELM_RELEASE):
        if release.props.get("chart") != "gpu-operator":
            continue
        values = release.props.get("values") or {}
        config = (values.get("devicePlugin") or {}).get("config") or {}
        plugin |= set(config.get("data") or {}) | {config.get("default")}
        data = ((values.get("migManager") or {}).get("config") or {}).get("data") or {}
        for text in data.values():
            mig |= set((yaml.safe_load(text) or {}).get("mig-configs") or {})
    return plugin - {None}, mig


@rule(
    "node-labels-name-operator-configs",
    "mandatory",
    [NODE_GROUP],
    "Every device-plugin or MIG label on a node group names a configuration the GPU Operator "
    "defines; an unknown name leaves the node's GPUs unadvertised.",
    "set gpu_node_groups[].gpu_sharing (the labels and configs derive from it); never set "
    "these labels in gpu_node_groups[].labels",
)
def node_labels_name_operator_configs(r: Subject, ctx: Context) -> Iterator[str]:
    labels = r.props.get("labels") or {}
    plugin, mig = _operator_configs(ctx)
    if DEVICE_PLUGIN_LABEL in labels and labels[DEVICE_PLUGIN_LABEL] not in plugin:
        yield f"{DEVICE_PLUGIN_LABEL}={labels[DEVICE_PLUGIN_LABEL]} is not a device-plugin config"
    if MIG_LABEL in labels and labels[MIG_LABEL] not in mig:
        yield f"{MIG_LABEL}={labels[MIG_LABEL]} is not a MIG layout"


@rule(
    "autoscaler-bounds",
    "mandatory",
    [NODE_GROUP],
    "A node group's minimum size is at most its desired size, and that at most its maximum.",
    "set gpu_node_groups[].scaling.min_size <= max_size (system_nodes.scaling likewise)",
)
def autoscaler_bounds(r: Subject, ctx: Context) -> Iterator[str]:
    scaling = r.props.get("scalingConfig") or {}
    low, high = scaling.get("minSize", 0), scaling.get("maxSize", 0)
    desired = scaling.get("desiredSize", low)
    if not low <= high:
        yield f"minSize {low} > maxSize {high}"
    elif not low <= desired <= high:
        yield f"desiredSize {desired} outside {low}..{high}"


RULES = [
    efa_security_group_self_rules,
    efa_interface_count,
    efa_single_subnet,
    efa_device_plugin_installed,
    capacity_block_instance_type,
    fsx_in_gpu_zone,
    fsx_lustre_ports,
    no_placement_group_with_reservation,
    one_dcgm_exporter,
    node_labels_name_operator_configs,
    autoscaler_bounds,
]
