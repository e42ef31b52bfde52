"""The node series of kube-state-metrics and the EKS node monitoring agent that the platform's
rules read to find a pool's nodes and their health, and the job every node's self-test pushes
under: the alerts (alerts.py), the fleet's failure rate (fleet_health.py) and the pools'
baselines (baseline.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from components.data.gpu_operator import advertised_resources, device_plugin_config_key
from components.vocabulary import JOB_NAME_LABEL, JOBSET_NAME_LABEL

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.pools import GpuPool

# The EKS node monitoring agent's conditions (EKS User Guide, "Detect node health issues":
# node conditions reported by the agent).
EKS_AGENT_CONDITIONS = (
    "AcceleratedHardwareReady",
    "ContainerRuntimeReady",
    "KernelReady",
    "NetworkingReady",
    "StorageReady",
)

# kube-state-metrics writes an extended resource's name with every character outside
# [a-zA-Z0-9_] turned into `_` (nvidia.com/gpu: `nvidia_com_gpu`; nvidia.com/mig-1g.10gb:
# `nvidia_com_mig_1g_10gb`). What the device plugin advertises, per node: whole GPUs, shared
# replicas of them, or MIG slices; what a pod requests of them.
GPU_RESOURCES = 'resource=~"nvidia_com_gpu|nvidia_com_mig_.+"'

# What every self-test run pushes (the contract with bootstrap/selftest), under this job; the
# Pushgateway's ServiceMonitor keeps the pushed `job` (honorLabels true).
SELFTEST_JOB = 'job="gpu-platform-selftest"'

# The pod labels the rules read (kube-state-metrics exports no other on kube_pod_labels): the
# JobSet's name on its pods (jobset pkg/constants JobSetNameKey) and the Job controller's
# (Kubernetes "Jobs", batch.kubernetes.io/job-name): GpuIdle and the team cost rules name a
# pod's job by them.
POD_LABELS_READ = (JOB_NAME_LABEL, JOBSET_NAME_LABEL)


def ksm_label(key: str) -> str:
    """A node's or a pod's label as kube-state-metrics names it on `kube_node_labels` and
    `kube_pod_labels`: `label_<key>`, every character outside [a-zA-Z0-9_] turned into `_`
    (kube-state-metrics internal/store/utils.go, sanitizeLabelName)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def pool_nodes(labels: dict[str, str]) -> str:
    """The kube_node_labels series of the nodes that carry every one of `labels`."""
    match = ", ".join(f'{ksm_label(k)}="{v}"' for k, v in sorted(labels.items()))
    return f"kube_node_labels{{{match}}}"


def by_pool(expr: str, pools: Iterable[GpuPool]) -> str:
    """`expr`'s series of each pool's nodes, labelled with the pool's name as `pool`: one term a
    pool, joined with `or` (a node belongs to one pool, so no series is dropped)."""
    return " or ".join(
        f'label_replace({expr} and on(node) {pool_nodes(p.node_selector)}, "pool", "{p.name}", '
        '"", "")'
        for p in pools
    )


def devices_per_gpu(cfg: PlatformConfig) -> dict[str, int]:
    """Device-plugin config key -> devices a node advertises per physical GPU under it (the
    pools' advertised resources: replicas when shared, MIG slices when cut)."""
    return {
        device_plugin_config_key(pool): sum(advertised_resources(pool).values())
        // pool.gpus_per_node
        for pool in cfg.gpu_pools
    }


def as_hostname(expr: str) -> str:
    """`expr`'s series with a `Hostname` label copied from `node`: the label the alerts'
    descriptions name a node by, as the DCGM exporter's series carry it."""
    return f'label_replace({expr}, "Hostname", "$1", "node", "(.+)")'
