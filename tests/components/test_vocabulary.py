"""The platform's shared vocabulary (components/vocabulary.py): each value as its upstream
documents it, and no other component module spelling one of them again, so a name changes in
one place or not at all."""

from __future__ import annotations

import inspect

from components import vocabulary
from model.config.fabric import FabricSettings
from model.stacks import ROOT
from tests.conftest import stack_config
from tests.helpers.spelled import respelled

VOCABULARY = ROOT / "components" / "vocabulary.py"


def test_resource_names_are_the_device_plugins():
    # NVIDIA GPU Operator / k8s-device-plugin docs: GPUs are the extended resource
    # `nvidia.com/gpu`; AWS EFA device plugin (shared/FACTS.md): `vpc.amazonaws.com/efa`.
    assert vocabulary.GPU_RESOURCE == "nvidia.com/gpu"
    assert vocabulary.EFA_RESOURCE == "vpc.amazonaws.com/efa"


def test_the_rdma_resource_is_the_plugins_prefix_and_the_configured_name():
    """Network Operator 26.4.1: the RDMA shared device plugin advertises `rdma/<resourceName>`;
    the SR-IOV device plugin's resources are prefixed `nvidia.com` in the operator's
    example/crs NicClusterPolicy."""
    shared = FabricSettings(rdma_mode="shared", resource_name="rdma_shared_device")
    assert vocabulary.rdma_resource(shared) == "rdma/rdma_shared_device"
    sriov = FabricSettings(rdma_mode="sriov", resource_name="sriov_rdma")
    assert vocabulary.rdma_resource(sriov) == "nvidia.com/sriov_rdma"


def test_the_gpu_taint_and_its_tolerations():
    """Kubernetes "Taints and Tolerations": `Equal` matches key, value and effect; `Exists`
    matches the key whatever the value, as the GPU Operator's DaemonSets tolerate it
    (shared/PINS.md, `daemonsets.tolerations`: `nvidia.com/gpu`, Exists, NoSchedule)."""
    assert vocabulary.GPU_TAINT == {
        "key": "nvidia.com/gpu",
        "value": "present",
        "effect": "NoSchedule",
    }
    assert vocabulary.GPU_TOLERATION == {
        "key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule",
    }  # fmt: skip
    assert vocabulary.GPU_DAEMONSET_TOLERATION == {
        "key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule",
    }  # fmt: skip


def test_the_node_join_taint_is_a_startup_taint_and_its_toleration_matches_any_value():
    """cluster-autoscaler FAQ.md, "Startup taints", at cluster-autoscaler-1.35.0: "all taints
    with the prefix `startup-taint.cluster-autoscaler.kubernetes.io/`"; a DaemonSet that runs
    before the test tolerates the key whatever its value (Kubernetes "Taints and
    Tolerations", `Exists`)."""
    assert vocabulary.NODE_JOIN_TAINT == {
        "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
        "value": "pending",
        "effect": "NoSchedule",
    }
    assert vocabulary.NODE_JOIN_TOLERATION == {
        "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
        "operator": "Exists",
        "effect": "NoSchedule",
    }


def test_api_versions():
    # Kueue v0.19.2 CRDs (shared/crds): kueue.x-k8s.io/v1beta2; Multus' NetworkAttachmentDefinition
    # k8s.cni.cncf.io/v1; prometheus-operator's monitoring.coreos.com/v1; Kubernetes Job batch/v1;
    # JobSet v0.12.0's only served version (shared/crds/jobset.x-k8s.io/JobSet.v1alpha2.json).
    assert vocabulary.KUEUE_API == "kueue.x-k8s.io/v1beta2"
    assert vocabulary.MULTUS_API == "k8s.cni.cncf.io/v1"
    assert vocabulary.MONITORING_API == "monitoring.coreos.com/v1"
    assert vocabulary.BATCH_API == "batch/v1"
    assert vocabulary.JOBSET_API == "jobset.x-k8s.io/v1alpha2"


def test_labels():
    # Kueue pkg/controller/constants (v0.19.2): QueueLabel, WorkloadPriorityClassLabel.
    assert vocabulary.QUEUE_LABEL == "kueue.x-k8s.io/queue-name"
    assert vocabulary.PRIORITY_LABEL == "kueue.x-k8s.io/priority-class"
    # Kubernetes well-known labels: batch.kubernetes.io/job-completion-index (1.28+).
    assert vocabulary.COMPLETION_INDEX_LABEL == "batch.kubernetes.io/job-completion-index"
    # The platform's own: docs/monitoring.md's training metrics, the `rdma` network.
    assert vocabulary.METRICS_PORT_NAME == "metrics"
    assert vocabulary.METRICS_LABEL == {"gpu-platform/metrics": "training"}
    assert vocabulary.RDMA_NETWORK == "rdma"


def test_prometheus_answers_at_the_charts_service():
    """kube-prometheus-stack 88.5.3 names its Prometheus Service `<fullname>-prometheus`, port
    9090, and its Grafana Service `<release>-grafana`, with the Prometheus data source's uid
    `prometheus` (templates/_helpers.tpl, values.yaml): the platform's release is
    kube-prometheus-stack."""
    cfg = stack_config("dev")
    assert vocabulary.prometheus_service(cfg).url == (
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    )
    assert vocabulary.grafana_service(cfg) == "monitoring/kube-prometheus-stack-grafana"
    assert vocabulary.grafana_datasource_uid(cfg) == "prometheus"


def qualified_values() -> set[str]:
    """Every string of the vocabulary that is a qualified name (a resource, an API version, a
    label key): `metrics`, `rdma`, `present`, `Equal` are ordinary words that mean other things
    elsewhere (Kueue's config has a `metrics` key)."""
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)

    for name, value in vars(vocabulary).items():
        if name.isupper() and not inspect.ismodule(value):
            walk(value)
    return {v for v in found if "/" in v or "." in v}


def test_no_component_module_spells_the_vocabulary_again():
    values = qualified_values()
    assert {"nvidia.com/gpu", "kueue.x-k8s.io/v1beta2", "gpu-platform/metrics"} <= values
    assert respelled(values, ("components",), {VOCABULARY}) == []


def test_the_scan_finds_a_copy():
    """The scan reads literals exactly: a module writing the GPU resource again is found."""
    copy = ROOT / "components" / "vocabulary.py"
    assert respelled({"nvidia.com/gpu"}, ("components",), set()) == [
        f"{copy.relative_to(ROOT)}: nvidia.com/gpu"
    ]
