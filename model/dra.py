"""NVIDIA's DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1): the facts the
platform reads of it, and the one table of which DeviceClass a DRA pool's claims may name and the
Kueue quota it is charged to (`device_class_quota`), for the driver's release, Kueue's
configuration and the job builder's ResourceClaimTemplates alike.

Quota keeps the names of the device-plugin path, so a team's quota means GPUs (or MIG slices of
one profile) whichever way its pool allocates them: Kueue's deviceClassMappings name is any
label-key-shaped resource name, `nvidia.com/gpu` included (kueue v0.19.2
pkg/config/validation.go validateDeviceClassMappings), and a claim template is charged only
through a mapping ("ResourceClaimTemplate path ... deviceClassMappings required",
site/content/en/docs/tasks/manage/setup_dra.md). The extended-resource path, where a pod asks
`nvidia.com/gpu` and the v1 DeviceClass's `extendedResourceName` backs it, needs Kubernetes'
DRAExtendedResource gate (beta 1.36; ../shared/PINS.md "Kubernetes versions and the DRA API"),
and where both paths meet Kueue charges the mapping's name ("Path separation"): the same name
here, so neither path changes the count.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from model.versions import minor_tuple

if TYPE_CHECKING:
    from model.config.pools import GpuPool

NAMESPACE = "dra-driver-nvidia-gpu"
# The chart's DeviceClasses (templates/deviceclass-*.yaml) and the driver that publishes their
# devices.
DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
GPU_QUOTA = "nvidia.com/gpu"
CHANNEL_QUOTA = "nvidia.com/imex-channel"
# What the chart's DeviceClasses that the platform's claims and Kueue mappings name select
# (templates/deviceclass-gpu.yaml, deviceclass-compute-domain-default-channel.yaml): what a
# cluster's own driver must serve under the same names.
CHART_DEVICE_CLASSES = {
    GPU_CLASS: "driver gpu.nvidia.com, type gpu",
    CHANNEL_CLASS: "driver compute-domain.nvidia.com, type channel, id 0",
}
# The ComputeDomain CRD (crds/resource.nvidia.com_computedomains.yaml): this version only.
COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
# The EKS DRA page ("Use the NVIDIA DRA driver or device plugin on Amazon EKS") requires 1.34+
# for GPU allocation with this driver; Kueue's DRA support needs resource.k8s.io/v1, served from
# 1.34 (kueue v0.19.2 site/content/en/docs/concepts/dynamic_resource_allocation.md).
MIN_MINOR = "1.34"
# The DRA API each minor serves by default, else the newest one it opts in to (PINS.md table,
# from kubernetes/website feature-gates/DynamicResourceAllocation.md).
_API_BEFORE_V1 = {"1.32": "resource.k8s.io/v1beta1", "1.33": "resource.k8s.io/v1beta2"}
# Kueue v0.19.2 pkg/config/validation.go validateDeviceClassMappings.
MAX_KUEUE_MAPPINGS = 16


def resource_api_version(minor: str) -> str:
    """The DeviceClass API the chart renders for a cluster of `minor`: set explicitly because
    an offline render's capabilities always hold v1 (PINS.md, chart `resourceApiVersion`)."""
    if minor_tuple(minor) >= minor_tuple(MIN_MINOR):
        return "resource.k8s.io/v1"
    return _API_BEFORE_V1[minor]


def dra_pools(pools: Iterable[GpuPool]) -> list[GpuPool]:
    return [p for p in pools if p.gpu_allocation == "dra"]


def compute_domain_pools(pools: Iterable[GpuPool]) -> list[GpuPool]:
    """Pools whose nodes share a multi-node NVLink domain (GB200 NVL72): their multi-node jobs
    get a ComputeDomain, so the chart's ComputeDomain part is on exactly where one exists."""
    return [p for p in pools if p.nvlink_domain_nodes is not None]


def nvlink_problem(pool: GpuPool, nodes: int, gpus_per_node: int | None) -> tuple[str, str] | None:
    """Why a multi-node job cannot share one NVLink domain of the pool, as (the setting at
    fault, `nodes` or `gpus_per_node`, and why); None when it can, or when the pool has no such
    domain. The driver holds at most 18 nodes in one IMEX domain on GB200
    (cmd/compute-domain-controller/main.go defaultMaxNodesPerIMEXDomain), and its kubelet plugin
    refuses a node already labelled for another ComputeDomain (cmd/compute-domain-kubelet-plugin/
    computedomain.go AddNodeLabel): a pod a node, every GPU of it, so that no other job's domain
    wants the node."""
    domain = pool.nvlink_domain_nodes
    if domain is None or nodes < 2:
        return None
    if nodes > domain:
        return "nodes", (
            f"{nodes}, but pool {pool.name}'s NVLink domain (one ComputeDomain) holds at most "
            f"{domain} nodes (dra-driver-nvidia-gpu v0.4.1 defaultMaxNodesPerIMEXDomain); valid: "
            f"{domain} nodes or fewer"
        )
    if gpus_per_node is not None and gpus_per_node < pool.gpus_per_node:
        return "gpus_per_node", (
            f"{gpus_per_node}, but a multi-node job on pool {pool.name} has a ComputeDomain of "
            "its own and a node belongs to one ComputeDomain at a time: take all "
            f"{pool.gpus_per_node} GPUs of each node"
        )
    return None


def driver_pools(pools: Iterable[GpuPool]) -> list[GpuPool]:
    """Pools the driver's kubelet plugin serves: DRA pools (GPUs) and NVLink-domain pools
    (ComputeDomain channels; their GPUs stay with the device plugin unless they are DRA too)."""
    return [p for p in pools if p.gpu_allocation == "dra" or p.nvlink_domain_nodes is not None]


def dra_mig_profiles(pools: Iterable[GpuPool]) -> list[str]:
    """Every MIG profile a DRA pool cuts its GPUs into: one DeviceClass and one quota each."""
    return sorted({p for pool in dra_pools(pools) for p in mig_profiles_of(pool)})


def mig_profiles_of(pool: GpuPool) -> tuple[str, ...]:
    """The MIG profiles a MIG pool's GPUs are cut into (components/data/gpu_operator.py
    mig_layout_name): seven 1g slices under strategy single, the balanced three otherwise."""
    if pool.sharing.mode != "mig":
        return ()
    one, two, three = pool.mig_profiles
    return (one,) if pool.mig_strategy == "single" else (one, two, three)


def mig_class(profile: str) -> str:
    """The platform's DeviceClass for one MIG profile: the chart's one `mig.nvidia.com` class
    selects every profile, and Kueue counts devices per class."""
    return f"mig-{profile}.gpu-platform"


def mig_quota(profile: str) -> str:
    """The name the device-plugin path advertises a profile's slices by (strategy mixed)."""
    return f"nvidia.com/mig-{profile}"


def mig_class_selector(profile: str) -> str:
    """CEL that selects the driver's MIG devices of one profile: MIG devices carry `type: mig`
    and `profile: <name>` (dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/mig.go
    CommonAttributesMig), names without a domain, which are in the driver's
    (vendor/k8s.io/api/resource/v1/types.go QualifiedName there), so CEL reads them under
    `device.attributes["gpu.nvidia.com"]`, as the driver's own demo selector does
    (demo/specs/extended-resources/mig-1g-12gb.yaml)."""
    attrs = f'device.attributes["{DRIVER}"]'
    return f'device.driver == "{DRIVER}" && {attrs}.type == "mig" && {attrs}.profile == "{profile}"'


def device_class_quota(pools: Iterable[GpuPool]) -> dict[str, str]:
    """DeviceClass -> Kueue quota name, for every DeviceClass a DRA pool's claims or an NVLink
    pool's ComputeDomain channels may name; empty where no pool needs the driver. Kueue leaves
    a workload inadmissible whose claim names a class no mapping lists ("DeviceClass X is not
    mapped in DRA configuration", kueue v0.19.2 pkg/dra/claims.go). The chart's
    `mig.nvidia.com` is left out on purpose: it matches every profile, so a claim on it could
    not be charged to the profile it gets."""
    pools = list(pools)
    table = {GPU_CLASS: GPU_QUOTA} if dra_pools(pools) else {}
    for profile in dra_mig_profiles(pools):
        table[mig_class(profile)] = mig_quota(profile)
    if compute_domain_pools(pools):
        table[CHANNEL_CLASS] = CHANNEL_QUOTA
    return table


def kueue_device_class_mappings(table: dict[str, str]) -> list[dict[str, Any]]:
    """Kueue's `resources.deviceClassMappings` for the table: one mapping per quota name."""
    by_name: dict[str, list[str]] = {}
    for device_class, name in table.items():
        by_name.setdefault(name, []).append(device_class)
    return [
        {"name": name, "deviceClassNames": sorted(classes)}
        for name, classes in sorted(by_name.items())
    ]
