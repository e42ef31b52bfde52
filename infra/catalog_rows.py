"""The instance catalog's rows: one entry of facts per EC2 instance type, the one table that
infra/catalog.py turns into `CATALOG`. Kept apart from the model so that the table can grow a
row per type without the module that reads it growing past a screenful of logic.

Sources, per column:
- vCPU, memory, GPUs, EFA maximum, NVMe total: EC2 DescribeInstanceTypes as published in
  aws/karpenter-provider-aws `website/content/en/docs/reference/instance-types.md`, read at
  commit 1d927085dd81 (2026-08-21); the NVMe split into disks: EC2 User Guide, "Instance store
  volume limits" (disks × size; the product is karpenter's instance-local-nvme).
- Network cards, ENIs and IPv4 addresses per ENI on card 0: aws/amazon-vpc-cni-k8s
  `pkg/vpc/vpc_ip_resource_limit.go` at commit b52188387f2e (2026-08-20).
- NUMA nodes: CPU sockets, from the EC2 User Guide's CPU options tables (default cores against
  the cores one socket of the type's processor has). Two sockets: p4d/p4de, p5/p5e/p5en,
  p6-b200, g5.48xlarge, g6e.48xlarge, g6.48xlarge (96 cores of a 48-core EPYC 7R13), p3dn.24xlarge
  and g4dn.metal (48 cores of a 24-core Xeon Platinum 8175M / 8259CL), and g4dn.16xlarge (its 32
  cores are more than one 24-core 8259CL holds).
- GPU memory: the marketed size (NVIDIA data sheets): A100 40/80 GB, H100 80, H200 141, B200
  180, A10G 24, L40S 48, L4 24, T4 16, V100 (p3dn's SXM2 part) 32.
- On-demand Linux price, us-east-1: the price list generated 2026-07-20 for the rows without a
  `price_as_of`; g6 and g4dn from the AWS price list published 2026-09-25 as
  AmbientWare/lazycloud `internal/compute/catalog.go` carries it (its g5/g6e/p4d/p5/p5en rates
  equal the 2026-07-20 ones); p3dn.24xlarge from instances.vantage.sh's data of 2026-01-21 as
  tsaol/aws-gpu `data/p3dn_instances.js` carries it.
- Regions that offer each type: EC2 DescribeInstanceTypeOfferings (`--location-type region`) as
  getmoto/moto records it per region in `moto/ec2/resources/instance_type_offerings/region/`,
  read at commit c6bd43ff2d09 (2026-08-01), for the regions in `OFFERINGS_READ` (every region of
  infra/config/regions.py moto has a file for; the two GovCloud regions have none, so a stack
  there is not checked). AWS adds regions over time: a type newer in a region than this reading
  is refused until its tuple here gains the region, or the stack lists the type's zones in
  `aws.zone_offerings`.
"""

from __future__ import annotations

from typing import Any

OFFERINGS_AS_OF = "2026-08-01"
OFFERINGS_READ: tuple[str, ...] = (
    "af-south-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
    "ca-central-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2",
    "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "sa-east-1",
    "us-east-1", "us-east-2", "us-west-1", "us-west-2",
)  # fmt: skip

# The regions of OFFERINGS_READ that offer each family; every size of a family listed here is
# offered in the same regions (checked size by size in the source).
_P4D_IN = (
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ca-central-1",
    "eu-central-1", "eu-north-1", "eu-west-1", "eu-west-2", "sa-east-1", "us-east-1",
    "us-east-2", "us-west-2",
)  # fmt: skip
_P4DE_IN = (
    "ap-northeast-1", "ap-southeast-1", "eu-central-1", "il-central-1", "us-east-1", "us-west-2",
)  # fmt: skip
_P5_IN = (
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ap-southeast-3",
    "ca-central-1", "eu-north-1", "eu-west-2", "sa-east-1", "us-east-1", "us-east-2",
    "us-west-1", "us-west-2",
)  # fmt: skip
# p5e: Capacity Blocks only, and not in us-east-1.
_P5E_IN = (
    "ap-southeast-2", "ap-southeast-3", "eu-north-1", "eu-west-2", "sa-east-1", "us-east-2",
    "us-west-2",
)  # fmt: skip
_P5EN_IN = (
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-3", "eu-north-1",
    "eu-south-2", "me-central-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
)  # fmt: skip
_P6_B200_IN = ("ap-south-1", "us-east-1", "us-east-2", "us-west-2")
_P3DN_IN = ("ap-northeast-1", "eu-west-1", "us-east-1", "us-west-2")
_G5_IN = (
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ap-southeast-3",
    "ca-central-1", "eu-central-1", "eu-north-1", "eu-south-2", "eu-west-1", "eu-west-2",
    "eu-west-3", "il-central-1", "me-central-1", "sa-east-1", "us-east-1", "us-east-2",
    "us-west-2",
)  # fmt: skip
_G6_IN = (
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ca-central-1",
    "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-2", "eu-west-2", "eu-west-3",
    "me-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-2",
)  # fmt: skip
_G6E_IN = (
    "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2",
    "eu-central-1", "eu-north-1", "eu-south-2", "me-central-1", "us-east-1", "us-east-2",
    "us-west-2",
)  # fmt: skip
_G4DN_IN = (
    "af-south-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-southeast-1", "ap-southeast-2", "ca-central-1", "eu-central-1", "eu-north-1",
    "eu-south-1", "eu-west-1", "eu-west-2", "eu-west-3", "sa-east-1", "us-east-1", "us-east-2",
    "us-west-1", "us-west-2",
)  # fmt: skip
_M7I_IN = OFFERINGS_READ
_M6I_IN = tuple(r for r in OFFERINGS_READ if r not in ("ap-southeast-4", "eu-south-2"))

_A100_40 = {"gpu_model": "A100", "gpu_memory_gib": 40}
_A100_80 = {"gpu_model": "A100", "gpu_memory_gib": 80}
_H100 = {"gpu_model": "H100", "gpu_memory_gib": 80}
_H200 = {"gpu_model": "H200", "gpu_memory_gib": 141}
_B200 = {"gpu_model": "B200", "gpu_memory_gib": 180}
_A10G = {"gpu_model": "A10G", "gpu_memory_gib": 24}
_L40S = {"gpu_model": "L40S", "gpu_memory_gib": 48}
# The new families carry their regions and their price's date with the model.
_L4 = dict(gpu_model="L4", gpu_memory_gib=24, regions=_G6_IN, price_as_of="2026-09-25")
_T4 = dict(gpu_model="T4", gpu_memory_gib=16, regions=_G4DN_IN, price_as_of="2026-09-25")
_V100 = dict(gpu_model="V100", gpu_memory_gib=32, regions=_P3DN_IN, price_as_of="2026-01-21")


def _r(**facts: Any) -> dict[str, Any]:
    return facts


# fmt: off
ROWS: dict[str, dict[str, Any]] = {
    "p4d.24xlarge": _r(vcpus=96, memory_gib=1152, gpus=8, **_A100_40, efa_interfaces=4,
        network_cards=4, nvme_disks=8, nvme_disk_gb=1000, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=21.958, numa_nodes=2, regions=_P4D_IN),
    "p4de.24xlarge": _r(vcpus=96, memory_gib=1152, gpus=8, **_A100_80, efa_interfaces=4,
        network_cards=4, nvme_disks=8, nvme_disk_gb=1000, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=27.447, numa_nodes=2, regions=_P4DE_IN),
    "p5.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_H100, efa_interfaces=32,
        network_cards=32, nvme_disks=8, nvme_disk_gb=3800, max_enis=2, ipv4_per_eni=50,
        on_demand_hourly_usd=55.04, numa_nodes=2, regions=_P5_IN),
    "p5e.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_H200, efa_interfaces=32,
        network_cards=32, nvme_disks=8, nvme_disk_gb=3800, max_enis=2, ipv4_per_eni=50,
        on_demand_hourly_usd=None, numa_nodes=2, regions=_P5E_IN),
    "p5en.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_H200, efa_interfaces=16,
        network_cards=16, nvme_disks=8, nvme_disk_gb=3800, max_enis=4, ipv4_per_eni=50,
        on_demand_hourly_usd=63.296, numa_nodes=2, regions=_P5EN_IN),
    "p6-b200.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_B200, efa_interfaces=8,
        network_cards=8, nvme_disks=8, nvme_disk_gb=3800, max_enis=4, ipv4_per_eni=50,
        on_demand_hourly_usd=113.933, numa_nodes=2, regions=_P6_B200_IN),
    # 8 × V100 on NVLink, no bf16 (Volta): training there runs fp16 with a gradient scaler.
    "p3dn.24xlarge": _r(vcpus=96, memory_gib=768, gpus=8, **_V100, efa_interfaces=1,
        nvme_disks=2, nvme_disk_gb=900, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=31.212, numa_nodes=2),
    "g5.xlarge": _r(vcpus=4, memory_gib=16, gpus=1, **_A10G, nvme_disks=1, nvme_disk_gb=250,
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=1.006, regions=_G5_IN),
    "g5.2xlarge": _r(vcpus=8, memory_gib=32, gpus=1, **_A10G, nvme_disks=1, nvme_disk_gb=450,
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=1.212, regions=_G5_IN),
    "g5.4xlarge": _r(vcpus=16, memory_gib=64, gpus=1, **_A10G, nvme_disks=1, nvme_disk_gb=600,
        max_enis=8, ipv4_per_eni=30, on_demand_hourly_usd=1.624, regions=_G5_IN),
    "g5.8xlarge": _r(vcpus=32, memory_gib=128, gpus=1, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=900, max_enis=8, ipv4_per_eni=30,
        on_demand_hourly_usd=2.448, regions=_G5_IN),
    "g5.12xlarge": _r(vcpus=48, memory_gib=192, gpus=4, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=3800, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=5.672, regions=_G5_IN),
    "g5.16xlarge": _r(vcpus=64, memory_gib=256, gpus=1, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=1900, max_enis=8, ipv4_per_eni=30,
        on_demand_hourly_usd=4.096, regions=_G5_IN),
    "g5.24xlarge": _r(vcpus=96, memory_gib=384, gpus=4, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=3800, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=8.144, regions=_G5_IN),
    "g5.48xlarge": _r(vcpus=192, memory_gib=768, gpus=8, **_A10G, efa_interfaces=1,
        nvme_disks=2, nvme_disk_gb=3800, max_enis=7, ipv4_per_eni=50,
        on_demand_hourly_usd=16.288, numa_nodes=2, regions=_G5_IN),
    # L4 (Ada): bf16, no MIG; EFA from 8xlarge up, one interface on one card.
    "g6.xlarge": _r(vcpus=4, memory_gib=16, gpus=1, **_L4, nvme_disks=1, nvme_disk_gb=250,
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=0.8048),
    "g6.2xlarge": _r(vcpus=8, memory_gib=32, gpus=1, **_L4, nvme_disks=1, nvme_disk_gb=450,
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=0.9776),
    "g6.4xlarge": _r(vcpus=16, memory_gib=64, gpus=1, **_L4, nvme_disks=1, nvme_disk_gb=600,
        max_enis=8, ipv4_per_eni=30, on_demand_hourly_usd=1.3232),
    "g6.8xlarge": _r(vcpus=32, memory_gib=128, gpus=1, **_L4, efa_interfaces=1, nvme_disks=2,
        nvme_disk_gb=450, max_enis=8, ipv4_per_eni=30, on_demand_hourly_usd=2.0144),
    "g6.12xlarge": _r(vcpus=48, memory_gib=192, gpus=4, **_L4, efa_interfaces=1, nvme_disks=4,
        nvme_disk_gb=940, max_enis=8, ipv4_per_eni=30, on_demand_hourly_usd=4.6016),
    "g6.16xlarge": _r(vcpus=64, memory_gib=256, gpus=1, **_L4, efa_interfaces=1, nvme_disks=2,
        nvme_disk_gb=940, max_enis=15, ipv4_per_eni=50, on_demand_hourly_usd=3.3968),
    "g6.24xlarge": _r(vcpus=96, memory_gib=384, gpus=4, **_L4, efa_interfaces=1, nvme_disks=4,
        nvme_disk_gb=940, max_enis=15, ipv4_per_eni=50, on_demand_hourly_usd=6.6752),
    "g6.48xlarge": _r(vcpus=192, memory_gib=768, gpus=8, **_L4, efa_interfaces=1,
        nvme_disks=8, nvme_disk_gb=940, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=13.3504, numa_nodes=2),
    # T4 (Turing): the cheapest GPU here, for development and inference; fp16, no bf16.
    "g4dn.xlarge": _r(vcpus=4, memory_gib=16, gpus=1, **_T4, nvme_disks=1, nvme_disk_gb=125,
        max_enis=3, ipv4_per_eni=10, on_demand_hourly_usd=0.526),
    "g4dn.2xlarge": _r(vcpus=8, memory_gib=32, gpus=1, **_T4, nvme_disks=1, nvme_disk_gb=225,
        max_enis=3, ipv4_per_eni=10, on_demand_hourly_usd=0.752),
    "g4dn.4xlarge": _r(vcpus=16, memory_gib=64, gpus=1, **_T4, nvme_disks=1, nvme_disk_gb=225,
        max_enis=3, ipv4_per_eni=10, on_demand_hourly_usd=1.204),
    "g4dn.8xlarge": _r(vcpus=32, memory_gib=128, gpus=1, **_T4, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=900, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=2.176),
    "g4dn.12xlarge": _r(vcpus=48, memory_gib=192, gpus=4, **_T4, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=900, max_enis=8, ipv4_per_eni=30,
        on_demand_hourly_usd=3.912),
    "g4dn.16xlarge": _r(vcpus=64, memory_gib=256, gpus=1, **_T4, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=900, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=4.352, numa_nodes=2),
    "g4dn.metal": _r(vcpus=96, memory_gib=384, gpus=8, **_T4, efa_interfaces=1, nvme_disks=2,
        nvme_disk_gb=900, max_enis=15, ipv4_per_eni=50, on_demand_hourly_usd=7.824,
        numa_nodes=2),
    "g6e.xlarge": _r(vcpus=4, memory_gib=32, gpus=1, **_L40S, nvme_disks=1, nvme_disk_gb=250,
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=1.861, regions=_G6E_IN),
    "g6e.2xlarge": _r(vcpus=8, memory_gib=64, gpus=1, **_L40S, nvme_disks=1,
        nvme_disk_gb=450, max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=2.242,
        regions=_G6E_IN),
    "g6e.12xlarge": _r(vcpus=48, memory_gib=384, gpus=4, **_L40S, efa_interfaces=1,
        nvme_disks=2, nvme_disk_gb=1900, max_enis=10, ipv4_per_eni=30,
        on_demand_hourly_usd=10.493, regions=_G6E_IN),
    "g6e.24xlarge": _r(vcpus=96, memory_gib=768, gpus=4, **_L40S, efa_interfaces=2,
        network_cards=2, nvme_disks=2, nvme_disk_gb=1900, max_enis=10, ipv4_per_eni=50,
        on_demand_hourly_usd=15.066, regions=_G6E_IN),
    "g6e.48xlarge": _r(vcpus=192, memory_gib=1536, gpus=8, **_L40S, efa_interfaces=4,
        network_cards=4, nvme_disks=4, nvme_disk_gb=1900, max_enis=10, ipv4_per_eni=50,
        on_demand_hourly_usd=30.131, numa_nodes=2, regions=_G6E_IN),
    "m7i.xlarge": _r(vcpus=4, memory_gib=16, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=0.2016, regions=_M7I_IN),
    "m7i.2xlarge": _r(vcpus=8, memory_gib=32, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=0.4032, regions=_M7I_IN),
    "m6i.xlarge": _r(vcpus=4, memory_gib=16, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=0.192, regions=_M6I_IN),
}
# fmt: on
