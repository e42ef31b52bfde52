"""The on-prem fabric's config: how the NVIDIA Network Operator exposes the RDMA NICs of an
existing cluster's GPU nodes, and the secondary network pods use them through.

AWS has no such section: EFA is configured per node group. A stack with an `infiniband` or
`roce` GPU pool must have one (`PlatformConfig` checks both rules).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from model.config.base import DnsLabel, FieldProblem, Int, Settings, _overlaps, shaped
from model.config.bounds import INT32_MAX
from model.config.references import K8S_NAMESPACE, names

if TYPE_CHECKING:
    from model.config import PlatformConfig

# A Linux interface name: at most 15 characters (IFNAMSIZ less the terminating NUL).
InterfaceName = Annotated[
    str,
    shaped(r"[A-Za-z0-9_.:-]{1,15}", "a Linux interface name: 1 to 15 letters, digits and _ . : -"),
]
# PCI ids as lspci prints them and the RDMA shared device plugin's selectors take them.
PciId = Annotated[
    str, shaped(r"[0-9a-f]{4}", "a PCI id: 4 lowercase hexadecimal digits, e.g. 15b3")
]
# An RDMA device as NCCL_IB_HCA takes it: mlx5_0, or mlx5_0:1 for one port.
HcaName = Annotated[
    str, shaped(r"[a-z0-9_]{1,32}(:\d+)?", "an RDMA device name, e.g. mlx5_0, optionally :port")
]
# NVIDIA (Mellanox) is PCI vendor 15b3: the vendor in every NicClusterPolicy example of
# network-operator 26.4.1 (example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml).
MELLANOX_VENDOR = "15b3"


class NicSelectorSettings(Settings):
    """Which NICs the device plugin hands to pods; a NIC must match every non-empty list."""

    vendors: list[PciId] = Field(
        default_factory=lambda: [MELLANOX_VENDOR],
        description="PCI vendor ids; default NVIDIA (Mellanox) 15b3.",
    )
    device_ids: list[PciId] = Field(
        default_factory=list,
        description="PCI device ids, e.g. 101d (ConnectX-6 Dx) or 1021 (ConnectX-7); in sriov "
        "mode the virtual functions' ids (lspci -nn on a host).",
    )
    if_names: list[InterfaceName] = Field(
        default_factory=list,
        description="Host interface names of the RDMA NICs, e.g. [ens1f0np0, ens1f1np1]; in "
        "sriov mode the physical functions whose VFs are handed out.",
    )

    @model_validator(mode="after")
    def _selects_something(self) -> NicSelectorSettings:
        if not (self.vendors or self.device_ids or self.if_names):
            raise FieldProblem(
                "vendors",
                "vendors, device_ids and if_names are all empty: the selector would pick no "
                f"NIC and no pod could get one; give at least one, e.g. vendors: "
                f"[{MELLANOX_VENDOR}]",
            )
        return self


class SecondaryNetworkSettings(Settings):
    """The Multus network training pods join for RDMA traffic, with nv-ipam addresses."""

    interface: InterfaceName = Field(
        description="Host interface the pods' interface sits on, the same name on every GPU "
        "node: RoCE, the NIC's Ethernet port (e.g. ens1f0np0); InfiniBand, its IPoIB "
        "interface (e.g. ib0)."
    )
    cidr: IPv4Network = Field(description="Subnet of the network (nv-ipam IPPool `subnet`).")
    gateway: IPv4Address | None = Field(
        None, description="Gateway on the subnet, if the fabric routes beyond it."
    )
    per_node_block_size: Int = Field(
        16,
        ge=1,
        le=2**24,
        description="Addresses nv-ipam reserves for each node: at least the pods that join "
        "the network on one node.",
    )

    @model_validator(mode="after")
    def _fits(self) -> SecondaryNetworkSettings:
        if self.gateway is not None and self.gateway not in self.cidr:
            raise FieldProblem("gateway", f"{self.gateway} is not in cidr {self.cidr}")
        if self.per_node_block_size >= self.cidr.num_addresses:
            raise FieldProblem(
                "per_node_block_size",
                f"{self.per_node_block_size} addresses per node do not fit in {self.cidr} "
                f"({self.cidr.num_addresses} addresses); nv-ipam needs a block smaller than "
                "the subnet",
            )
        return self


class FabricSettings(Settings):
    """InfiniBand or RoCE through the NVIDIA Network Operator (provider existing only)."""

    namespace: Annotated[DnsLabel, names(K8S_NAMESPACE)] = Field(
        "nvidia-network-operator", description="Namespace of the operator and its IP pools."
    )
    rdma_mode: Literal["shared", "sriov"] = Field(
        "shared",
        description="`shared`: the RDMA shared device plugin lets up to rdma_hca_max pods use "
        "each selected NIC. `sriov`: one virtual function per pod through the SR-IOV device "
        "plugin (the VFs must already exist on the hosts).",
    )
    resource_name: Annotated[
        str,
        shaped(r"[a-z0-9_]{1,63}", "1 to 63 lowercase letters, digits and _"),
    ] = Field(
        "rdma_shared_device",
        description="Resource pods request, as rdma/<name> (shared) or nvidia.com/<name> (sriov).",
    )
    hca_names: list[HcaName] = Field(
        default_factory=list,
        description="RDMA devices NCCL uses (NCCL_IB_HCA), e.g. [mlx5_0, mlx5_1]; empty: every "
        "mlx5 device.",
    )
    nic_selector: NicSelectorSettings = Field(default_factory=NicSelectorSettings)
    rdma_hca_max: Int = Field(
        63,
        ge=1,
        le=INT32_MAX,
        description="Pods that may share one NIC in shared mode (the operator's example: 63).",
    )
    gid_index: Int | None = Field(
        None,
        ge=0,
        le=255,
        description="RoCE GID index NCCL uses (NCCL_IB_GID_INDEX): the RoCE v2 entry of the "
        "NIC's GID table, usually 3; `show_gids` on a node lists it. Required for roce pools.",
    )
    network: SecondaryNetworkSettings | None = Field(
        None, description="The secondary network training pods join for RDMA traffic."
    )
    mofed_preinstalled: bool = Field(
        True,
        description="The hosts already run MOFED / DOCA-OFED drivers; false: the operator "
        "deploys the DOCA driver container on every RDMA node.",
    )


# --------------------------------------------------------------------- cross-section rules


def ipam_blocks(subnet: IPv4Network, block: int, within: IPv4Network | None = None) -> int:
    """Per-node blocks nv-ipam can hand out of `subnet`: consecutive, from the address after
    the network address, none holding the broadcast address (nvidia-k8s-ipam
    pkg/ipam-controller/allocator: a block ending outside the subnet or on its broadcast is
    ErrNoFreeRanges). With `within`, only blocks that reach into it: wholly excluded blocks
    are skipped."""
    count = (subnet.num_addresses - 2) // block
    if within is None:
        return count
    low = int(within.network_address) - int(subnet.network_address)
    high = low + within.num_addresses - 1
    return sum(1 for k in range(count) if 1 + k * block <= high and (k + 1) * block >= low)


def ip_pool_problems(cfg: PlatformConfig) -> list[FieldProblem]:
    """Each nv-ipam pool must hold a block for every node it serves, or the nodes past the
    last block get no address and their pods never start: the RDMA network serves the RDMA
    pools' nodes, each Ceph network at least the storage hosts."""
    pools: list[tuple[str, IPv4Network, int, IPv4Network | None, int, str]] = []
    if cfg.fabric is not None and cfg.fabric.network is not None and cfg.existing is not None:
        net = cfg.fabric.network
        rdma = [p for p in cfg.existing.gpu_pools if p.fabric in RDMA_FABRICS]
        nodes = sum(p.nodes for p in rdma)
        what = "nodes in the infiniband / roce pools"
        pools.append(("fabric.network", net.cidr, net.per_node_block_size, None, nodes, what))
    ceph = cfg.storage.ceph
    for role in ("public", "cluster"):
        net = getattr(ceph.network, role) if ceph is not None else None
        if net is not None:
            size, hosts = net.per_node_block_size, len(ceph.nodes)
            what = "storage hosts (storage.ceph.nodes)"
            path = f"storage.ceph.network.{role}"
            pools.append((path, net.subnet, size, net.cidr, hosts, what))
    problems = []
    for path, subnet, block, within, nodes, what in pools:
        blocks = ipam_blocks(subnet, block, within)
        if blocks < nodes:
            problems.append(
                FieldProblem(
                    f"{path}.per_node_block_size",
                    f"{block} addresses per node give {blocks} blocks in {within or subnet}, "
                    f"for {nodes} {what}: nodes past the last block get no address; use a "
                    "smaller block or a larger cidr",
                )
            )
    return problems


RDMA_FABRICS = ("infiniband", "roce")


def check_fabric(cfg: PlatformConfig) -> None:
    """Rules on an existing cluster that need the GPU pools and Ceph too: an RDMA pool needs
    the Network Operator's settings, RoCE also the GID index NCCL must use, which no default
    can guess; one nv-ipam serves the RDMA and Ceph networks, so their subnets must not
    overlap."""
    fabric, pools = cfg.fabric, cfg.existing.gpu_pools
    named = []
    if fabric is not None and fabric.network is not None:
        named.append(("fabric.network.cidr", fabric.network.cidr))
    ceph = cfg.storage.ceph
    for role in ("public", "cluster"):
        network = getattr(ceph.network, role) if ceph is not None else None
        if network is not None:
            named.append((f"storage.ceph.network.{role}.cidr", network.subnet))
    problem = _overlaps(named)
    if problem is not None:
        raise problem
    rdma = {p.fabric for p in pools if p.fabric in RDMA_FABRICS}
    if fabric is not None and not rdma:
        raise FieldProblem(
            "fabric",
            "no pool in existing.gpu_pools uses infiniband or roce, so nothing would use this "
            "section; set a pool's fabric, or remove the section",
        )
    if len(rdma) > 1:
        raise FieldProblem(
            "existing.gpu_pools",
            "pools use both infiniband and roce; one fabric section describes one fabric: "
            "put the other pools on tcp, or run them from another stack",
        )
    for i, pool in enumerate(pools):
        if pool.fabric not in RDMA_FABRICS:
            continue
        if fabric is None:
            raise FieldProblem(
                f"existing.gpu_pools[{i}].fabric",
                f"{pool.fabric} needs the NVIDIA Network Operator's settings: add a fabric "
                "section (fabric.nic_selector, fabric.network, and fabric.gid_index for "
                "roce), or use fabric: tcp",
            )
        if fabric.network is None:
            raise FieldProblem(
                "fabric.network",
                f"required: existing.gpu_pools[{i}] ({pool.name}) uses {pool.fabric}, and a pod "
                "reaches the RDMA NIC (and, on RoCE, its GID) only through an interface on it; "
                "give fabric.network.interface and fabric.network.cidr",
            )
        if pool.fabric == "roce" and fabric.gid_index is None:
            raise FieldProblem(
                "fabric.gid_index",
                f"required: existing.gpu_pools[{i}] ({pool.name}) uses roce, and NCCL needs "
                "the RoCE v2 GID index (NCCL_IB_GID_INDEX), usually 3; `show_gids` on a "
                "node lists it",
            )
