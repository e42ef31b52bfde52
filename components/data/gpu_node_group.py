"""A GPU node group: EKS managed node group with its own launch template, EFA interfaces laid
out per network card, an optional cluster placement group, reserved or spot capacity, and the
tags cluster-autoscaler needs to scale it from zero."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from components.context import StackContext
from components.control.cluster import ClusterHandle
from components.data.gpu_operator import advertised_resources as pool_resources
from components.data.gpu_operator import operator_labels
from components.data.nodes import (
    ManagedNodeGroupSpec,
    boot_script,
    declare_node_group,
    node_config,
    node_repair_config,
    user_data,
)
from components.vocabulary import (
    CANARY_LABEL,
    EFA_RESOURCE,
    GPU_TAINT,
    NODE_JOIN_TAINT,
    canary_taint,
)
from contract import node_join as join
from model.catalog import InstanceType
from model.config import GpuNodeGroupSettings, Scaling
from model.config.gpu_operator import MigStrategy
from model.config.pools import pool_of_group

HUGEPAGES_RESOURCE = "hugepages-2Mi"
NODE_TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
CAPACITY_TYPES = {
    "on_demand": "ON_DEMAND",
    "spot": "SPOT",
    "reservation": "ON_DEMAND",
    "capacity_block": "CAPACITY_BLOCK",
}
# EKS API, NodegroupUpdateConfig.updateStrategy (DEFAULT | MINIMAL): DEFAULT launches the new
# instances before it terminates the old ones; MINIMAL terminates first. Reserved capacity holds
# exactly the instances bought, so a full reservation or Capacity Block has none spare for
# DEFAULT to launch and the update stalls; on-demand and spot keep EKS's default (None).
UPDATE_STRATEGIES = {
    "on_demand": None,
    "spot": None,
    "reservation": "MINIMAL",
    "capacity_block": "MINIMAL",
}

# --------------------------------------------------------------------------- pure builders


def efa_interfaces(instance: InstanceType, security_group_ids: Sequence) -> list[dict]:
    """The interfaces the type's EC2 page lays out: its `efa_layout` where it has one
    (P6e-GB200: an ENA primary on card 0, one EFA-only interface per 400 Gbps NIC group);
    otherwise one per EFA the type supports, counted from its EFA maximum (not its network
    cards): card 0 carries the primary interface, an EFA with an IP address, every further card
    one `efa-only` interface at device index 0, which takes no IP address. None is public."""
    layout = instance.efa_layout or tuple(
        (card, "efa" if card == 0 else "efa-only") for card in range(instance.efa_interfaces)
    )
    return [
        {
            "network_card_index": card,
            "device_index": 0,
            "interface_type": kind,
            "associate_public_ip_address": "false",
            "delete_on_termination": "true",
            "security_groups": list(security_group_ids),
        }
        for card, kind in layout
    ]


def advertised_resources(group: GpuNodeGroupSettings, mig_strategy: MigStrategy) -> dict[str, int]:
    """Extended resources a node of the group advertises once the GPU Operator runs (MIG
    slices as the cluster's gpu_operator.mig_strategy cuts them); mixed types count by the
    smallest."""
    return pool_resources(pool_of_group(group, mig_strategy))


def group_user_data(group: GpuNodeGroupSettings, *, fast_pull: bool) -> str:
    """nodeadm NodeConfig, then the boot script (hugepages, memlock, GPU tuning) when there is
    one. Only EFA groups lift the memlock limit: verbs memory registration is what needs it,
    and every other node keeps the default bound on what one container may pin."""
    config = node_config(group.instances[0], group.kubelet, group.max_pods, fast_pull)
    script = boot_script(group.hugepages_2mi, group.gpu_tuning, unlimited_memlock=group.efa)
    return user_data([config], [script] if script else [])


def gpu_tuning_report(group: GpuNodeGroupSettings) -> dict:
    """What the plan shows of a group's boot-time GPU settings, unset ones in words."""
    tuning, clocks = group.gpu_tuning, group.gpu_tuning.application_clocks
    watts = tuning.power_limit_watts
    return {
        "compute_mode": tuning.compute_mode,
        "persistence_mode": tuning.persistence_mode,
        "power_limit": "the GPU's default" if watts is None else f"{watts} W",
        "application_clocks": (
            f"memory {clocks.memory_mhz} MHz, graphics {clocks.graphics_mhz} MHz"
            if clocks
            else "the driver's default"
        ),
        "hugepages_2mi": group.hugepages_2mi,
    }


def node_taints(tested_on_join: bool) -> tuple[dict[str, str], ...]:
    """The GPU taint, and the node-join startup taint where new nodes are tested before they
    take a job: EKS applies a node group's taints as the node registers, so no pod lands there
    before the taint does."""
    return (GPU_TAINT, NODE_JOIN_TAINT) if tested_on_join else (GPU_TAINT,)


def node_labels(
    group: GpuNodeGroupSettings, mig_strategy: MigStrategy, tested_on_join: bool = False
) -> dict[str, str]:
    labels = {
        "nvidia.com/gpu.present": "true",
        "gpu-platform/node-group": group.name,
        "gpu-platform/fabric": "efa" if group.efa else "none",
        "gpu-platform/capacity-type": group.capacity.replace("_", "-"),
    }
    if len(group.instance_types) == 1:
        labels["gpu-platform/instance-type"] = group.instance_types[0]
    models = {i.gpu_model for i in group.instances}
    if len(models) == 1:
        labels["gpu-platform/gpu-model"] = models.pop()
    # The GPU Operator's device plugin and MIG manager configure the node by these.
    labels.update(operator_labels(pool_of_group(group, mig_strategy)))
    if tested_on_join:
        # What the node-join check's DaemonSet selects; the check sets it to passed or failed.
        labels[join.LABEL] = join.PENDING
    return {**labels, **group.labels}


def canary_labels(group: GpuNodeGroupSettings, mig_strategy: MigStrategy) -> dict[str, str]:
    """A canary node's labels: the pool's, so that it is measured as one of its nodes, and the
    canary label its Job selects; not the node-join label, so that no node-join check runs
    there (the canary's Job is its check)."""
    return {**node_labels(group, mig_strategy), CANARY_LABEL: group.name}


def canary_taints(group: GpuNodeGroupSettings) -> tuple[dict[str, str], ...]:
    """The GPU taint and the canary's own, which only the canary's Job tolerates: no job lands
    on a node of an untried image, and cluster-autoscaler adds one only for that Job."""
    return (GPU_TAINT, canary_taint(group.name))


# A canary group holds no node but while its Job runs: the autoscaler adds it for the Job's
# pod and removes it once unneeded.
CANARY_SCALING = Scaling(min_size=0, max_size=1, desired_size=0)


def autoscaler_tags(
    group: GpuNodeGroupSettings,
    mig_strategy: MigStrategy,
    tested_on_join: bool = False,
    canary: bool = False,
) -> dict[str, str]:
    """ASG tags that describe a node of this group (or of its canary group) to
    cluster-autoscaler while the group has none, so it can scale from zero: its labels, taints
    and extended resources. The node-join startup taint is left out: the autoscaler drops
    startup taints from the nodes it plans with (FAQ.md, "Startup taints"); the label stays, so
    that it counts the check's pod."""
    labels = (
        canary_labels(group, mig_strategy)
        if canary
        else node_labels(group, mig_strategy, tested_on_join)
    )
    tags = {f"{NODE_TEMPLATE}/label/{k}": v for k, v in labels.items()}
    for taint in canary_taints(group) if canary else (GPU_TAINT,):
        tags[f"{NODE_TEMPLATE}/taint/{taint['key']}"] = f"{taint['value']}:{taint['effect']}"
    # A DRA group's nodes advertise no GPU resource (the device plugin is off there): their GPUs
    # are ResourceSlices, which no ASG tag can describe, and the autoscaler plans with a real
    # node of the group, which it keeps (model/config/dra.py refuses min_size 0).
    if group.gpu_allocation != "dra":
        for resource, count in advertised_resources(group, mig_strategy).items():
            tags[f"{NODE_TEMPLATE}/resources/{resource}"] = str(count)
    if group.efa:
        tags[f"{NODE_TEMPLATE}/resources/{EFA_RESOURCE}"] = str(group.instances[0].efa_interfaces)
        # A quantity, as the kubelet advertises it (pages x 2 MiB): cluster-autoscaler's AWS
        # provider reads node-template resources with resource.ParseQuantity.
        tags[f"{NODE_TEMPLATE}/resources/{HUGEPAGES_RESOURCE}"] = pool_of_group(
            group, mig_strategy
        ).hugepages_quantity
    unneeded = f"{group.scale_down_unneeded_minutes}m0s"
    tags[f"{NODE_TEMPLATE}/autoscaling-options/scaledownunneededtime"] = unneeded
    return dict(sorted(tags.items()))


def capacity_reservation(group: GpuNodeGroupSettings) -> dict | None:
    """Launch template capacity reservation target, for reserved capacity only."""
    if group.capacity_reservation_id:
        return {"capacity_reservation_id": group.capacity_reservation_id}
    if group.capacity_reservation_group_arn:
        return {"capacity_reservation_resource_group_arn": group.capacity_reservation_group_arn}
    return None


def node_group_name(env: str, group: GpuNodeGroupSettings) -> str:
    return f"{env}-{group.name}"


def canary_group_name(env: str, group: GpuNodeGroupSettings) -> str:
    return f"{node_group_name(env, group)}-canary"


def asg_name_pattern(env: str, group: GpuNodeGroupSettings) -> str:
    """EKS names a managed node group's ASG `eks-<node group name>-<uuid>`."""
    return f"^eks-{node_group_name(env, group)}-.*"


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class GpuNodeGroupArgs:
    context: StackContext
    group: GpuNodeGroupSettings
    cluster: ClusterHandle
    node_role_arn: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]
    efa_security_group_id: pulumi.Input[str] | None  # set where a group uses EFA
    # gpu_operator.mig_strategy: the cluster's one, which a MIG group's labels and tags name.
    mig_strategy: MigStrategy
    # images.fast_pull, resolved: SOCI parallel pull on the group's nodes.
    fast_pull: bool
    # selftest.node_join: new nodes join with the startup taint until the self-test passes.
    tested_on_join: bool = False
    after: Sequence[pulumi.Resource] = ()
    # selftest.node_join.canary: given the canary node group, declares the pool's canary Job
    # (components/selftest/canary.py) and returns what the group's own node group waits for.
    canary: Callable[[aws.eks.NodeGroup], Sequence[pulumi.Resource]] | None = None


class GpuNodeGroup(PlatformComponent):
    """One GPU managed node group and everything that belongs to it alone."""

    PLANE = "data"

    def __init__(
        self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        group, ng_name = args.group, node_group_name(args.context.env, args.group)
        instance = group.instances[0]
        node_sgs = [args.cluster.security_group_id]

        placement_group = None
        if group.uses_placement_group:
            placement_group = aws.ec2.PlacementGroup(
                ng_name,
                aws.ec2.PlacementGroupArgs(strategy="cluster", tags={"Name": ng_name}),
                self.child(),
            ).name

        spec = ManagedNodeGroupSpec(
            name=ng_name,
            cluster_name=args.cluster.name,
            kubernetes_version=args.cluster.eks_version,
            node_role_arn=args.node_role_arn,
            subnet_ids=args.subnet_ids,
            security_group_ids=node_sgs,
            ami_type=instance.ami_type,
            capacity_type=CAPACITY_TYPES[group.capacity],
            instance_types=group.instance_types,
            scaling=group.scaling,
            root_volume_gib=group.root_volume_gib,
            user_data=group_user_data(group, fast_pull=args.fast_pull),
            labels=node_labels(group, args.mig_strategy, args.tested_on_join),
            taints=node_taints(args.tested_on_join),
            tags={**args.context.tags, "gpu-platform/node-group": group.name},
            node_repair=node_repair_config(group.node_repair, group.repair_reboot_only),
            network_interfaces=(
                efa_interfaces(instance, [*node_sgs, args.efa_security_group_id])
                if group.efa
                else None
            ),
            placement_group=placement_group,
            capacity_reservation=capacity_reservation(group),
            capacity_block=group.capacity == "capacity_block",
            update_strategy=UPDATE_STRATEGIES[group.capacity],
            release_version=group.ami_release,
            after=args.after,
        )
        gate: Sequence[pulumi.Resource] = ()
        if args.canary is not None:
            canary_name = canary_group_name(args.context.env, group)
            self.canary_group = declare_node_group(
                self,
                dataclasses.replace(
                    spec,
                    name=canary_name,
                    scaling=CANARY_SCALING,
                    labels=canary_labels(group, args.mig_strategy),
                    taints=canary_taints(group),
                    tags={**spec.tags, CANARY_LABEL: group.name},
                    # A node under test is the verdict's subject: repaired, it would be
                    # replaced before the check could fail it.
                    node_repair=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=False),
                ),
            )
            self._tag_asg(
                canary_name,
                self.canary_group,
                autoscaler_tags(group, args.mig_strategy, canary=True),
            )
            gate = args.canary(self.canary_group)
        self.node_group = declare_node_group(
            self, dataclasses.replace(spec, after=[*args.after, *gate])
        )
        self._tag_asg(
            ng_name,
            self.node_group,
            autoscaler_tags(group, args.mig_strategy, args.tested_on_join),
        )
        # Stack output, merged over the groups: its boot-time GPU settings.
        self.outputs = {"gpu_tuning": {group.name: gpu_tuning_report(group)}}
        self.register_outputs({"node_group": self.node_group.node_group_name, **self.outputs})

    def _tag_asg(self, name: str, node_group: aws.eks.NodeGroup, tags: dict[str, str]) -> None:
        """Managed node groups do not pass their tags on to the ASG, where the autoscaler reads
        them; tag the ASG directly."""
        asg_name = node_group.resources.apply(lambda r: r[0].autoscaling_groups[0].name)
        for key, value in tags.items():
            aws.autoscaling.Tag(
                f"{name}-{key.removeprefix(NODE_TEMPLATE + '/')}",
                aws.autoscaling.TagArgs(
                    autoscaling_group_name=asg_name,
                    tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                ),
                self.child(),
            )
