"""The instance catalog's rows: one entry of facts per EC2 instance type, the one table that
model/catalog.py turns into `CATALOG`. Kept apart from the model so that the table can grow a
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
- Regions and zones that offer each type: model/catalog_offerings.py.
- p6e-gb200.36xlarge (not in the readings above): 144 vCPU, 960 GiB, 4 GPUs with 740 GB in all
  (AWS "Amazon EC2 P6 instances" page, as a stored copy quotes its table); 17 network cards, EFA
  4 × 400 Gbps at NCI 1, 5, 9, 13 behind an ENA primary on NCI 0 (EC2 User Guide, "EFA
  configuration for P6e-GB200 instances"; EKS User Guide "Use P6e-GB200 UltraServers with Amazon
  EKS": NCI 0 "must be of type `interface`", the node then shows `vpc.amazonaws.com/efa: 4`);
  3 × 7.5 TB instance store (EKS UltraServer page). Two NUMA nodes: its 144 vCPUs are two Grace
  CPUs of 72 Arm Neoverse V2 cores each, one per GB200 superchip (NVIDIA GB200 NVL72
  specifications: 36 Grace CPUs, 2,592 cores; MLCommons inference v6.1, Crusoe's GB200 NVL72
  system description: 144 host cores per 4-GPU node). Its ENI limits are in no table that was
  read: neither the VPC CNI's `vpc_ip_resource_limit.go` at b52188387f2e nor nodeadm's
  `internal/kubelet/instance-info.jsonl` (amazon-eks-ami at 81fec2e8, 2026-07-23) lists the
  type, so nodeadm asks EC2 DescribeInstanceTypes at boot (`GetInstanceInfo` in
  `eni_max_pods.go`) and sets max pods to ENIs × (IPv4 per ENI − 1) + 2. The defaults of
  model/catalog.InstanceType stand here, which can only lower the pod ceiling. No on-demand
  price: it is sold only as UltraServer Capacity Blocks (EC2 User Guide, "Launch instances using
  Capacity Blocks").
- CPU architecture: arm64 for Grace (GB200 pairs two Blackwell GPUs with one Grace CPU, EKS
  UltraServer page: the AL2023 ARM NVIDIA AMI); x86_64 for every other row.
- NVLink domain nodes: how many nodes one multi-node NVLink domain holds, 18 for GB200 NVL72 (the
  `u-p6e-gb200x72` UltraServer is 18 instances, EKS UltraServer page; "On GB200 and GB300 the
  limit is 18", dra-driver-nvidia-gpu v0.4.1 `cmd/compute-domain-controller/main.go`
  `defaultMaxNodesPerIMEXDomain`); None where NVLink ends at the node.
- NVLink per GPU across the domain: 1.8 TB/s for GB200 NVL72 (NVIDIA GB200 NVL72 datasheet and
  product page, "Fifth-Generation NVLink": 1.8 TB/s GPU-to-GPU, 130 TB/s for the rack's 72 GPUs);
  None where NVLink ends at the node.
- UltraServer sizes: instances per UltraServer as sold (`u-p6e-gb200x36` = 9, `u-p6e-gb200x72` =
  18, EKS UltraServer page); empty for types sold per instance.
- Oldest AMI release: the EKS AL2023 NVIDIA AMI that first carries what the type needs (P6e-GB200:
  v20251103, NVIDIA driver 580 with CDMM, EKS UltraServer page).
"""

from __future__ import annotations

from typing import Any

_A100_40 = {"gpu_model": "A100", "gpu_memory_gib": 40}
_A100_80 = {"gpu_model": "A100", "gpu_memory_gib": 80}
_H100 = {"gpu_model": "H100", "gpu_memory_gib": 80}
_H200 = {"gpu_model": "H200", "gpu_memory_gib": 141}
_B200 = {"gpu_model": "B200", "gpu_memory_gib": 180}
_A10G = {"gpu_model": "A10G", "gpu_memory_gib": 24}
_L40S = {"gpu_model": "L40S", "gpu_memory_gib": 48}
# The new families carry their price's date with the model.
_L4 = dict(gpu_model="L4", gpu_memory_gib=24, price_as_of="2026-09-25")
_T4 = dict(gpu_model="T4", gpu_memory_gib=16, price_as_of="2026-09-25")
_V100 = dict(gpu_model="V100", gpu_memory_gib=32, price_as_of="2026-01-21")
# 740 GB over 4 GPUs; unpriced (Capacity Blocks only), so no price date applies.
_GB200 = dict(gpu_model="GB200", gpu_memory_gib=185)


def _r(**facts: Any) -> dict[str, Any]:
    return facts


# fmt: off
ROWS: dict[str, dict[str, Any]] = {
    "p4d.24xlarge": _r(vcpus=96, memory_gib=1152, gpus=8, **_A100_40, efa_interfaces=4,
        network_cards=4, nvme_disks=8, nvme_disk_gb=1000, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=21.958, numa_nodes=2),
    "p4de.24xlarge": _r(vcpus=96, memory_gib=1152, gpus=8, **_A100_80, efa_interfaces=4,
        network_cards=4, nvme_disks=8, nvme_disk_gb=1000, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=27.447, numa_nodes=2),
    "p5.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_H100, efa_interfaces=32,
        network_cards=32, nvme_disks=8, nvme_disk_gb=3800, max_enis=2, ipv4_per_eni=50,
        on_demand_hourly_usd=55.04, numa_nodes=2),
    "p5e.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_H200, efa_interfaces=32,
        network_cards=32, nvme_disks=8, nvme_disk_gb=3800, max_enis=2, ipv4_per_eni=50,
        on_demand_hourly_usd=None, numa_nodes=2),
    "p5en.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_H200, efa_interfaces=16,
        network_cards=16, nvme_disks=8, nvme_disk_gb=3800, max_enis=4, ipv4_per_eni=50,
        on_demand_hourly_usd=63.296, numa_nodes=2),
    "p6-b200.48xlarge": _r(vcpus=192, memory_gib=2048, gpus=8, **_B200, efa_interfaces=8,
        network_cards=8, nvme_disks=8, nvme_disk_gb=3800, max_enis=4, ipv4_per_eni=50,
        on_demand_hourly_usd=113.933, numa_nodes=2),
    # Grace-Blackwell: 2 GPUs and a Grace CPU per superchip, sold only in UltraServers.
    "p6e-gb200.36xlarge": _r(vcpus=144, memory_gib=960, gpus=4, **_GB200, efa_interfaces=4,
        network_cards=17, efa_layout=((0, "interface"), (1, "efa-only"), (5, "efa-only"),
        (9, "efa-only"), (13, "efa-only")), nvme_disks=3, nvme_disk_gb=7500,
        on_demand_hourly_usd=None, cpu_architecture="arm64", nvlink_domain_nodes=18,
        nvlink_gbps_per_gpu=1800, ultraserver_nodes=(9, 18), min_ami_release="20251103",
        numa_nodes=2),
    # 8 × V100 on NVLink, no bf16 (Volta): training there runs fp16 with a gradient scaler.
    "p3dn.24xlarge": _r(vcpus=96, memory_gib=768, gpus=8, **_V100, efa_interfaces=1,
        nvme_disks=2, nvme_disk_gb=900, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=31.212, numa_nodes=2),
    "g5.xlarge": _r(vcpus=4, memory_gib=16, gpus=1, **_A10G, nvme_disks=1, nvme_disk_gb=250,
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=1.006),
    "g5.2xlarge": _r(vcpus=8, memory_gib=32, gpus=1, **_A10G, nvme_disks=1, nvme_disk_gb=450,
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=1.212),
    "g5.4xlarge": _r(vcpus=16, memory_gib=64, gpus=1, **_A10G, nvme_disks=1, nvme_disk_gb=600,
        max_enis=8, ipv4_per_eni=30, on_demand_hourly_usd=1.624),
    "g5.8xlarge": _r(vcpus=32, memory_gib=128, gpus=1, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=900, max_enis=8, ipv4_per_eni=30,
        on_demand_hourly_usd=2.448),
    "g5.12xlarge": _r(vcpus=48, memory_gib=192, gpus=4, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=3800, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=5.672),
    "g5.16xlarge": _r(vcpus=64, memory_gib=256, gpus=1, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=1900, max_enis=8, ipv4_per_eni=30,
        on_demand_hourly_usd=4.096),
    "g5.24xlarge": _r(vcpus=96, memory_gib=384, gpus=4, **_A10G, efa_interfaces=1,
        nvme_disks=1, nvme_disk_gb=3800, max_enis=15, ipv4_per_eni=50,
        on_demand_hourly_usd=8.144),
    "g5.48xlarge": _r(vcpus=192, memory_gib=768, gpus=8, **_A10G, efa_interfaces=1,
        nvme_disks=2, nvme_disk_gb=3800, max_enis=7, ipv4_per_eni=50,
        on_demand_hourly_usd=16.288, numa_nodes=2),
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
        max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=1.861),
    "g6e.2xlarge": _r(vcpus=8, memory_gib=64, gpus=1, **_L40S, nvme_disks=1,
        nvme_disk_gb=450, max_enis=4, ipv4_per_eni=15, on_demand_hourly_usd=2.242),
    "g6e.12xlarge": _r(vcpus=48, memory_gib=384, gpus=4, **_L40S, efa_interfaces=1,
        nvme_disks=2, nvme_disk_gb=1900, max_enis=10, ipv4_per_eni=30,
        on_demand_hourly_usd=10.493),
    "g6e.24xlarge": _r(vcpus=96, memory_gib=768, gpus=4, **_L40S, efa_interfaces=2,
        network_cards=2, nvme_disks=2, nvme_disk_gb=1900, max_enis=10, ipv4_per_eni=50,
        on_demand_hourly_usd=15.066),
    "g6e.48xlarge": _r(vcpus=192, memory_gib=1536, gpus=8, **_L40S, efa_interfaces=4,
        network_cards=4, nvme_disks=4, nvme_disk_gb=1900, max_enis=10, ipv4_per_eni=50,
        on_demand_hourly_usd=30.131, numa_nodes=2),
    "m7i.xlarge": _r(vcpus=4, memory_gib=16, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=0.2016),
    "m7i.2xlarge": _r(vcpus=8, memory_gib=32, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=0.4032),
    "m6i.xlarge": _r(vcpus=4, memory_gib=16, max_enis=4, ipv4_per_eni=15,
        on_demand_hourly_usd=0.192),
}
# fmt: on
