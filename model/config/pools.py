"""GPU pools: one view over the GPU nodes of any provider, for everything that must not care
which provider made them (the GPU Operator's per-node configs, Kueue flavors, NCCL settings, the
self-test and training jobs).

On AWS a pool is a GPU node group the platform declares; on an existing cluster it is a set of
the admin's nodes, selected by their labels (`existing.gpu_pools`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from model.catalog import MIG_PROFILES
from model.config.gpu_operator import DEVICE_PLUGIN_DEPLOY_LABEL, DEVICE_PLUGIN_OFF, MigStrategy
from model.config.nodes import GpuAllocation, GpuNodeGroupSettings, GpuSharingSettings
from model.config.pod_fit import existing_memory_gib_per_gpu, group_memory_gib_per_gpu

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.onprem import OnPremGpuPoolSettings

Fabric = Literal["efa", "infiniband", "roce", "tcp"]
# The label every AWS GPU node carries with its group's name; on-prem pools bring their own.
NODE_GROUP_LABEL = "gpu-platform/node-group"
# Why a MIG pool takes no distributed job: `python -m jobs` refuses one there (jobs/common.py),
# and the plan warns of MIG on a pool with a multi-node fabric (infra/stack_warnings.py).
MIG_TAKES_NO_DISTRIBUTED_JOB = (
    "its GPUs are cut into MIG slices; distributed jobs train on whole GPUs"
)


@dataclass(frozen=True)
class GpuPool:
    """What a pod scheduled onto one kind of GPU node can count on."""

    name: str
    # Labels that select exactly this pool's nodes.
    node_selector: dict[str, str]
    gpu_model: str
    gpu_memory_gib: int
    # The smallest GPU count of the pool's instance types: what one pod can always get.
    gpus_per_node: int
    max_nodes: int
    fabric: Fabric
    # EFA devices a node advertises (vpc.amazonaws.com/efa); 0 off AWS or without EFA.
    efa_interfaces: int
    sharing: GpuSharingSettings
    # The cluster's one MIG strategy (gpu_operator.mig_strategy): how a MIG pool's GPUs are cut
    # and advertised.
    mig_strategy: MigStrategy
    # Memory a training pod takes per GPU: the node's memory for pods shared out among its GPUs
    # (model/config/pod_fit.py).
    memory_gib_per_gpu: int
    # 2 MiB hugepages a node reserves at boot (EFA groups, for libfabric); 0 elsewhere.
    hugepages_2mi: int = 0
    # Whole CPUs a training pod takes per GPU (components/jobs.resources); None on an existing
    # cluster whose pool does not say.
    cpus_per_gpu: int | None = None
    # AWS: the node group's instance types and capacity kind; empty / None on an existing cluster.
    instance_types: tuple[str, ...] = ()
    capacity: str | None = None
    gpu_allocation: GpuAllocation = "device_plugin"
    # Nodes one multi-node NVLink (IMEX) domain of the pool holds (GB200 NVL72: 18); None where
    # NVLink ends at the node. What ComputeDomains and the clique topology level size from.
    nvlink_domain_nodes: int | None = None

    @property
    def mig_profiles(self) -> tuple[str, str, str] | None:
        return MIG_PROFILES.get((self.gpu_model, self.gpu_memory_gib))

    @property
    def max_gpus(self) -> int:
        return self.gpus_per_node * self.max_nodes

    @property
    def hugepages_quantity(self) -> str | None:
        """The reserved hugepages as the kubelet advertises `hugepages-2Mi` (pages x 2 MiB),
        which is also how pods request them and cluster-autoscaler's tags read them."""
        return f"{2 * self.hugepages_2mi}Mi" if self.hugepages_2mi else None


def _selector(labels: dict[str, str], allocation: GpuAllocation) -> dict[str, str]:
    """A DRA pool's nodes are those with the device plugin off as well (model/dra.py): a job
    that claims GPUs there never lands on a node where the device plugin hands them out too."""
    if allocation == "dra":
        return {**labels, DEVICE_PLUGIN_DEPLOY_LABEL: DEVICE_PLUGIN_OFF}
    return dict(labels)


def pool_of_group(group: GpuNodeGroupSettings, mig_strategy: MigStrategy) -> GpuPool:
    row = min(group.instances, key=lambda i: i.gpus)
    return GpuPool(
        name=group.name,
        node_selector=_selector({NODE_GROUP_LABEL: group.name}, group.gpu_allocation),
        gpu_model=row.gpu_model,
        gpu_memory_gib=row.gpu_memory_gib,
        gpus_per_node=row.gpus,
        max_nodes=group.scaling.max_size,
        fabric="efa" if group.efa else "tcp",
        efa_interfaces=row.efa_interfaces if group.efa else 0,
        sharing=group.gpu_sharing,
        mig_strategy=mig_strategy,
        memory_gib_per_gpu=group_memory_gib_per_gpu(group),
        hugepages_2mi=group.hugepages_2mi,
        cpus_per_gpu=group.cpus_per_gpu,
        instance_types=tuple(group.instance_types),
        capacity=group.capacity,
        gpu_allocation=group.gpu_allocation,
        nvlink_domain_nodes=row.nvlink_domain_nodes,
    )


def pool_of_onprem(
    pool: OnPremGpuPoolSettings, mig_strategy: MigStrategy, memory_gib_per_node: int | None = None
) -> GpuPool:
    """`memory_gib_per_node`: what the pool's Kueue flavor states (scheduling.flavors), if it
    does."""
    return GpuPool(
        name=pool.name,
        node_selector=_selector(pool.node_selector, pool.gpu_allocation),
        gpu_model=pool.gpu_model,
        gpu_memory_gib=pool.gpu_memory_gib,
        gpus_per_node=pool.gpus_per_node,
        max_nodes=pool.nodes,
        fabric=pool.fabric,
        efa_interfaces=0,
        sharing=pool.gpu_sharing,
        mig_strategy=mig_strategy,
        memory_gib_per_gpu=existing_memory_gib_per_gpu(memory_gib_per_node, pool.gpus_per_node),
        cpus_per_gpu=pool.cpus_per_gpu,
        gpu_allocation=pool.gpu_allocation,
    )


def gpu_pools(cfg: PlatformConfig) -> list[GpuPool]:
    """Every GPU pool of the stack, in config order."""
    strategy = cfg.gpu_operator.mig_strategy
    if cfg.provider == "aws":
        return [pool_of_group(g, strategy) for g in cfg.gpu_node_groups]
    flavors = cfg.scheduling
    return [
        pool_of_onprem(p, strategy, flavors.flavor(p.name).memory_gib_per_node)
        for p in cfg.existing.gpu_pools
    ]


def windowed(cfg: PlatformConfig) -> list[GpuNodeGroupSettings]:
    """The node groups with a window, whose pools' flavors the reservation controller opens and
    closes (on AWS, where the platform declares the node groups)."""
    if cfg.provider != "aws":
        return []
    return [g for g in cfg.gpu_node_groups if g.reservation_window is not None]


def windowed_keys(cfg: PlatformConfig) -> list[str]:
    """The stack-file key of each window, for errors that name them."""
    names = [g.name for g in cfg.gpu_node_groups]
    return [f"gpu_node_groups[{names.index(g.name)}].reservation_window" for g in windowed(cfg)]


def always_up_pools(cfg: PlatformConfig) -> list[GpuPool]:
    """The pools a run may ask for at any time: not a windowed pool, whose reservation launches
    nothing before its window (EC2 User Guide, "Capacity Blocks for ML") and whose flavor has
    quota 0 outside it, so a Job that `pulumi up` waits on there is never admitted. A windowed
    pool's nodes are tested by the node-join check in the window's warm-up instead."""
    closed = {g.name for g in windowed(cfg)}
    return [p for p in cfg.gpu_pools if p.name not in closed]
