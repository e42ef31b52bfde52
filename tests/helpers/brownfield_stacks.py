"""Brownfield fixture stacks (issue 38): an existing Kubernetes 1.33 cluster that runs its own GPU
Operator, Network Operator, Kueue and kube-prometheus-stack, the last under another release name
in another namespace, with its shared storage on an NFS-like ReadWriteMany StorageClass, or on a
claim the admin made. Every value the platform must read from the stack differs from the
default it would otherwise assume (STYLE.md §14), so a name the code fixes fails here."""

from __future__ import annotations

import copy
import functools
import tempfile
from pathlib import Path

from model.config import PlatformConfig
from model.stacks import stack_config
from plan.model import Plan
from tests.conftest import make_project, project_plan, stack_file_config
from tests.helpers.bad_stacks import NS
from tests.helpers.shared_data import RWX_CLASS

BROWNFIELD_STACK = "brownfield"
CLAIM_STACK = "brownclaim"
MONITORING_NAMESPACE = "observability"
# kube-prometheus-stack 88.5.3 released as `monitoring`: the release name does not hold the
# chart's, so the chart's fullname is `monitoring-kube-prometheus-stack` cut to 26 characters,
# `monitoring-kube-prometheus`, and Prometheus's Service `<fullname>-prometheus`
# (templates/_helpers.tpl, templates/prometheus/service.yaml); the grafana subchart names its
# Service `<release>-grafana` (charts/grafana/templates/_helpers.tpl). The admin moved
# Prometheus's port (prometheus.service.port) and named Grafana's data source.
PROMETHEUS_SERVICE = "monitoring-kube-prometheus-prometheus"
PROMETHEUS_PORT = 9095
GRAFANA_SERVICE = "monitoring-grafana"
DATASOURCE_UID = "prom-main"
EXISTING_CLAIM = "datasets-rwx"


def _config() -> dict:
    onprem = stack_file_config("onprem")
    return {
        f"{NS}:provider": "existing",
        f"{NS}:existing": {
            "name": "brown-h100",
            "kubeconfig_path": "~/.kube/brown.yaml",
            "gpu_pools": [
                {
                    "name": "h100",
                    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                    "gpu_model": "H100",
                    "gpu_memory_gib": 80,
                    "gpus_per_node": 8,
                    "nodes": 4,
                    "fabric": "roce",
                }
            ],
            "addons": {
                "gpu_operator": "existing",
                "network_operator": "existing",
                "kube_prometheus_stack": "existing",
                "kueue": "existing",
            },
            "kube_prometheus_stack": {
                "prometheus_service": PROMETHEUS_SERVICE,
                "prometheus_port": PROMETHEUS_PORT,
                "grafana_service": GRAFANA_SERVICE,
                "grafana_datasource_uid": DATASOURCE_UID,
            },
            # The cluster had the training and the team's namespace before the platform came.
            "namespaces": ["training", "vision"],
        },
        f"{NS}:cluster": {"kubernetes_version": "1.33"},
        f"{NS}:namespaces": {"monitoring": MONITORING_NAMESPACE},
        # A DGX H100: two 56-core Xeon 8480C (224 threads) and 2 TB of memory (NVIDIA DGX H100
        # datasheet).
        f"{NS}:scheduling": {
            "flavors": [{"pool": "h100", "cpus_per_node": 224, "memory_gib_per_node": 2048}],
            "teams": [{"name": "vision"}],
        },
        f"{NS}:fabric": onprem[f"{NS}:fabric"],
        f"{NS}:storage": {"shared_data": {"storage_class": RWX_CLASS, "size_gib": 2048}},
        f"{NS}:workload_autoscaling": {"gpu": [{"name": "llm-inference"}]},
        f"{NS}:selftest": {
            "nodes": 2,
            "schedule": {"cron": "0 */4 * * *"},
            "image": onprem[f"{NS}:selftest"]["image"],
        },
    }


def _claim_config() -> dict:
    config = copy.deepcopy(_config())
    config[f"{NS}:storage"] = {"shared_data": {"existing_claim": EXISTING_CLAIM}}
    return config


def _stacks() -> dict[str, dict]:
    return {BROWNFIELD_STACK: _config(), CLAIM_STACK: _claim_config()}


@functools.cache
def _root() -> Path:
    return make_project(Path(tempfile.mkdtemp(prefix="brownfield-")), _stacks())


@functools.cache
def brownfield_plan(stack: str = BROWNFIELD_STACK) -> Plan:
    return project_plan(stack, _stacks())


@functools.cache
def brownfield_config(stack: str = BROWNFIELD_STACK) -> PlatformConfig:
    return stack_config(stack, _root())


BROWNFIELD_STACKS = (BROWNFIELD_STACK, CLAIM_STACK)
