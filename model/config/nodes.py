"""The data plane's config: system nodes and GPU node groups."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from model.catalog import CATALOG, InstanceType
from model.config.base import (
    CapacityReservationId,
    FieldProblem,
    InstanceTypeName,
    Int,
    KubernetesLabels,
    ReservedResources,
    Settings,
    cpu_quantity,
    shaped,
)
from model.config.bounds import INT32_MAX, WEEK_MINUTES
from model.config.gpu_operator import moved_mig_strategy
from model.config.references import GPU_POOL, names
from model.config.regions import SUPPORTED_PARTITION
from model.config.repair import NodeRepairSettings, check_repair_fits
from model.config.reservation import ReservationWindowSettings, check_window
from model.config.tuning import GpuTuningSettings, check_tuning

# Whole CPUs kept on every GPU node for its DaemonSets beside what the kubelet reserves, so that a
# training pod can take the rest in whole cores. The DaemonSets the plan renders request under one
# CPU together (tests/components/scheduling/test_job_qos.py sums them); the other is for those it
# cannot see: the EKS managed add-ons' (VPC CNI, kube-proxy, Pod Identity agent, EBS CSI node, node
# monitoring) and the GPU Operator's operands (device plugin, GPU Feature Discovery, DCGM exporter).
DAEMONSET_CPUS = 2
# Memory kept on every GPU node for its DaemonSets, on the same terms: the plan's request under
# 1 GiB together (tests/components/scheduling/test_job_qos.py sums them), the rest is for those it
# cannot see.
DAEMONSET_MEMORY_GIB = 2

# EKS service quotas: "Nodes per managed node group", 450 by default. The quota can be raised;
# a stack that needs more asks AWS first and then raises this with it.
MAX_NODES_PER_GROUP = 450


# Every node's gp3 root volume (components/data/nodes.py root_volume): gp3's free baseline IOPS
# and twice its free 125 MB/s, so image pulls are not throttled; the estimate prices the
# throughput above the baseline (model/cost.py).
ROOT_VOLUME_IOPS = 3000
ROOT_VOLUME_THROUGHPUT_MBPS = 250


class Scaling(Settings):
    """Size bounds of a node group; cluster-autoscaler moves between min_size and max_size."""

    min_size: Int = Field(
        0, ge=0, le=MAX_NODES_PER_GROUP, description="Fewest nodes; 0 lets the group scale to zero."
    )
    max_size: Int = Field(
        1,
        ge=1,
        le=MAX_NODES_PER_GROUP,
        description=f"Most nodes; at most {MAX_NODES_PER_GROUP}, the EKS nodes-per-group quota.",
    )
    desired_size: Int | None = Field(
        None,
        ge=0,
        le=MAX_NODES_PER_GROUP,
        description="Nodes at creation; default min_size. Later the autoscaler owns it.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Scaling:
        if self.min_size > self.max_size:
            raise FieldProblem("min_size", f"min_size {self.min_size} > max_size {self.max_size}")
        desired = self.desired_size
        if desired is not None and not self.min_size <= desired <= self.max_size:
            raise FieldProblem(
                "desired_size",
                f"desired_size {desired} outside [min_size {self.min_size}, "
                f"max_size {self.max_size}]",
            )
        return self

    @property
    def desired(self) -> int:
        return self.min_size if self.desired_size is None else self.desired_size


class SystemNodeSettings(Settings):
    """The small non-GPU node group that runs add-ons (provider aws)."""

    instance_types: list[InstanceTypeName] = Field(
        default_factory=lambda: ["m7i.xlarge"],
        min_length=1,
        description="Non-GPU types from the catalog; the first is the launch template default.",
    )
    scaling: Scaling = Field(default_factory=lambda: Scaling(min_size=2, max_size=4))
    root_volume_gib: Int = Field(50, ge=20, le=16384, description="gp3 root volume size.")
    node_repair: NodeRepairSettings = Field(
        default_factory=NodeRepairSettings,
        description="EKS node auto repair; on by default (on-demand nodes replace freely).",
    )

    @field_validator("instance_types")
    @classmethod
    def _no_gpus(cls, value: list[str]) -> list[str]:
        for name in value:
            if CATALOG[name].gpus:
                raise ValueError(f"{name} has GPUs; system nodes use non-GPU types such as m7i")
        return value

    @model_validator(mode="after")
    def _repair_fits(self) -> SystemNodeSettings:
        check_repair_fits(self.node_repair, self.scaling.max_size)
        # Both only shape GPU-fault overrides; on GPU-less on-demand nodes they would be ignored.
        for key in ("reboot_only", "gpu_fault_reasons"):
            if key in self.node_repair.model_fields_set:
                raise FieldProblem(
                    f"node_repair.{key}",
                    "system nodes have no GPUs and no reserved capacity; set it on "
                    "gpu_node_groups[].node_repair, or use overrides here",
                )
        return self


# ---------------------------------------------------------------------------- GPU node groups

CapacityType = Literal["on_demand", "spot", "reservation", "capacity_block"]
RESERVED_CAPACITY = ("reservation", "capacity_block")
# Kubernetes' tested default; big GPU nodes run few pods, and each pod takes a VPC address.
DEFAULT_MAX_PODS = 110
# How a pool's GPUs reach its pods: the GPU Operator's device plugin (the extended resource
# nvidia.com/gpu) or NVIDIA's DRA driver (ResourceClaims). Never both on one node: the driver's
# chart refuses to allocate GPUs beside the device plugin, and the EKS DRA page warns of silent
# oversubscription (../shared/PINS.md, "Coexistence with the GPU Operator's device plugin").
GpuAllocation = Literal["device_plugin", "dra"]


def gpu_allocation_field() -> Any:
    return Field(
        "device_plugin",
        description="How the pool's GPUs are allocated to pods: `device_plugin` (the GPU "
        "Operator's, `nvidia.com/gpu`) or `dra` (NVIDIA's DRA driver: jobs claim GPUs through "
        "ResourceClaimTemplates, and the device plugin is switched off on the pool's nodes).",
    )


class GpuSharingSettings(Settings):
    """How pods share a node's GPUs (NVIDIA device plugin / GPU Operator configuration)."""

    mode: Literal["none", "time-slicing", "mps", "mig"] = Field(
        "none",
        description="`time-slicing` for light inference, `mps` for small training jobs, `mig` "
        "to partition A100/H100/H200/B200 GPUs (cut as gpu_operator.mig_strategy says); `none` "
        "gives each pod whole GPUs.",
    )
    replicas: Int = Field(
        1,
        ge=1,
        le=48,
        description="Pods per GPU: 2 to 48 with time-slicing or MPS; 1 (whole GPUs) otherwise.",
    )

    @model_validator(mode="before")
    @classmethod
    def _mig_strategy_moved(cls, data: Any) -> Any:
        # The per-pool key this setting once had; a stack file that still sets it is told
        # where it went rather than only that the key is unknown.
        if isinstance(data, dict) and "mig_strategy" in data:
            raise moved_mig_strategy(data["mig_strategy"])
        return data

    @model_validator(mode="after")
    def _replicas_need_sharing(self) -> GpuSharingSettings:
        if self.replicas > 1 and self.mode not in ("time-slicing", "mps"):
            raise FieldProblem(
                "replicas", f"replicas {self.replicas} needs mode time-slicing or mps"
            )
        if self.replicas < 2 and self.mode in ("time-slicing", "mps"):
            # One replica shares nothing: the device plugin would hand out whole GPUs under a
            # sharing config, and every pod on the node would believe it may share.
            raise FieldProblem(
                "replicas",
                f"{self.mode} with {self.replicas} replica shares nothing; give replicas "
                "2 to 48 (pods per GPU), or mode none for whole GPUs",
            )
        return self


class KubeletSettings(Settings):
    """Kubelet settings rendered into the node's nodeadm NodeConfig."""

    topology_manager_policy: Literal["none", "best-effort", "restricted", "single-numa-node"] = (
        Field(
            "restricted",
            description="`restricted` admits a pod only when its CPUs and devices get the "
            "best NUMA alignment possible for its size (an 8-GPU pod spans both sockets). "
            "`single-numa-node` is refused on types whose GPUs hang off several NUMA nodes: "
            "it rejects every pod that needs GPUs from more than one socket.",
        )
    )
    topology_manager_scope: Literal["container", "pod"] = Field(
        "pod", description="Align a whole pod (training pods are one container plus helpers)."
    )
    cpu_manager_policy: Literal["none", "static"] = Field(
        "static", description="`static` pins Guaranteed pods' CPUs (data loaders, NCCL threads)."
    )
    max_pods: Int | None = Field(
        None,
        ge=8,
        le=INT32_MAX,
        description=f"Pods per node; default the lower of {DEFAULT_MAX_PODS} and the instance's "
        "VPC CNI limit. Each pod takes a VPC address.",
    )
    system_reserved: ReservedResources = Field(
        default_factory=lambda: {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
        description="Resources kept for the OS.",
    )
    kube_reserved: ReservedResources = Field(
        default_factory=lambda: {"cpu": "500m", "memory": "2Gi", "ephemeral-storage": "1Gi"},
        description="Resources kept for the kubelet and container runtime.",
    )

    @property
    def reserved_cpus(self) -> int:
        """Whole CPUs the kubelet keeps from pods: with the static policy it takes the ceiling
        of system + kube reserved CPU out of the exclusive pool ("fractional CPUs cannot be
        exclusively allocated", kubernetes pkg/kubelet/cm/cpumanager/cpu_manager.go NewManager)."""
        reserved = (self.system_reserved.get("cpu"), self.kube_reserved.get("cpu"))
        return math.ceil(sum(cpu_quantity(q) for q in reserved if q is not None))

    @model_validator(mode="after")
    def _static_needs_reserved_cpu(self) -> KubeletSettings:
        if self.cpu_manager_policy == "static" and not (
            "cpu" in self.system_reserved or "cpu" in self.kube_reserved
        ):
            raise FieldProblem(
                "cpu_manager_policy",
                "static CPU manager needs cpu in system_reserved or kube_reserved",
            )
        return self


def check_ultraserver(group: GpuNodeGroupSettings, rows: list[InstanceType]) -> None:
    """Types sold only inside UltraServers (P6e-GB200): bought as UltraServer Capacity Blocks
    (EC2 User Guide, "Launch instances using Capacity Blocks"), so the group launches into one;
    a block holds whole UltraServers, so the group's ceiling is a whole number of them (a
    ceiling between two sizes is capacity never bought, or a block never filled); and its AMI
    release is one that runs the type (EKS User Guide, "Use P6e-GB200 UltraServers with Amazon
    EKS")."""
    for row in rows:
        if row.ultraserver_nodes and group.capacity != "capacity_block":
            raise FieldProblem(
                "capacity",
                f"{row.name} is sold only as UltraServer Capacity Blocks (EC2 User Guide, "
                f'"Launch instances using Capacity Blocks"), not {group.capacity}: set capacity: '
                "capacity_block and capacity_reservation_id to the block's cr- id",
            )
        unit = min(row.ultraserver_nodes, default=0)
        if unit and group.scaling.max_size % unit:
            sizes = ", ".join(str(n) for n in row.ultraserver_nodes)
            raise FieldProblem(
                "scaling.max_size",
                f"{group.scaling.max_size} is not a whole number of {row.name} UltraServers "
                f'(UltraServers of {sizes} instances, EKS User Guide "Use P6e-GB200 UltraServers '
                f'with Amazon EKS"): give a multiple of {unit}, the smallest UltraServer',
            )
        built = group.ami_build_date
        if built and row.min_ami_release and built < row.min_ami_release:
            raise FieldProblem(
                "ami_release",
                f"{group.ami_release!r} is older than v{row.min_ami_release}, the first AL2023 "
                f'NVIDIA AMI release that runs {row.name} (NVIDIA driver 580; EKS User Guide "Use '
                'P6e-GB200 UltraServers with Amazon EKS"): pin a release of that date or later',
            )


def cpus_per_gpu(row: InstanceType, kubelet: KubeletSettings) -> int:
    return (row.vcpus - kubelet.reserved_cpus - DAEMONSET_CPUS) // row.gpus


class GpuNodeGroupSettings(Settings):
    """One EKS managed node group of GPU instances, with its own launch template."""

    name: Annotated[
        str,
        shaped(
            r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?",
            "a group name: at most 32 characters: lowercase letters, digits and hyphens, "
            "beginning and ending with a letter or digit",
        ),
        names(GPU_POOL),
    ] = Field(description="Short name, unique in the stack; names the node group and its label.")
    instance_types: list[InstanceTypeName] = Field(
        min_length=1,
        description="Types from the catalog. Several only make sense for spot (more pools) or "
        "on-demand fallback; reservations and Capacity Blocks take exactly one.",
    )
    capacity: CapacityType = Field(
        "on_demand",
        description="on_demand, spot, reservation (On-Demand Capacity Reservation) or "
        "capacity_block (EC2 Capacity Block for ML).",
    )
    capacity_reservation_id: CapacityReservationId | None = Field(
        None,
        description="The reservation or Capacity Block (cr-...) to launch into.",
    )
    capacity_reservation_group_arn: (
        Annotated[
            str,
            shaped(
                rf"arn:{SUPPORTED_PARTITION}:resource-groups:[a-z]{{2}}(-[a-z]+)+-\d:\d{{12}}:group/"
                r"[\w.-]{1,128}",
                "a resource group ARN: arn:aws:resource-groups:<region>:<12-digit account>:"
                "group/<name>, the name at most 128 letters, digits and _ . -",
            ),
        ]
        | None
    ) = Field(
        None,
        description="A resource group of reservations (capacity: reservation only).",
    )
    efa: bool = Field(
        False,
        description="Lay out EFA interfaces (one per EFA-capable network card), attach the EFA "
        "security group and keep the group in one subnet.",
    )
    placement_group: bool | None = Field(
        None,
        description="Cluster placement group for lower EFA latency. Default: on for EFA groups, "
        "off with a reservation or Capacity Block (it can leave reserved capacity unused).",
    )
    zone: str | None = Field(
        None,
        description="Zone to place the group in: one of aws.zones, or a Local Zone of "
        "aws.local_zones (the group then launches only in that Local Zone's subnet). Default: "
        "EFA groups the first of aws.zones, other groups every zone of aws.zones.",
    )
    scaling: Scaling = Field(default_factory=lambda: Scaling(min_size=0, max_size=2))
    root_volume_gib: Int = Field(
        200, ge=50, le=16384, description="gp3 root volume; GPU images are large."
    )
    labels: KubernetesLabels = Field(default_factory=dict, description="Extra node labels.")
    kubelet: KubeletSettings = Field(default_factory=KubeletSettings)
    gpu_sharing: GpuSharingSettings = Field(default_factory=GpuSharingSettings)
    gpu_allocation: GpuAllocation = gpu_allocation_field()
    gpu_tuning: GpuTuningSettings = Field(default_factory=GpuTuningSettings)
    ami_release: (
        Annotated[
            str,
            shaped(
                r"[0-9]+\.[0-9]+\.[0-9]+-[0-9]{8}",
                "an EKS AMI release: the Kubernetes version and the build date, as 1.35.3-20260724",
            ),
        ]
        | None
    ) = Field(
        None,
        description="The EKS-optimized AMI release the group's nodes boot (the node group's "
        "releaseVersion, as EKS's AMI releases name it: 1.35.3-20260724); its minor must be "
        "cluster.kubernetes_version. Pinned, a new driver is an explicit change of this value, "
        "which rolls through the pool's canary first (docs/operations.md, \"Rolling a "
        "GPU-stack change\"). Default: the latest release for the cluster's version when the "
        "group is created or its version changes.",
    )
    scale_down_unneeded_minutes: Int = Field(
        30,
        ge=1,
        le=WEEK_MINUTES,
        description="How long a GPU node sits unneeded before the autoscaler removes it; "
        "long enough to survive the gap between two jobs.",
    )
    node_repair: NodeRepairSettings = Field(
        default_factory=NodeRepairSettings,
        description="EKS node auto repair: on by default; reboot-only on the GPU fault reasons "
        "for reservation and capacity_block groups unless node_repair.reboot_only says otherwise.",
    )
    reservation_window: ReservationWindowSettings | None = Field(
        None,
        description="When the reservation or Capacity Block runs (capacity: reservation or "
        "capacity_block only): its pool's Kueue flavor opens after a warm-up, drains before the "
        'end and closes after it (docs/gpu-nodes.md, "Reservation windows").',
    )

    @model_validator(mode="after")
    def _consistent(self) -> GpuNodeGroupSettings:
        rows = [CATALOG[t] for t in self.instance_types]
        reserved = self.capacity_reservation_id or self.capacity_reservation_group_arn
        if self.capacity == "spot" and reserved:
            raise FieldProblem("capacity", "spot cannot launch into a capacity reservation")
        if self.capacity in ("on_demand", "spot") and reserved:
            key = "capacity_reservation_" + ("id" if self.capacity_reservation_id else "group_arn")
            raise FieldProblem(
                key, f"needs capacity: reservation or capacity_block, not {self.capacity}"
            )
        if self.capacity == "reservation" and bool(self.capacity_reservation_id) == bool(
            self.capacity_reservation_group_arn
        ):
            raise FieldProblem(
                "capacity_reservation_id",
                "capacity: reservation needs exactly one of capacity_reservation_id or "
                "capacity_reservation_group_arn",
            )
        if self.capacity == "capacity_block" and not self.capacity_reservation_id:
            raise FieldProblem(
                "capacity_reservation_id", "capacity: capacity_block needs the block's cr- id"
            )
        check_window(self.capacity, self.scaling.max_size, self.reservation_window)
        if self.capacity == "capacity_block" and self.capacity_reservation_group_arn:
            raise FieldProblem(
                "capacity_reservation_group_arn", "a Capacity Block is targeted by its cr- id"
            )
        if self.capacity in RESERVED_CAPACITY and len(rows) != 1:
            raise FieldProblem(
                "instance_types", f"capacity: {self.capacity} launches exactly one instance type"
            )
        for i, row in enumerate(rows):
            if not row.gpus and self.gpu_sharing.mode != "none":
                raise FieldProblem(
                    "gpu_sharing.mode",
                    f"{self.gpu_sharing.mode} shares GPUs, but {row.name} has none",
                )
            if not row.gpus:
                raise FieldProblem(
                    f"instance_types[{i}]",
                    f"{row.name} has no GPUs; a GPU group needs GPU types "
                    "(non-GPU add-ons run on system_nodes)",
                )
            if self.efa and not row.supports_efa:
                efa_types = sorted(n for n, r in CATALOG.items() if r.supports_efa)
                raise FieldProblem(
                    f"instance_types[{i}]",
                    f"efa: true but {row.name} has no EFA; EFA types: {', '.join(efa_types)}",
                )
            if self.gpu_sharing.mode == "mig" and not row.mig_profiles:
                raise FieldProblem(
                    "gpu_sharing.mode",
                    f"mig needs A100, H100, H200 or B200 GPUs; {row.name} has {row.gpu_model}",
                )
            if self.kubelet.topology_manager_policy == "single-numa-node" and row.numa_nodes > 1:
                # The kubelet fails such a pod with TopologyAffinityError instead of waiting:
                # every 8-GPU training pod on p4d/p5 would never start.
                raise FieldProblem(
                    "kubelet.topology_manager_policy",
                    f"single-numa-node rejects any pod needing GPUs from more than one of "
                    f"{row.name}'s {row.numa_nodes} NUMA nodes ({row.gpus} GPUs: a pod asking "
                    f"for more than {row.gpus // row.numa_nodes} fails with "
                    "TopologyAffinityError); use restricted",
                )
            if row.gpus and cpus_per_gpu(row, self.kubelet) < 1:
                raise FieldProblem(
                    "kubelet",
                    f"{row.name}'s {row.vcpus} vCPUs less {self.kubelet.reserved_cpus} reserved "
                    f"and {DAEMONSET_CPUS} for DaemonSets leave no whole CPU for each of its "
                    f"{row.gpus} GPUs; reserve less CPU or pick a larger type",
                )
            if self.kubelet.max_pods is not None and self.kubelet.max_pods > row.max_pods:
                raise FieldProblem(
                    "kubelet.max_pods",
                    f"{self.kubelet.max_pods} exceeds {row.name}'s VPC CNI limit {row.max_pods}",
                )
        if len({r.cpu_architecture for r in rows}) > 1:
            arches = ", ".join(f"{r.name} {r.cpu_architecture}" for r in rows)
            raise FieldProblem(
                "instance_types",
                f"one launch template boots one AMI, built for one CPU architecture ({arches}): "
                "put each architecture in its own group",
            )
        check_ultraserver(self, rows)
        check_tuning(self.gpu_tuning, self.gpu_sharing.mode, rows)
        check_repair_fits(self.node_repair, self.scaling.max_size)
        if self.gpu_sharing.mode == "mig" and len({r.mig_profiles for r in rows}) > 1:
            raise FieldProblem(
                "gpu_sharing.mode",
                "mig partitions every GPU of the group alike: give types with one GPU model",
            )
        if self.efa and len({r.efa_interfaces for r in rows}) > 1:
            raise FieldProblem(
                "instance_types",
                "EFA types in one group must have the same EFA interface count: one launch "
                "template lays out the interfaces",
            )
        return self

    @property
    def ami_build_date(self) -> str | None:
        """The pinned AMI release's build date (YYYYMMDD, which orders as text), None unpinned."""
        return self.ami_release.rpartition("-")[2] if self.ami_release else None

    @property
    def instances(self) -> list[InstanceType]:
        return [CATALOG[t] for t in self.instance_types]

    @property
    def hugepages_2mi(self) -> int:
        """2 MiB hugepages a node reserves at boot: EFA groups only (for libfabric); mixed
        types reserve the smallest count any of them needs."""
        return min(i.hugepages_2mi for i in self.instances) if self.efa else 0

    @property
    def cpus_per_gpu(self) -> int:
        """Whole CPUs a training pod takes per GPU on any of the group's types: the vCPUs less
        the kubelet's reserved CPUs and the DaemonSets' share, over the GPUs, floored."""
        return min(cpus_per_gpu(r, self.kubelet) for r in self.instances)

    @property
    def uses_placement_group(self) -> bool:
        if self.placement_group is not None:
            return self.placement_group
        return self.efa and self.capacity not in RESERVED_CAPACITY

    @property
    def repair_reboot_only(self) -> bool:
        """A replacement in a reservation or Capacity Block may find no free capacity and
        leave the group a node short until the block ends; a reboot keeps the instance."""
        if self.node_repair.reboot_only is not None:
            return self.node_repair.reboot_only
        return self.capacity in RESERVED_CAPACITY

    @property
    def max_pods(self) -> int:
        ceiling = min(r.max_pods for r in self.instances)
        return self.kubelet.max_pods or min(DEFAULT_MAX_PODS, ceiling)

    @property
    def addresses_per_node(self) -> int:
        return max(r.addresses_per_node(self.max_pods) for r in self.instances)
