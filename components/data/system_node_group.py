"""The system node group: a few non-GPU nodes for add-ons (coredns, cluster-autoscaler,
operators), so GPU nodes can scale to zero."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.base import PlatformComponent
from components.context import StackContext
from components.control.cluster import ClusterHandle
from components.data.nodes import (
    ManagedNodeGroupSpec,
    declare_node_group,
    node_config,
    node_repair_config,
    user_data,
)
from model.catalog import CATALOG
from model.config import KubeletSettings, PlatformConfig, SystemNodeSettings

SYSTEM_LABELS = {"gpu-platform/node-role": "system"}


def add_on_nodes(cfg: PlatformConfig) -> dict[str, str]:
    """Where add-ons run: the system nodes the platform declares on AWS; on an existing
    cluster, wherever its scheduler puts them."""
    return dict(SYSTEM_LABELS) if cfg.provider == "aws" else {}


# Add-ons need no CPU pinning or NUMA alignment.
SYSTEM_KUBELET = KubeletSettings(topology_manager_policy="none", cpu_manager_policy="none")


@dataclass(frozen=True)
class SystemNodeGroupArgs:
    context: StackContext
    nodes: SystemNodeSettings
    cluster: ClusterHandle
    node_role_arn: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]
    after: Sequence[pulumi.Resource] = ()


class SystemNodeGroup(PlatformComponent):
    PLANE = "data"

    def __init__(
        self, name: str, args: SystemNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        instance = CATALOG[args.nodes.instance_types[0]]
        self.node_group = declare_node_group(
            self,
            ManagedNodeGroupSpec(
                name=f"{args.context.env}-system",
                cluster_name=args.cluster.name,
                kubernetes_version=args.cluster.eks_version,
                node_role_arn=args.node_role_arn,
                subnet_ids=args.subnet_ids,
                security_group_ids=[args.cluster.security_group_id],
                ami_type="AL2023_x86_64_STANDARD",
                capacity_type="ON_DEMAND",
                instance_types=args.nodes.instance_types,
                scaling=args.nodes.scaling,
                root_volume_gib=args.nodes.root_volume_gib,
                user_data=user_data([node_config(instance, SYSTEM_KUBELET, instance.max_pods)]),
                labels=SYSTEM_LABELS,
                tags=args.context.tags,
                node_repair=node_repair_config(args.nodes.node_repair, reboot_only=False),
                after=args.after,
            ),
        )
        self.register_outputs({"node_group": self.node_group.node_group_name})
