"""The on-prem fabric: the NVIDIA Network Operator, the `nic-cluster-policy` that deploys its
RDMA device plugin, Multus, the CNI plugins and nv-ipam, the nv-ipam IP pools, and the RDMA
network training pods join, in every namespace they run in (Multus reads a pod's networks from
its own namespace: multus-cni docs/how-to-use.md).

One IPAM for the cluster: the operator dropped whereabouts in v25.10.0 (shared/PINS.md), so the
Ceph Multus networks take their addresses from nv-ipam pools declared here too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

import pulumi

from components.base import PlatformComponent, plane_labels
from components.context import StackContext
from components.helm import pinned_release, privileged_namespace
from components.kubernetes_object import KubernetesObject
from components.registry_mirror import Route, image_route, mirrored
from components.storage.ceph import SecondaryNetworks, multus_networks, network_attachment_name
from components.vocabulary import GPU_NODE_DAEMONSET_TOLERATIONS, MULTUS_API, RDMA_NETWORK
from model.config import CephNetworkAttachmentSettings, GpuPool, PlatformConfig
from model.config.fabric import RDMA_FABRICS, FabricSettings
from model.versions import NETWORK_OPERATOR_IMAGES

PART_OF = plane_labels("data")
MELLANOX_API = "mellanox.com/v1alpha1"
NV_IPAM_API = "nv-ipam.nvidia.com/v1alpha1"
# The operator reconciles only a NicClusterPolicy of this name (network-operator 26.4.1,
# example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml).
NIC_CLUSTER_POLICY = "nic-cluster-policy"

# --------------------------------------------------------------------------- pure builders


def rdma_pools(cfg: PlatformConfig) -> list[GpuPool]:
    return [p for p in cfg.gpu_pools if p.fabric in RDMA_FABRICS]


def needs_network_operator(cfg: PlatformConfig) -> bool:
    """RDMA pools need its device plugin; Ceph Multus networks its nv-ipam."""
    ceph = cfg.storage.ceph
    return bool(rdma_pools(cfg)) or (ceph is not None and bool(multus_networks(ceph)))


def network_operator_values() -> dict[str, Any]:
    """Chart values: the operator without its own Node Feature Discovery, which the GPU
    Operator already runs (one NFD per cluster, FACTS.md). The operator's DaemonSets select
    nodes labelled `feature.node.kubernetes.io/pci-15b3.present=true` (its manifests/state-*
    at v26.4.1); the GPU Operator's NFD sets that label itself (gpu-operator v26.7.0 values:
    PCI class 02 in `deviceClassWhitelist`, `deviceLabelFields: [vendor]`), so the chart's
    NodeFeatureRule for it is off too: it needs the NFD CRDs, which the chart no longer
    brings."""
    return {"nfd": {"enabled": False, "deployNodeFeatureRules": False}}


def _image(component: str, mirror: Route) -> dict[str, str]:
    spec = NETWORK_OPERATOR_IMAGES[component].spec()
    return {**spec, "repository": mirrored(spec["repository"], mirror)}


def device_plugin_config(fabric: FabricSettings) -> str:
    """The `config` JSON of the RDMA shared device plugin (`configList`, selectors `vendors`,
    `deviceIDs`, `ifNames`) or of the SR-IOV device plugin (`resourceList`, selectors
    `vendors`, `devices`, `pfNames`, `isRdma`): one resource over the selected NICs, in the
    shapes network-operator 26.4.1's example/crs/*nicclusterpolicy_cr*.yaml use."""
    sel = fabric.nic_selector
    if fabric.rdma_mode == "shared":
        selectors: dict[str, Any] = {"vendors": sel.vendors}
        if sel.device_ids:
            selectors["deviceIDs"] = sel.device_ids
        if sel.if_names:
            selectors["ifNames"] = sel.if_names
        entry = {
            "resourceName": fabric.resource_name,
            "rdmaHcaMax": fabric.rdma_hca_max,
            "selectors": selectors,
        }
        return json.dumps({"configList": [entry]}, sort_keys=True)
    selectors = {"vendors": sel.vendors, "isRdma": True}
    if sel.device_ids:
        selectors["devices"] = sel.device_ids
    if sel.if_names:
        # The VFs of these physical functions.
        selectors["pfNames"] = sel.if_names
    entry = {
        "resourceName": fabric.resource_name,
        "resourcePrefix": "nvidia.com",
        "selectors": selectors,
    }
    return json.dumps({"resourceList": [entry]}, sort_keys=True)


def nic_cluster_policy_spec(cfg: PlatformConfig) -> dict[str, Any]:
    """What the operator deploys: Multus, the CNI plugins (macvlan) and nv-ipam always; with a
    fabric section the device plugin, the DOCA driver unless the hosts have it, and the ipoib
    CNI for InfiniBand. Every image from the stack's registry mirror, where it has one."""
    mirror = image_route(cfg)
    secondary: dict[str, Any] = {
        "multus": _image("multus", mirror),
        "cniPlugins": _image("cniPlugins", mirror),
    }
    spec: dict[str, Any] = {
        "secondaryNetwork": secondary,
        "nvIpam": {**_image("nvIpam", mirror), "enableWebhook": False},
        # The RDMA device plugin and CNI DaemonSets run on the GPU nodes, as the GPU
        # Operator's do.
        "tolerations": list(GPU_NODE_DAEMONSET_TOLERATIONS),
    }
    fabric = cfg.fabric
    if fabric is None:
        return spec
    if any(p.fabric == "infiniband" for p in rdma_pools(cfg)):
        secondary["ipoib"] = _image("ipoib", mirror)
    plugin = "rdmaSharedDevicePlugin" if fabric.rdma_mode == "shared" else "sriovDevicePlugin"
    spec[plugin] = {**_image(plugin, mirror), "config": device_plugin_config(fabric)}
    if not fabric.mofed_preinstalled:
        spec["ofedDriver"] = _image("ofedDriver", mirror)
    return spec


def node_selector_terms(pools: Sequence[GpuPool]) -> list[dict[str, Any]]:
    """Nodes of any of `pools` (terms are ORed, a term's expressions ANDed)."""
    return [
        {
            "matchExpressions": [
                {"key": k, "operator": "In", "values": [v]}
                for k, v in sorted(p.node_selector.items())
            ]
        }
        for p in pools
    ]


def ip_pool_spec(
    subnet: IPv4Network,
    per_node_block_size: int,
    *,
    outside: Sequence[IPv4Network] = (),
    gateway: str | None = None,
    pools: Sequence[GpuPool] = (),
) -> dict[str, Any]:
    """An nv-ipam IPPool: each matched node gets a block of `per_node_block_size` addresses of
    `subnet`, never one inside `outside`."""
    spec: dict[str, Any] = {"subnet": str(subnet), "perNodeBlockSize": per_node_block_size}
    if outside:
        spec["exclusions"] = [
            {"startIP": str(net[0]), "endIP": str(net[-1])} for net in sorted(outside)
        ]
    if gateway is not None:
        spec["gateway"] = gateway
    if pools:
        spec["nodeSelector"] = {"nodeSelectorTerms": node_selector_terms(pools)}
    return spec


def ceph_ip_pool_spec(network: CephNetworkAttachmentSettings) -> dict[str, Any]:
    """Ceph pods take addresses only from `cidr`: every other address of the subnet (the
    hosts' range above all) is excluded, and nv-ipam skips blocks wholly excluded. The subnet
    holds the hosts' shims, so pods reach them on-link, as the route to host_range gave them
    under whereabouts: nv-ipam returns routes only through a pool gateway (nvidia-k8s-ipam
    pkg/cni/plugin, grpcRespToResult), and the hosts are no gateway."""
    subnet = network.subnet
    outside = list(subnet.address_exclude(network.cidr)) if subnet != network.cidr else []
    return ip_pool_spec(subnet, network.per_node_block_size, outside=outside)


def rdma_network_config(cfg: PlatformConfig) -> str:
    """The RDMA network's CNI config. RoCE: macvlan on the RDMA NIC in bridge mode, so each pod
    has its own address (and RoCE GID) on the NIC. InfiniBand: ipoib, since macvlan needs an
    Ethernet link and an IB port has none."""
    net = cfg.fabric.network
    ib = any(p.fabric == "infiniband" for p in rdma_pools(cfg))
    plugin = {"type": "ipoib"} if ib else {"type": "macvlan", "mode": "bridge"}
    return json.dumps(
        {
            "cniVersion": "0.3.1",
            "name": RDMA_NETWORK,
            **plugin,
            "master": net.interface,
            "ipam": {"type": "nv-ipam", "poolName": RDMA_NETWORK},
        },
        sort_keys=True,
    )


def ip_pools(cfg: PlatformConfig) -> dict[str, dict[str, Any]]:
    """nv-ipam pool name -> spec: the RDMA network's, and one per Ceph Multus network."""
    found: dict[str, dict[str, Any]] = {}
    net = cfg.fabric.network if cfg.fabric is not None else None
    if net is not None:
        found[RDMA_NETWORK] = ip_pool_spec(
            net.cidr,
            net.per_node_block_size,
            gateway=None if net.gateway is None else str(net.gateway),
            pools=rdma_pools(cfg),
        )
    if cfg.storage.ceph is not None:
        for role, network in multus_networks(cfg.storage.ceph).items():
            found[network_attachment_name(role)] = ceph_ip_pool_spec(network)
    return found


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class NetworkOperatorArgs:
    context: StackContext
    cfg: PlatformConfig
    # Every namespace training pods run in, the training namespace first: the RDMA network is
    # theirs, and Multus looks a network up in the pod's own namespace.
    training_namespaces: Sequence[str]
    # Declared first: those namespaces.
    after: Sequence[pulumi.Resource] = ()
    # False: the cluster runs its own Network Operator and NicClusterPolicy (existing.addons);
    # the platform declares only the nv-ipam pools and RDMA networks it needs on top, and the
    # plan lists what that policy must deploy (infra/existing_addons.py).
    install: bool = True


class NetworkOperator(PlatformComponent):
    """Network Operator (pinned chart), `nic-cluster-policy`, nv-ipam pools, RDMA network; or,
    on a cluster that runs its own, the pools and networks alone."""

    PLANE = "data"

    def __init__(
        self, name: str, args: NetworkOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        env, cfg = args.context.env, args.cfg
        ns = (cfg.fabric or FabricSettings()).namespace
        # What the pools and networks wait for: the policy that deploys nv-ipam and Multus.
        policy: list[pulumi.Resource] = []
        # What a Ceph Multus network waits for: the release that brings the CRDs, or on a
        # cluster that runs its own operator, this component's pools and networks.
        operator: pulumi.Resource = self
        if args.install:
            # The driver, device plugin and CNI DaemonSets run privileged on the hosts.
            namespace = privileged_namespace(f"{env}-ns-{ns}", ns, PART_OF, self)
            operator = pinned_release(
                f"{env}-network-operator",
                "network-operator",
                ns,
                network_operator_values(),
                self.child(depends_on=[namespace]),
                context=args.context,
            )
            policy = [
                KubernetesObject(
                    f"{env}-nic-cluster-policy",
                    {
                        "apiVersion": MELLANOX_API,
                        "kind": "NicClusterPolicy",
                        "metadata": {"name": NIC_CLUSTER_POLICY, "labels": PART_OF},
                        "spec": nic_cluster_policy_spec(cfg),
                    },
                    self.child(depends_on=[operator]),
                )
            ]
        # Else the cluster's operator, its CRDs and its one NicClusterPolicy are there already
        # (the operator reconciles only one, of that name): the platform declares none.
        pools = {}
        for pool, spec in ip_pools(cfg).items():
            pools[pool] = KubernetesObject(
                f"{env}-ippool-{pool}",
                {
                    "apiVersion": NV_IPAM_API,
                    "kind": "IPPool",
                    "metadata": {"name": pool, "namespace": ns, "labels": PART_OF},
                    "spec": spec,
                },
                self.child(depends_on=policy),
            )
        if cfg.fabric is not None and cfg.fabric.network is not None:
            first = args.training_namespaces[0]
            for training in args.training_namespaces:
                # The training namespace's keeps the name it always had: no replacement.
                suffix = "" if training == first else f"-in-{training}"
                KubernetesObject(
                    f"{env}-rdma-net{suffix}",
                    {
                        "apiVersion": MULTUS_API,
                        "kind": "NetworkAttachmentDefinition",
                        "metadata": {
                            "name": RDMA_NETWORK,
                            "namespace": training,
                            "labels": PART_OF,
                        },
                        "spec": {"config": rdma_network_config(cfg)},
                    },
                    self.child(depends_on=[*policy, *args.after]),
                )
        self.networks = SecondaryNetworks(operator, pools)
        self.register_outputs({"namespace": ns})
