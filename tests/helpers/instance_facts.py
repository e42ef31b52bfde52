"""The documented facts of every instance type the catalog lists, one row per type, each value
a literal copied from its source, never from model/catalog.py.

Sources, per column:
- vCPU, memory (GiB = MiB / 1024), GPUs, GPU model, local NVMe total, EFA maximum: EC2
  DescribeInstanceTypes as published in aws/karpenter-provider-aws
  `website/content/en/docs/reference/instance-types.md` (instance-cpu, instance-memory,
  instance-gpu-count, instance-gpu-name, instance-local-nvme, vpc.amazonaws.com/efa), read at
  commit 1d927085dd81 (2026-08-21).
- GPU memory: the marketed size (NVIDIA data sheets; shared/FACTS.md "AWS GPU instances"):
  A100 40/80 GB, H100 80 GB, H200 141 GB, B200 180 GB, A10G 24 GB, L40S 48 GB, L4 24 GB GDDR6,
  T4 16 GB GDDR6, V100 SXM2 32 GB HBM2 (p3dn; karpenter lists 22888, 16384 and 32768 MiB).
- NVMe disks × size: EC2 User Guide, "Instance store volume limits" (the per-type disk layout;
  the product equals karpenter's instance-local-nvme total).
- Network cards, ENIs and IPv4 addresses per ENI on card 0: aws/amazon-vpc-cni-k8s
  `pkg/vpc/vpc_ip_resource_limit.go` (ENILimit, IPv4Limit, len(NetworkCards)), read at commit
  b52188387f2e (2026-08-20).
- NUMA nodes: CPU sockets, EC2 User Guide "CPU options" tables (default cores / cores per socket);
  the 96-vCPU p4d/p4de/p3dn/g4dn.metal and the 192-vCPU types have two sockets, and so has
  g4dn.16xlarge (32 cores, a Xeon Platinum 8259CL socket holds 24); the rest have one.
"""

from __future__ import annotations

from typing import NamedTuple


class Facts(NamedTuple):
    vcpus: int
    memory_gib: int
    gpus: int
    gpu_model: str | None
    gpu_memory_gib: int
    efa_interfaces: int
    network_cards: int
    max_enis: int
    ipv4_per_eni: int
    numa_nodes: int
    nvme_disks: int
    nvme_disk_gb: int


# fmt: off
# type: vCPU, memory GiB, GPUs, model, GPU GiB, EFA max, cards, ENIs, IPv4/ENI, NUMA, disks, disk GB
FACTS = {name: Facts(*row) for name, row in {
    "p4d.24xlarge":     (96, 1152, 8, "A100", 40, 4, 4, 15, 50, 2, 8, 1000),
    "p4de.24xlarge":    (96, 1152, 8, "A100", 80, 4, 4, 15, 50, 2, 8, 1000),
    "p5.48xlarge":      (192, 2048, 8, "H100", 80, 32, 32, 2, 50, 2, 8, 3800),
    "p5e.48xlarge":     (192, 2048, 8, "H200", 141, 32, 32, 2, 50, 2, 8, 3800),
    "p5en.48xlarge":    (192, 2048, 8, "H200", 141, 16, 16, 4, 50, 2, 8, 3800),
    "p6-b200.48xlarge": (192, 2048, 8, "B200", 180, 8, 8, 4, 50, 2, 8, 3800),
    # Not in the karpenter or VPC CNI readings: AWS "Amazon EC2 P6 instances" (144 vCPU,
    # 960 GiB, 4 GPUs, 740 GB GPU memory), EC2 User Guide P6e section (17 cards, 4 × 400 Gbps
    # EFA), EKS UltraServer page (3 × 7.5 TB); two Grace CPUs of 72 cores (NVIDIA GB200 NVL72
    # specifications: 36 Grace CPUs, 2,592 Arm Neoverse V2 cores), so two NUMA nodes; ENIs and
    # IPv4 per ENI in no table read (nodeadm asks EC2 at boot): the catalog's defaults 4 and 15.
    "p6e-gb200.36xlarge": (144, 960, 4, "GB200", 185, 4, 17, 4, 15, 2, 3, 7500),
    "g5.xlarge":        (4, 16, 1, "A10G", 24, 0, 1, 4, 15, 1, 1, 250),
    "g5.2xlarge":       (8, 32, 1, "A10G", 24, 0, 1, 4, 15, 1, 1, 450),
    "g5.4xlarge":       (16, 64, 1, "A10G", 24, 0, 1, 8, 30, 1, 1, 600),
    "g5.8xlarge":       (32, 128, 1, "A10G", 24, 1, 1, 8, 30, 1, 1, 900),
    "g5.12xlarge":      (48, 192, 4, "A10G", 24, 1, 1, 15, 50, 1, 1, 3800),
    "g5.16xlarge":      (64, 256, 1, "A10G", 24, 1, 1, 8, 30, 1, 1, 1900),
    "g5.24xlarge":      (96, 384, 4, "A10G", 24, 1, 1, 15, 50, 1, 1, 3800),
    "g5.48xlarge":      (192, 768, 8, "A10G", 24, 1, 1, 7, 50, 2, 2, 3800),
    "g6.xlarge":        (4, 16, 1, "L4", 24, 0, 1, 4, 15, 1, 1, 250),
    "g6.2xlarge":       (8, 32, 1, "L4", 24, 0, 1, 4, 15, 1, 1, 450),
    "g6.4xlarge":       (16, 64, 1, "L4", 24, 0, 1, 8, 30, 1, 1, 600),
    "g6.8xlarge":       (32, 128, 1, "L4", 24, 1, 1, 8, 30, 1, 2, 450),
    "g6.12xlarge":      (48, 192, 4, "L4", 24, 1, 1, 8, 30, 1, 4, 940),
    "g6.16xlarge":      (64, 256, 1, "L4", 24, 1, 1, 15, 50, 1, 2, 940),
    "g6.24xlarge":      (96, 384, 4, "L4", 24, 1, 1, 15, 50, 1, 4, 940),
    "g6.48xlarge":      (192, 768, 8, "L4", 24, 1, 1, 15, 50, 2, 8, 940),
    "g4dn.xlarge":      (4, 16, 1, "T4", 16, 0, 1, 3, 10, 1, 1, 125),
    "g4dn.2xlarge":     (8, 32, 1, "T4", 16, 0, 1, 3, 10, 1, 1, 225),
    "g4dn.4xlarge":     (16, 64, 1, "T4", 16, 0, 1, 3, 10, 1, 1, 225),
    "g4dn.8xlarge":     (32, 128, 1, "T4", 16, 1, 1, 4, 15, 1, 1, 900),
    "g4dn.12xlarge":    (48, 192, 4, "T4", 16, 1, 1, 8, 30, 1, 1, 900),
    "g4dn.16xlarge":    (64, 256, 1, "T4", 16, 1, 1, 4, 15, 2, 1, 900),
    "g4dn.metal":       (96, 384, 8, "T4", 16, 1, 1, 15, 50, 2, 2, 900),
    "p3dn.24xlarge":    (96, 768, 8, "V100", 32, 1, 1, 15, 50, 2, 2, 900),
    "g6e.xlarge":       (4, 32, 1, "L40S", 48, 0, 1, 4, 15, 1, 1, 250),
    "g6e.2xlarge":      (8, 64, 1, "L40S", 48, 0, 1, 4, 15, 1, 1, 450),
    "g6e.12xlarge":     (48, 384, 4, "L40S", 48, 1, 1, 10, 30, 1, 2, 1900),
    "g6e.24xlarge":     (96, 768, 4, "L40S", 48, 2, 2, 10, 50, 1, 2, 1900),
    "g6e.48xlarge":     (192, 1536, 8, "L40S", 48, 4, 4, 10, 50, 2, 4, 1900),
    "m7i.xlarge":       (4, 16, 0, None, 0, 0, 1, 4, 15, 1, 0, 0),
    "m7i.2xlarge":      (8, 32, 0, None, 0, 0, 1, 4, 15, 1, 0, 0),
    "m6i.xlarge":       (4, 16, 0, None, 0, 0, 1, 4, 15, 1, 0, 0),
}.items()}
# fmt: on
