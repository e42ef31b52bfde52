"""The NVIDIA GPU Operator on every provider, and the per-node configurations the GPU pools name.

A node picks its device-plugin config by the label `nvidia.com/device-plugin.config=<key>` and
its MIG layout by `nvidia.com/mig.config=<name>`. Both the labels and the ConfigMap entries they
name come from `device_plugin_config_key` and `mig_layout_name` below, so a label can never name
a configuration the operator does not define.

Node Feature Discovery runs here (`nfd.enabled`), and must be the cluster's only NFD: the
Network Operator, where a stack runs one, must run with its own NFD off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import yaml

from components.base import PlatformComponent, plane_labels
from components.context import StackContext
from components.data.system_node_group import SYSTEM_LABELS
from components.helm import pinned_release, privileged_namespace
from components.vocabulary import (
    EFA_RESOURCE,
    GPU_NODE_DAEMONSET_TOLERATIONS,
    GPU_RESOURCE,
    TRAINING_POD_LABEL,
)
from contract.dcgm import HOSTENGINE_PORT
from model.catalog import MIG_SLICES
from model.config import GpuOperatorSettings, GpuPool
from model.config.fabric import RDMA_FABRICS
from model.config.gpu_operator import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    DEVICE_PLUGIN_LABEL,
    DEVICE_PLUGIN_OFF,
    MIG_CONFIG_LABEL,
)
from model.dra import mig_quota

# ConfigMaps the chart creates from the values below.
DEVICE_PLUGIN_CONFIGMAP = "gpu-platform-device-plugin"
MIG_PARTED_CONFIGMAP = "gpu-platform-mig-parted"
# The device-plugin entry nodes without the label get: whole GPUs.
DEFAULT_CONFIG = "default"
# The MIG layout nodes without the label get (the only default the ClusterPolicy CRD allows).
MIG_DISABLED = "all-disabled"
SHARED_MODES = {"time-slicing": "timeSlicing", "mps": "mps"}
# The Service the GPU Operator creates for its DCGM exporter, and the exporter's port.
DCGM_EXPORTER_SERVICE = "nvidia-dcgm-exporter"
DCGM_EXPORTER_PORT = 9400
# The Service the operator creates for its standalone DCGM host engine (`dcgm.enabled`): port
# 5555, internalTrafficPolicy Local (gpu-operator v26.7.0 assets/state-dcgm/0500_service.yaml).
DCGM_SERVICE = "nvidia-dcgm"
PART_OF = plane_labels("data")
# The chart's own NFD worker toleration (gpu-operator v26.7.0 values.yaml,
# node-feature-discovery.worker.tolerations), kept where the list is replaced.
CONTROL_PLANE_TOLERATION = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}

# How the operator rolls a new driver onto nodes where it installs the driver (chart
# `driver.upgradePolicy`, v26.7.0; ../shared/PINS.md "Driver upgrades"). On the AL2023 NVIDIA
# AMI none of it runs: the operator runs no driver pods there, and a driver change is an AMI
# change that the node group rolls.
DRIVER_UPGRADE_POLICY: dict[str, Any] = {
    # The controller must run for the rest to apply (`false` leaves the driver pods to their
    # own OnDelete rollout).
    "autoUpgrade": True,
    # One node at a time: a driver that fails validation stops at that node, in
    # upgrade-failed, instead of reaching the fleet.
    "maxParallelUpgrades": 1,
    "waitForCompletion": {
        # The node is cordoned first, so no new job lands there; the upgrade then waits for
        # its running training pods to end rather than evicting them: one evicted pod restarts
        # the whole job from its last checkpoint. 0 = no timeout, as long as the job runs.
        "podSelector": "=".join(TRAINING_POD_LABEL),
        "timeoutSeconds": 0,
    },
    "gpuPodDeletion": {
        # Every training pod mounts a memory-backed emptyDir as /dev/shm; without this the
        # kubectl drain filter refuses to delete it and the node stays cordoned in
        # upgrade-failed. Its contents die with the pod anyway.
        "deleteEmptyDir": True,
        # Every training pod has a controller (a Job, a JobSet's Job): a pod without one is
        # no platform pod, and stays.
        "force": False,
    },
    # No full drain: it would evict the node's non-GPU pods too, and only as a fallback when
    # GPU pod deletion failed. A failure then stays visible (upgrade-failed) instead.
    "drain": {"enable": False},
}

# --------------------------------------------------------------------------- pure builders


def device_plugin_config_key(pool: GpuPool) -> str:
    """The device-plugin ConfigMap entry a pool's nodes use."""
    sharing = pool.sharing
    if sharing.mode in SHARED_MODES:
        return f"{sharing.mode}-{sharing.replicas}"
    if sharing.mode == "mig":
        return f"mig-{pool.mig_strategy}"
    return DEFAULT_CONFIG


def mig_layout_name(pool: GpuPool) -> str | None:
    """The MIG manager layout a MIG pool's nodes use: seven 1g slices per GPU (strategy
    single: every GPU cut alike), or the balanced layout of the pool's GPU (mixed), named by
    its 1g profile because each GPU memory size has its own profiles."""
    if pool.sharing.mode != "mig":
        return None
    one_slice = pool.mig_profiles[0]
    if pool.mig_strategy == "single":
        return f"all-{one_slice}"
    return f"all-balanced-{one_slice}"


def operator_labels(pool: GpuPool) -> dict[str, str]:
    """The labels by which the GPU Operator configures a pool's nodes. A node without the
    device-plugin label gets the `default` entry (whole GPUs); one without the MIG label gets
    MIG disabled; a DRA pool's node gets no device plugin at all."""
    labels = {}
    key = device_plugin_config_key(pool)
    if pool.gpu_allocation == "dra":
        # Never the device plugin beside the DRA driver on one node (model/dra.py).
        labels[DEVICE_PLUGIN_DEPLOY_LABEL] = DEVICE_PLUGIN_OFF
    elif key != DEFAULT_CONFIG:
        labels[DEVICE_PLUGIN_LABEL] = key
    layout = mig_layout_name(pool)
    if layout is not None:
        labels[MIG_CONFIG_LABEL] = layout
    return labels


def device_plugin_config(pool: GpuPool) -> dict[str, Any]:
    """One device-plugin config file (k8s-device-plugin `api/config/v1`); with no flags and no
    sharing it hands out whole GPUs."""
    sharing = pool.sharing
    config: dict[str, Any] = {"version": "v1"}
    if sharing.mode == "mig":
        config["flags"] = {"migStrategy": pool.mig_strategy}
    if sharing.mode in SHARED_MODES:
        config["sharing"] = {
            SHARED_MODES[sharing.mode]: {
                "resources": [{"name": GPU_RESOURCE, "replicas": sharing.replicas}]
            }
        }
    return config


def device_plugin_configs(pools: Sequence[GpuPool]) -> dict[str, str]:
    """Every entry any pool's label can name, plus the default (whole GPUs), as the ConfigMap
    holds them."""
    entries: dict[str, dict[str, Any]] = {DEFAULT_CONFIG: {"version": "v1"}}
    for pool in pools:
        entries[device_plugin_config_key(pool)] = device_plugin_config(pool)
    return {key: yaml.safe_dump(entries[key], sort_keys=False) for key in sorted(entries)}


def mig_parted_config(pools: Sequence[GpuPool]) -> dict[str, Any]:
    """The MIG manager's layouts (mig-parted `version: v1`): MIG off, and for each GPU that a
    MIG pool uses, seven 1g slices and the balanced cut (two 1g, one 2g, one 3g)."""
    layouts: dict[str, Any] = {MIG_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for profiles in sorted({p.mig_profiles for p in pools if p.sharing.mode == "mig"}):
        one, two, three = profiles
        for name, devices in (
            (f"all-{one}", {one: MIG_SLICES}),
            (f"all-balanced-{one}", {one: 2, two: 1, three: 1}),
        ):
            layouts[name] = [{"devices": "all", "mig-enabled": True, "mig-devices": devices}]
    return {"version": "v1", "mig-configs": layouts}


def installs_driver(settings: GpuOperatorSettings, on_aws: bool) -> bool:
    """Whether the operator installs the nodes' driver: never on AWS, whose AL2023 NVIDIA AMI
    ships it; on an existing cluster, where the stack says the nodes lack one."""
    return settings.install_driver and not on_aws


def helm_values(
    pools: Sequence[GpuPool],
    settings: GpuOperatorSettings,
    on_aws: bool,
    host_mofed: bool = False,
) -> dict[str, Any]:
    """gpu-operator chart values for the stack's GPU pools. `host_mofed`: the nodes run their
    own MOFED / DOCA-OFED (fabric.mofed_preinstalled), which nvidia-peermem must build against."""
    rdma = any(p.fabric in RDMA_FABRICS for p in pools)
    device_plugin: dict[str, Any] = {
        "config": {
            "create": True,
            "name": DEVICE_PLUGIN_CONFIGMAP,
            "default": DEFAULT_CONFIG,
            "data": device_plugin_configs(pools),
        }
    }
    if any(p.fabric == "efa" for p in pools):
        # Device plugin v0.19.0+ turns MOFED detection on by default, which clashes with the
        # EFA device plugin on EFA nodes (AWS EKS user guide, "Manage EFA devices"). The chart
        # sets one env for every node's device plugin, so it is off cluster-wide.
        device_plugin["env"] = [{"name": "MOFED_ENABLED", "value": "false"}]
    values: dict[str, Any] = {
        # The AL2023 NVIDIA AMI ships the driver and the toolkit; on an existing cluster the
        # stack says whether the nodes have them.
        "driver": {
            "enabled": installs_driver(settings, on_aws),
            # GPUDirect RDMA (nvidia-peermem) for InfiniBand / RoCE pools.
            "rdma": {"enabled": rdma, "useHostMofed": rdma and host_mofed},
        },
        "toolkit": {"enabled": settings.install_toolkit and not on_aws},
        # The cluster's one NFD; a Network Operator runs with its own off.
        "nfd": {"enabled": True},
        # The cluster's one DCGM exporter (port 9400), scraped through the ServiceMonitor the
        # operator creates; Prometheus selects every ServiceMonitor, so it needs no extra labels.
        "dcgmExporter": {
            "enabled": True,
            "serviceMonitor": {
                "enabled": True,
                # Kept false on purpose: the exporter's own `namespace`, `pod` and `container`
                # labels (the GPU's user) then arrive as exported_namespace, exported_pod and
                # exported_container, beside the exporter pod's own. Every dashboard, rule and
                # autoscaler query reads the exported_* names.
                "honorLabels": False,
            },
            # A pod asking the exporter's Service reaches the exporter on its own node
            # (Kubernetes "Service Internal Traffic Policy"), so the self-test can check that
            # its node's exporter answers and exports this node's GPUs. Prometheus scrapes the
            # endpoints directly, so scraping is unaffected.
            "service": {"internalTrafficPolicy": "Local"},
        },
        # The standalone DCGM host engine on every GPU node, whose `dcgmi diag` the self-test
        # runs on its own node through the engine's Service (Local traffic policy, as the
        # exporter's above). Off (the chart's default) the exporter embeds its own engine,
        # which no other client can reach; on, the operator points the exporter at this one
        # (DCGM_REMOTE_HOSTENGINE_INFO=nvidia-dcgm:5555: gpu-operator v26.7.0
        # controllers/object_controls.go, TransformDCGMExporter). On AWS the node monitoring
        # agent runs an engine too (hostPort 5555), but without DCGM's CUDA plugins (its
        # Dockerfile at v1.7.0 installs only -core and -proprietary), so it cannot run the
        # PCIe and memory tests of levels 2 and 3: the operator's serves every provider.
        "dcgm": {"enabled": True},
        # One for the whole cluster (NVIDIA GPU Operator docs, "GPU Operator with MIG").
        "mig": {"strategy": settings.mig_strategy},
        "devicePlugin": device_plugin,
        # Every operand (device plugin, DCGM and its exporter, GFD, MIG manager, validator) and
        # NFD's worker, which labels the node for them, must run on a node before its node-join
        # check can pass. Each list replaces the chart's, whose entries are kept (chart
        # values.yaml: `daemonsets.tolerations`, `node-feature-discovery.worker.tolerations`).
        "daemonsets": {"tolerations": [dict(t) for t in GPU_NODE_DAEMONSET_TOLERATIONS]},
        "node-feature-discovery": {
            "worker": {
                "tolerations": [
                    dict(CONTROL_PLANE_TOLERATION),
                    *(dict(t) for t in GPU_NODE_DAEMONSET_TOLERATIONS),
                ]
            }
        },
    }
    if installs_driver(settings, on_aws):
        values["driver"]["upgradePolicy"] = DRIVER_UPGRADE_POLICY
    if any(p.sharing.mode == "mig" for p in pools):
        values["migManager"] = {
            "config": {
                "create": True,
                "name": MIG_PARTED_CONFIGMAP,
                "default": MIG_DISABLED,
                "data": {"config.yaml": yaml.safe_dump(mig_parted_config(pools), sort_keys=False)},
            }
        }
    if on_aws:
        # The operator's controller is no GPU workload: keep it on the system nodes.
        values["operator"] = {"nodeSelector": dict(SYSTEM_LABELS)}
    return values


def advertised_resources(pool: GpuPool) -> dict[str, int]:
    """Extended resources a node of the pool advertises once the GPU Operator runs: whole
    GPUs, shared replicas of them, or MIG slices; on a DRA pool, the quota names Kueue charges
    its claims to (model/dra.device_class_quota), MIG slices by profile whatever the strategy,
    since a claim names one profile's class."""
    sharing, gpus = pool.sharing, pool.gpus_per_node
    if pool.gpu_allocation == "dra" and sharing.mode == "mig" and pool.mig_strategy == "single":
        return {mig_quota(pool.mig_profiles[0]): MIG_SLICES * gpus}
    if sharing.mode == "mig" and pool.mig_strategy == "mixed":
        one, two, three = pool.mig_profiles
        return {
            f"nvidia.com/mig-{one}": 2 * gpus,
            f"nvidia.com/mig-{two}": gpus,
            f"nvidia.com/mig-{three}": gpus,
        }
    return {GPU_RESOURCE: shares_per_node(pool)}


def shares_per_node(pool: GpuPool) -> int:
    """How many pods' worth a node's GPUs are shared into, whatever names them (the device
    plugin or a DRA claim): whole GPUs, time-slicing or MPS replicas, MIG slices under strategy
    single; a mixed MIG layout's GPUs count whole, its profiles being of different sizes."""
    sharing, gpus = pool.sharing, pool.gpus_per_node
    if sharing.mode == "mig" and pool.mig_strategy == "mixed":
        return gpus
    per_gpu = {"mig": MIG_SLICES, "time-slicing": sharing.replicas, "mps": sharing.replicas}
    return gpus * per_gpu.get(sharing.mode, 1)


def pool_report(pool: GpuPool) -> dict[str, Any]:
    """What a pod scheduled onto one node of the pool can request, and the labels the node
    must carry for the GPU Operator (set by the platform on AWS, by the admin on-prem)."""
    requests: dict[str, Any] = dict(advertised_resources(pool))
    if pool.efa_interfaces:
        requests[EFA_RESOURCE] = pool.efa_interfaces
    if pool.hugepages_quantity:
        requests["hugepages-2Mi"] = pool.hugepages_quantity
    return {
        "per_node": requests,
        "max_nodes": pool.max_nodes,
        "sharing": pool.sharing.mode,
        "node_labels": operator_labels(pool),
        # What the plan's blast radius (plan/blast_radius.py) reads of the pool: which nodes are
        # its, whether a MIG change on it locks out multi-node jobs, where the MIG manager runs.
        "node_selector": dict(pool.node_selector),
        "fabric": pool.fabric,
        "mig_capable": pool.mig_profiles is not None,
    }


def dcgm_exporter_url(namespace: str) -> str:
    """The operator's DCGM exporter Service (`nvidia-dcgm-exporter`, port 9400); with the
    Local traffic policy above it answers with the caller's own node's GPUs."""
    return f"http://{DCGM_EXPORTER_SERVICE}.{namespace}.svc:{DCGM_EXPORTER_PORT}/metrics"


def dcgm_hostengine(namespace: str) -> str:
    """The operator's standalone DCGM host engine, as `dcgmi --host` takes it: through the
    Local traffic policy of its Service, the caller's own node's engine."""
    return f"{DCGM_SERVICE}.{namespace}.svc:{HOSTENGINE_PORT}"


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class GpuOperatorArgs:
    context: StackContext
    settings: GpuOperatorSettings
    pools: Sequence[GpuPool]
    on_aws: bool
    after: Sequence[pulumi.Resource] = ()
    host_mofed: bool = False


class GpuOperator(PlatformComponent):
    """The GPU Operator release in its own privileged namespace."""

    PLANE = "data"

    def __init__(
        self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        ns = args.settings.namespace
        # The driver, toolkit, MIG manager and DCGM pods need host access.
        namespace = privileged_namespace(f"{args.context.env}-ns-{ns}", ns, PART_OF, self)
        self.release = pinned_release(
            f"{args.context.env}-gpu-operator",
            "gpu-operator",
            ns,
            helm_values(args.pools, args.settings, args.on_aws, args.host_mofed),
            self.child(depends_on=[namespace, *args.after]),
            context=args.context,
        )
        self.register_outputs({"release": self.release.name})
