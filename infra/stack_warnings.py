"""What the plan warns about: config that plans fine but is not ready for a real `pulumi up`, and
changes that need a manual step. Pure functions; the program sends the config warnings through
`pulumi.warn` (so `pulumi up` shows them too) and the offline plan adds its own comparison with
the previous plan."""

from __future__ import annotations

from datetime import date
from ipaddress import IPv4Network
from typing import Any

from components.control.namespaces import job_namespaces
from infra.existing_addons import existing_addon_warnings
from model.config import PlatformConfig
from model.config.charts import chart_versions, installed_charts
from model.config.fabric import RDMA_FABRICS
from model.config.kubernetes_minor import below_eks_window
from model.config.pools import MIG_TAKES_NO_DISTRIBUTED_JOB, windowed
from model.config.scheduling import MULTI_NODE_FABRICS, ClusterQueueSettings
from model.versions import (
    CHART_KUBE_VERSIONS,
    CHARTS,
    DEFAULT_KUBERNETES_VERSION,
    END_OF_STANDARD_SUPPORT,
    MANAGED_ADDONS,
    SUPPORTED_KUBERNETES_VERSIONS,
    confirm_command,
)
from model.warning_kinds import warning

# Account ids AWS documentation uses in its examples: no one can deploy into them.
DOCUMENTATION_ACCOUNT_IDS = ("111122223333", "123456789012", "444455556666", "777788889999")
# The address blocks RFC 5737 (section 3) reserves for documentation: TEST-NET-1, -2 and -3.
# No runner or office is ever in them, so an API endpoint open only to one admits no one.
DOCUMENTATION_CIDRS = tuple(
    IPv4Network(c) for c in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
)
# How long before the end of standard support the plan starts saying so.
SUPPORT_NOTICE_DAYS = 30
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def _leaves(value: Any, path: str):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _leaves(inner, f"{path}[{i}]")
    else:
        yield path, value


def documentation_accounts(cfg: PlatformConfig) -> list[str]:
    """One warning per config value that names an AWS documentation account id."""
    found = []
    for path, value in _leaves(cfg.model_dump(mode="json"), ""):
        for account in DOCUMENTATION_ACCOUNT_IDS:
            if isinstance(value, str) and account in value:
                found.append(
                    warning(
                        "documentation-account",
                        f"gpu-platform:{path}: {value} names {account}, an AWS documentation "
                        "example account; replace it with your own before `pulumi up`",
                    )
                )
    return found


def documentation_cidrs(cfg: PlatformConfig) -> list[str]:
    """One warning per range of an AWS cluster's API access lists inside a documentation block:
    the stack plans, and after `pulumi up` neither the runner nor an admin reaches the API."""
    if cfg.provider != "aws":
        return []
    lists = {
        "public_access_cidrs": cfg.cluster.public_access_cidrs,
        "api_access_cidrs": cfg.cluster.api_access_cidrs,
    }
    return [
        warning(
            "documentation-cidr",
            f"gpu-platform:cluster.{key}[{i}]: {cidr} is in {block}, an RFC 5737 documentation "
            "range no runner or office is in; replace it with your own ranges before `pulumi up`",
        )
        for key, cidrs in lists.items()
        for i, cidr in enumerate(cidrs)
        for block in DOCUMENTATION_CIDRS
        if cidr.subnet_of(block)
    ]


def kubernetes_support(cfg: PlatformConfig, today: date) -> list[str]:
    """EKS support of the cluster's minor: extended (billed extra) or ending soon; on an
    existing cluster, a minor older than EKS serves."""
    if cfg.provider != "aws":
        return untested_minor(cfg)
    minor = cfg.cluster.kubernetes_version
    ends = END_OF_STANDARD_SUPPORT[minor]
    if ends is None:
        return []
    key = "gpu-platform:cluster.kubernetes_version"
    if today > ends:
        return [
            warning(
                "kubernetes-extended-support",
                f"{key}: {minor} left EKS standard support on {ends.isoformat()} and runs in "
                f"extended support, billed extra per cluster hour; upgrade to "
                f"{DEFAULT_KUBERNETES_VERSION} (docs/operations.md, Upgrades)",
            )
        ]
    if (ends - today).days <= SUPPORT_NOTICE_DAYS:
        return [
            warning(
                "kubernetes-support-ending",
                f"{key}: {minor} leaves EKS standard support on {ends.isoformat()}; after that "
                f"the cluster runs in extended support, billed extra, unless upgraded to "
                f"{DEFAULT_KUBERNETES_VERSION} (docs/operations.md, Upgrades)",
            )
        ]
    return []


def untested_minor(cfg: PlatformConfig) -> list[str]:
    """An existing cluster's minor below EKS's window: the config admits it down to the oldest
    minor the installed charts' kubeVersion admits (model/config/kubernetes_minor.py), but
    nothing of the platform was tested there."""
    if not below_eks_window(cfg):
        return []
    minor = cfg.cluster.kubernetes_version
    window = f"{SUPPORTED_KUBERNETES_VERSIONS[0]} to {SUPPORTED_KUBERNETES_VERSIONS[-1]}"
    charts = installed_charts(cfg)
    admitted = [
        f"{CHARTS[c].name} {CHARTS[c].version} ({CHART_KUBE_VERSIONS[c]})"
        for c in charts
        if c in CHART_KUBE_VERSIONS
    ]
    unstated = [
        f"{CHARTS[c].name} {CHARTS[c].version}" for c in charts if c not in CHART_KUBE_VERSIONS
    ]
    message = (
        f"gpu-platform:cluster.kubernetes_version: {minor} is older than the minors EKS serves "
        f"and the platform is tested on ({window}). Untested on {minor}: the charts whose "
        f"kubeVersion admits it ({', '.join(admitted) or 'none'}), those that state none "
        f"({', '.join(unstated) or 'none'}), the platform's own objects (validated only against "
        f"the Kubernetes {window} schemas) and the self-test. Run the self-test (selftest.mode: "
        'block) after `pulumi up`, and upgrade the cluster (docs/operations.md, "Using add-ons '
        'a cluster already runs")'
    )
    return [warning("kubernetes-untested-minor", message)]


def host_driver_rdma(cfg: PlatformConfig) -> list[str]:
    """GPUDirect RDMA on the nodes' own driver. The kernel side is DMA-BUF (open kernel
    modules, which NVIDIA recommends) or nvidia-peermem, and the GPU Operator loads
    nvidia-peermem only as a sidecar of the driver DaemonSet it runs (GPU Operator docs,
    "GPUDirect RDMA and GPUDirect Storage"): with `driver.enabled: false` nothing loads it.
    nvidia-peermem needs MOFED's peer-memory API in the running kernel (NVIDIA driver README,
    "GPUDirect RDMA Peer Memory Client"), which the DOCA driver container brings only after
    boot, so a host's own nvidia-peermem is an answer only where the hosts run MOFED."""
    if (
        cfg.provider != "existing"
        or cfg.gpu_operator.install_driver
        # The cluster's own operator: its driver.rdma is in the existing_addons report.
        or not cfg.installs("gpu_operator")
    ):
        return []
    rdma = [p for p in cfg.gpu_pools if p.fabric in RDMA_FABRICS]
    if not rdma:
        return []
    if not cfg.fabric.mofed_preinstalled:
        remedy = (
            "With fabric.mofed_preinstalled: false MOFED arrives with the DOCA driver container "
            "after boot, so a host's nvidia-peermem cannot register: use DMA-BUF (open kernel "
            "modules) or set gpu_operator.install_driver: true"
        )
    else:
        remedy = (
            "Load nvidia-peermem at every boot (/etc/modules-load.d/), after the hosts' MOFED, "
            "or use DMA-BUF (open kernel modules)"
        )
    message = (
        f"gpu-platform:gpu_operator.install_driver: false, and gpu-operator "
        f"{chart_versions(cfg)['gpu-operator']} loads nvidia-peermem only in its own driver "
        f"container: the GPU pools on {rdma[0].fabric} ({', '.join(p.name for p in rdma)}) get "
        f"GPUDirect RDMA only from the nodes. {remedy}; without it NCCL "
        "stages every transfer through host memory and the self-test fails the pool "
        "(docs/gpu-nodes.md, GPU Operator)"
    )
    return [warning("host-driver-rdma", message)]


def unconfirmed_addon_builds(cfg: PlatformConfig) -> list[str]:
    """Managed add-on builds no recorded listing confirms (model/versions.py): EKS refuses a
    build it does not offer only when `pulumi up` creates the add-on, after the cluster."""
    if cfg.provider != "aws":
        return []
    minor = cfg.cluster.kubernetes_version
    return [
        warning(
            "unconfirmed-addon-build",
            f"UNCONFIRMED add-on build: {addon.name} {build} (Kubernetes {minor}) is in no "
            f"listing model/versions.py records; run `{confirm_command(addon.name, minor)}`, pin "
            "a build it lists and record where in its `confirmed`, or `pulumi up` may fail "
            "creating the add-on",
        )
        for addon in MANAGED_ADDONS
        if (build := addon.versions[minor]) not in addon.confirmed
    ]


def shared_data_warnings(cfg: PlatformConfig) -> list[str]:
    """What stands behind the shared-data claim every job and the self-test mount, where the
    plan cannot see it. An existing cluster with nothing behind it is refused
    (model/config/storage.check_shared_data); an AWS stack without storage.fsx or
    storage.shared_data plans (its minimal form needs only a region and zones) but is warned,
    so that --strict holds it until FSx, a StorageClass or a claim is named or it is waived."""
    storage = cfg.storage
    shared = storage.shared_data
    if shared is not None and shared.existing_claim is not None:
        return [
            warning(
                "shared-data-claim-unchecked",
                f"gpu-platform:storage.shared_data.existing_claim: every job and the self-test "
                f"mount the claim {shared.existing_claim}, which the platform does not declare: "
                f"it must exist, ReadWriteMany and Bound, in each of "
                f"{', '.join(job_namespaces(cfg))} before their pods can start. The plan cannot "
                "read the cluster: confirm it with the kubectl commands in the plan's "
                "storage_shared_data output (docs/storage.md)",
            )
        ]
    if cfg.provider == "aws" and shared is None and storage.fsx is None:
        return [
            warning(
                "shared-data-unprovided",
                "gpu-platform:storage: no storage.fsx and no storage.shared_data, so nothing "
                "provides the shared-data claim every job and the self-test mount and checkpoint "
                f"to: their pods in {', '.join(job_namespaces(cfg))} would stay Pending. Set "
                "storage.fsx (FSx for Lustre), or storage.shared_data.storage_class (a "
                "ReadWriteMany StorageClass the cluster has, such as EFS) or "
                "storage.shared_data.existing_claim (docs/storage.md)",
            )
        ]
    return []


def mig_fabric_pools(cfg: PlatformConfig) -> list[str]:
    """One warning per MIG pool with a multi-node fabric: no distributed job runs on MIG
    slices, so the fabric (and what it costs: EFA interfaces, a placement group, RDMA NICs)
    serves no job there."""
    return [
        warning(
            "mig-fabric-pool",
            f"GPU pool {p.name}: gpu_sharing.mode mig on a pool with fabric {p.fabric} locks "
            f"out its multi-node jobs ({MIG_TAKES_NO_DISTRIBUTED_JOB}), so its {p.fabric} "
            "fabric serves no job; give the MIG slices a pool without a fabric, or keep this one "
            "whole",
        )
        for p in cfg.gpu_pools
        if p.sharing.mode == "mig" and p.fabric in MULTI_NODE_FABRICS
    ]


def cold_reservation_windows(cfg: PlatformConfig) -> list[str]:
    """One warning per windowed Capacity Block group that may stand at zero nodes: no pod asks
    for its nodes while its flavor is closed, so the warm-up tests none (the group starts at its
    desired size when the block does, EKS User Guide capacity-blocks-mng), and cluster-autoscaler
    may take them away again before the flavor opens. The block is paid whether its nodes run
    or not: keeping them saves nothing."""
    return [
        warning(
            "reservation-window-cold",
            f"gpu_node_groups {g.name}: a reservation_window on a Capacity Block whose "
            f"scaling.min_size is 0: its warm-up tests no node before the flavor opens, and the "
            "autoscaler may remove the nodes it started; the block is paid either way, so set "
            f"min_size and desired_size to its instance count (max_size {g.scaling.max_size})",
        )
        for g in windowed(cfg)
        if g.capacity == "capacity_block" and g.scaling.min_size == 0
    ]


def reachable_gpus(cfg: PlatformConfig, queue: ClusterQueueSettings, pool: str) -> int:
    """The most GPUs of `pool` the queue can hold with nothing else admitted: its nominal quota
    plus what the rest of the cohort lends (each queue all but what its lending_limit keeps),
    within its borrowing_limit (Kueue v0.19.2 pkg/cache/scheduler/resource_node.go
    `available`; every queue of the stack is in scheduling.cohort)."""
    (found,) = [p for p in cfg.gpu_pools if p.name == pool]
    lent = 0
    for other in cfg.scheduling.cluster_queues:
        if other.name != queue.name:
            nominal = other.nominal_gpus(found)
            lent += min(nominal, (other.lending_limit or {}).get(pool, nominal))
    cap = (queue.borrowing_limit or {}).get(pool)
    return queue.nominal_gpus(found) + (lent if cap is None else min(lent, cap))


def drain_waits(cfg: PlatformConfig) -> list[str]:
    """One warning per window that requeues and ClusterQueue that admits to its flavor but
    reaches no other flavor holding one of its nodes' GPUs when the drain starts: Kueue admits
    a reactivated workload only to a flavor its own queue lists (v0.19.2 pkg/scheduler/
    flavorassigner/flavorassigner.go), never to a burst worker (a MultiKueue check on some
    flavors only is refused, docs/scheduling.md), so it waits, pending, for the flavor to
    reopen. A flavor of another window counts only if that window is open then."""
    groups = windowed(cfg)
    windows = {g.name: g.reservation_window.window() for g in groups if g.reservation_window}
    found = []
    for group in groups:
        window = windows[group.name]
        if window.on_drain != "requeue":
            continue
        draining = window.transitions()["draining"]
        (pool,) = [p for p in cfg.gpu_pools if p.name == group.name]
        others = [
            p.name
            for p in cfg.gpu_pools
            if p.name != pool.name
            and (p.name not in windows or windows[p.name].phase(draining) == "open")
        ]
        for queue in cfg.scheduling.cluster_queues:
            if reachable_gpus(cfg, queue, pool.name) == 0:
                continue
            if any(reachable_gpus(cfg, queue, o) >= pool.gpus_per_node for o in others):
                continue
            found.append(
                warning(
                    "reservation-drain-waits",
                    f"gpu_node_groups {group.name}: reservation_window.on_drain requeue, but "
                    f"ClusterQueue {queue.name} reaches no other flavor with "
                    f"{pool.gpus_per_node} GPUs (one node of the pool) at "
                    f"{draining.isoformat()}: its drained workloads wait, pending, until the "
                    "flavor reopens (Kueue requeues them only to the queue's own flavors, "
                    "never to a burst worker); set on_drain: hold, or give the queue an "
                    "on-demand pool",
                )
            )
    return found


def config_warnings(cfg: PlatformConfig, today: date) -> list[str]:
    return [
        *documentation_accounts(cfg),
        *documentation_cidrs(cfg),
        *kubernetes_support(cfg, today),
        *host_driver_rdma(cfg),
        *unconfirmed_addon_builds(cfg),
        *existing_addon_warnings(cfg),
        *shared_data_warnings(cfg),
        *mig_fabric_pools(cfg),
        *cold_reservation_windows(cfg),
        *drain_waits(cfg),
    ]


def _by_name(resources: list[dict], token: str) -> dict[str, dict]:
    return {r["name"]: r for r in resources if r["type"] == token}


def capacity_block_rolls(previous: list[dict], current: list[dict]) -> list[str]:
    """Capacity Block node groups whose launch template or version changed since the previous
    plan: EKS rolls their nodes, and asks that the group's desired size be 0 during it."""
    before_lt, after_lt = _by_name(previous, LAUNCH_TEMPLATE), _by_name(current, LAUNCH_TEMPLATE)
    before_ng = _by_name(previous, NODE_GROUP)
    rolls = []
    for name, group in sorted(_by_name(current, NODE_GROUP).items()):
        if group["inputs"].get("capacityType") != "CAPACITY_BLOCK" or name not in before_ng:
            continue
        changed = sorted(
            key
            for key in {*before_lt.get(name, {}).get("inputs", {}), *after_lt[name]["inputs"]}
            if before_lt.get(name, {}).get("inputs", {}).get(key)
            != after_lt[name]["inputs"].get(key)
        )
        if before_ng[name]["inputs"].get("version") != group["inputs"].get("version"):
            changed.append("version")
        if changed:
            rolls.append(
                warning(
                    "capacity-block-roll",
                    f"node group {name} (Capacity Block): {', '.join(changed)} changed since "
                    "the previous plan, so `pulumi up` rolls its nodes; EKS asks that a Capacity "
                    "Block group's desired size be 0 during the update (docs/operations.md, "
                    "Operations)",
                )
            )
    return rolls
