"""Instance catalog: the hardware facts every component and check derives from.

One row per EC2 instance type, in model/catalog_rows.py with each column's source (vCPU, memory,
GPUs, EFA maximum, NVMe, network cards and ENIs, NUMA nodes, the us-east-1 on-demand price and
its date); the regions and zones that offer each type in model/catalog_offerings.py, and the
other regions' on-demand prices in model/catalog_prices.py. Per GPU model here: MIG profiles
and the power and clock limits `nvidia-smi` accepts. A type missing from the rows is rejected by
the config model, so adding a type is adding a row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from model.catalog_offerings import OFFERINGS_READ, offered_zones
from model.catalog_prices import regional_on_demand
from model.catalog_rows import ROWS

PRICE_REGION = "us-east-1"
# MIG (Multi-Instance GPU) slice profiles by GPU model and memory: one, two and three of the
# seven compute slices, named as the GPU Operator's device plugin advertises them
# (nvidia.com/mig-<profile>). A10G, L40S, L4, T4 and V100 have no MIG (NVIDIA MIG user guide,
# "Supported GPUs": A100 and later data-centre parts); they share by time-slicing or MPS.
MIG_PROFILES: dict[tuple[str, int], tuple[str, str, str]] = {
    ("A100", 40): ("1g.5gb", "2g.10gb", "3g.20gb"),
    ("A100", 80): ("1g.10gb", "2g.20gb", "3g.40gb"),
    ("H100", 80): ("1g.10gb", "2g.20gb", "3g.40gb"),
    ("H200", 141): ("1g.18gb", "2g.35gb", "3g.71gb"),
    ("B200", 180): ("1g.23gb", "2g.45gb", "3g.90gb"),
}
MIG_SLICES = 7
PRICE_DATE = "2026-07-20"

# 2 MiB hugepages an EFA node reserves for libfabric's bounce buffers and registered memory.
# EKS user guide, "Run machine learning training on Amazon EKS with Elastic Fabric Adapter":
# "Amazon EC2 instances with the EFA driver installed pre-allocate 5128 2MiB Huge Pages";
# the EFA installer's own check (efa_test.sh) warns below 5128, "enough for current Amazon EC2
# instance types". AWS's EFA pod examples request `hugepages-2Mi: 5120Mi` of them.
EFA_HUGEPAGES_2MI = 5128


@dataclass(frozen=True)
class GpuLimits:
    """What `nvidia-smi` lets an administrator set on one GPU model: the power-limit range
    (`nvidia-smi -q -d POWER`, Min/Max Power Limit) and the application clock pairs
    (`-ac <memory MHz>,<graphics MHz>`) this platform knows the model to accept. An empty
    tuple: no pair is recorded, so the config model refuses application clocks there."""

    min_power_watts: int
    max_power_watts: int
    application_clocks: tuple[tuple[int, int], ...] = ()


# One row per GPU model (and memory size, as MIG_PROFILES: the A100 40 GB and 80 GB differ in
# memory clock). Maximum power: NVIDIA's datasheets (A100 SXM4 400 W, H100 SXM5 700 W, H200
# SXM 700 W, HGX B200 1000 W, L40S 350 W, A10G 300 W). Minimum power and the clock pairs:
# `nvidia-smi -q` as read on the AWS instance types below (A100-SXM4-40GB on p4d: 100-400 W,
# application clocks 1215,1410, the pair AWS's "Optimize GPU settings" page gives for P4d;
# A100-SXM4-80GB: 100-400 W, memory 1593 MHz, max graphics 1410 MHz; H100 80GB HBM3 on p5:
# 200-700 W, 2619,1980; A10G on g5: 100-300 W, 6251,1710; L40S (46068 MiB, 350 W board):
# 150-350 W, 9001,2520). B200: 200-1000 W, the GPU's `PowerLimitWatts` `AllowableMin` and
# `AllowableMax` in NVIDIA's DGX B200 User Guide ("Managing Power Capping", the Redfish reading).
# No reading was found for H200: its floor is taken as the H100's 200 W (same SXM board class;
# a higher floor only refuses more). No clock pair is recorded for either, so clocks are
# refused there until a reading adds one.
# GB200 (p6e-gb200): no `nvidia-smi -q` reading or per-GPU power figure was found here; its
# range is taken as the B200's, the same Blackwell GPU (a lower ceiling and a higher floor only
# refuse more), and no clock pair is recorded, so clocks are refused there.
# The PCIe and SXM2 parts of g6, g4dn and p3dn: maximum power from NVIDIA's datasheets (L4
# 72 W, T4 70 W, V100 SXM2 300 W); `nvidia-smi -q` readings: NVIDIA L4 (driver 550.90.07):
# 40-72 W, application clocks 6251,2040 (memory, graphics at their maximum); Tesla T4 (driver
# 530.30.02): 60-70 W, maximum clocks memory 5001, graphics 1590; Tesla V100-SXM2-16GB: 150-300 W,
# memory 877, maximum graphics 1530. No reading of the 32 GB V100 of p3dn was found: it is the
# same SXM2 board (300 W, HBM2 at 877 MHz), and AWS's "Optimize GPU settings" page gives the
# same pairs for P3dn (`nvidia-smi -ac 877,1530`) and for G4dn (`-ac 5001,1590`).
GPU_LIMITS: dict[tuple[str, int], GpuLimits] = {
    ("A100", 40): GpuLimits(100, 400, ((1215, 1410),)),
    ("A100", 80): GpuLimits(100, 400, ((1593, 1410),)),
    ("H100", 80): GpuLimits(200, 700, ((2619, 1980),)),
    ("H200", 141): GpuLimits(200, 700),
    ("B200", 180): GpuLimits(200, 1000),
    ("GB200", 185): GpuLimits(200, 1000),
    ("L40S", 48): GpuLimits(150, 350, ((9001, 2520),)),
    ("A10G", 24): GpuLimits(100, 300, ((6251, 1710),)),
    ("L4", 24): GpuLimits(40, 72, ((6251, 2040),)),
    ("T4", 16): GpuLimits(60, 70, ((5001, 1590),)),
    ("V100", 32): GpuLimits(150, 300, ((877, 1530),)),
}


# Layers of the AWS network an instance type's topology reports, for the types that report one
# (Amazon EC2 User Guide, "Prerequisites for Amazon EC2 topology", Instance types: "3 network
# nodes" for g6e.*, p3dn.24xlarge, p4d.24xlarge, p4de.24xlarge, p5.48xlarge, p5e.48xlarge,
# p5en.48xlarge, p6e-gb200.36xlarge; "4 network nodes" for p6-b200.48xlarge). EKS labels such nodes
# `topology.k8s.aws/network-node-layer-1` .. `-3`, and `-4` on four-layer types (EKS user
# guide, "Place distributed AI/ML workloads with network topology labels"). Types left out
# (g5, g6, ...) carry no such labels.
NETWORK_TOPOLOGY_LAYERS: dict[str, int] = {
    **{
        f"g6e.{size}": 3
        for size in (
            "xlarge",
            "2xlarge",
            "4xlarge",
            "8xlarge",
            "12xlarge",
            "16xlarge",
            "24xlarge",
            "48xlarge",
        )
    },
    "p3dn.24xlarge": 3,
    "p4d.24xlarge": 3,
    "p4de.24xlarge": 3,
    "p5.48xlarge": 3,
    "p5e.48xlarge": 3,
    "p5en.48xlarge": 3,
    "p6-b200.48xlarge": 4,
    # The AWS Containers blog on DRA and P6e-GB200 lists `-1` to `-4` on such nodes; the
    # prerequisites page says 3, and 3 is what every such node carries either way: Kueue leaves
    # out of a flavor any node that lacks one of its levels (v0.19.2 pkg/util/tas/node.go
    # NodeMatchesFlavor), so the lower reading is the one that admits.
    "p6e-gb200.36xlarge": 3,
}

# EKS managed node group amiType of the AL2023 NVIDIA AMI per CPU architecture (EKS API
# reference, CreateNodegroup `amiType`: AL2023_x86_64_NVIDIA | AL2023_ARM_64_NVIDIA).
NVIDIA_AMI_TYPES: dict[str, str] = {
    "x86_64": "AL2023_x86_64_NVIDIA",
    "arm64": "AL2023_ARM_64_NVIDIA",
}


@dataclass(frozen=True)
class InstanceType:
    name: str
    vcpus: int
    memory_gib: int
    gpus: int = 0
    gpu_model: str | None = None
    gpu_memory_gib: int = 0
    # EC2's MaximumEfaInterfaces: the interface layout derives from it, never from the card count.
    efa_interfaces: int = 0
    network_cards: int = 1
    nvme_disks: int = 0
    nvme_disk_gb: int = 0
    # Interfaces on network card 0, the only card the VPC CNI gives pods addresses from.
    max_enis: int = 4
    ipv4_per_eni: int = 15
    # NUMA nodes (CPU sockets) the GPUs hang off. A pod whose GPUs span both sockets can never
    # pass the kubelet's single-numa-node topology policy.
    numa_nodes: int = 1
    # x86_64 or arm64: picks the AMI (NVIDIA_AMI_TYPES); one launch template boots one AMI.
    cpu_architecture: str = "x86_64"
    # The launch template's interfaces as (network card index, interface type) where the type's
    # EC2 page lays them out otherwise than one EFA per card from card 0 (P6e-GB200).
    efa_layout: tuple[tuple[int, str], ...] | None = None
    # Nodes one multi-node NVLink (IMEX) domain holds; None: NVLink ends at the node.
    nvlink_domain_nodes: int | None = None
    # NVLink bandwidth per GPU across the domain's nodes (GB/s, NVIDIA's datasheet figure);
    # None where NVLink ends at the node. The self-test's floor across nodes derives from it.
    nvlink_gbps_per_gpu: int | None = None
    # Instances per UltraServer as sold; a type with any is bought only as UltraServer
    # Capacity Blocks.
    ultraserver_nodes: tuple[int, ...] = ()
    # Build date (YYYYMMDD) of the oldest EKS AMI release that runs the type; None: any.
    min_ami_release: str | None = None
    # 2 MiB hugepages the node reserves at boot when its group uses EFA (0: none).
    hugepages_2mi: int = 0
    # None: not sold on demand (p5e: Capacity Blocks only).
    on_demand_hourly_usd: float | None = None
    # The day the us-east-1 price list the rate was read from was published.
    price_as_of: str = PRICE_DATE
    # The regions of OFFERINGS_READ whose EC2 offers the type, and the zone IDs in each
    # (model/catalog_offerings.py); a region outside OFFERINGS_READ is one the catalog knows
    # nothing of.
    zones: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(sorted(self.zones))

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def supports_efa(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def has_instance_storage(self) -> bool:
        return self.nvme_disks > 0

    @property
    def ami_type(self) -> str:
        return NVIDIA_AMI_TYPES[self.cpu_architecture]

    @property
    def nvme_total_gb(self) -> int:
        return self.nvme_disks * self.nvme_disk_gb

    @property
    def mig_profiles(self) -> tuple[str, str, str] | None:
        return MIG_PROFILES.get((self.gpu_model, self.gpu_memory_gib))

    @property
    def gpu_limits(self) -> GpuLimits | None:
        return GPU_LIMITS.get((self.gpu_model, self.gpu_memory_gib))

    def addresses_per_node(self, max_pods: int) -> int:
        """VPC addresses a node takes at `max_pods`: one per pod, plus the primary address of
        each card-0 ENI the VPC CNI attaches to host them. EFA-only interfaces take none."""
        return max_pods + math.ceil(max_pods / (self.ipv4_per_eni - 1))

    def offered_in(self, region: str) -> bool | None:
        """Whether EC2 offers the type in `region`, as of OFFERINGS_AS_OF; None where the
        catalog has no reading of that region."""
        return region in self.regions if region in OFFERINGS_READ else None

    @property
    def max_pods(self) -> int:
        """The VPC CNI's pod limit without prefix delegation: ENIs × (IPs − 1) + 2."""
        return self.max_enis * (self.ipv4_per_eni - 1) + 2


def _row(name: str, **facts) -> tuple[str, InstanceType]:
    if facts.get("efa_interfaces"):
        facts.setdefault("hugepages_2mi", EFA_HUGEPAGES_2MI)
    return name, InstanceType(name=name, zones=offered_zones(name), **facts)


# One InstanceType per row of model/catalog_rows.py, whose docstring names each column's source.
CATALOG: dict[str, InstanceType] = dict(_row(name, **facts) for name, facts in ROWS.items())


def instance(name: str) -> InstanceType:
    """The catalog row for `name`; the config model has already rejected unknown types."""
    return CATALOG[name]


@dataclass(frozen=True)
class OnDemandRate:
    """An instance type's on-demand hourly rate as priced for a stack's region: `region` is the
    region whose price list it is from, which is the stack's (`regional`) or, where no price of
    the stack's region is recorded, us-east-1's. `usd` None: not sold on demand (p5e)."""

    usd: float | None
    region: str
    as_of: str
    regional: bool


def on_demand_rate(name: str, region: str) -> OnDemandRate:
    """`name`'s on-demand rate in `region`: model/catalog_rows.py's in us-east-1,
    model/catalog_prices.py's elsewhere, else the us-east-1 rate marked not regional."""
    row = instance(name)
    if region != PRICE_REGION:
        price = regional_on_demand(name, region)
        if price is not None:
            return OnDemandRate(price.usd, region, price.as_of, True)
    return OnDemandRate(
        row.on_demand_hourly_usd, PRICE_REGION, row.price_as_of, region == PRICE_REGION
    )


# Instance types whose EFA supports RDMA read, so libfabric can move GPU memory without the host
# and NCCL's `FI_EFA_USE_DEVICE_RDMA=1` holds. AWS EC2 user guide, "Elastic Fabric Adapter": RDMA
# read on every instance with Nitro v4 and later, and (its "Supported instance types" table) on
# p4d / p4de; g5 (Nitro v3) has none. g6e is left out until its row is checked: setting the
# variable on a device without RDMA read fails, leaving it unset only costs speed. The same
# table lists p6e-gb200.36xlarge under Nitro v6 with RDMA read and write.
EFA_RDMA_READ = frozenset(
    {
        "p6e-gb200.36xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
    }
)
