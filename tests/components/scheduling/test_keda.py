"""Workload autoscaling through KEDA: GPU-utilisation and queue-depth ScaledObjects, the KEDA
release as the only external-metrics API, and bad autoscaler config. The ScaledObjects are
checked against KEDA v2.20.2's schema by test_custom_resources.py and the KEDA values against
the chart's defaults by test_helm_values.py, over every stack; this file checks what they hold."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from components.scheduling.keda import (
    gpu_scaled_object,
    gpu_utilization_query,
    pod_pattern,
    queue_depth_query,
    queue_scaled_object,
)
from model.config.keda import GpuAutoscalerSettings, QueueAutoscalerSettings
from model.versions import CHARTS
from tests.conftest import STACKS, planned
from tests.helpers import crds
from tests.helpers.bad_stacks import assert_refused, aws, case
from tests.helpers.tools import promtool

RELEASE = "kubernetes:helm.sh/v3:Release"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
# The shared contract of issue 9: kube-prometheus-stack released under its own name in
# `monitoring` serves Prometheus at this address.
PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def scaled_objects(stack: str) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in planned(stack).of_type(SCALED_OBJECT)}


# ----------------------------------------------------------------------------- defaults


def test_gpu_autoscaler_defaults_are_the_source_documents():
    # Issue 9 ("GPU HPAs ... defaults from the source documents: min 2, max 10, target 70 %",
    # "scale-down stabilisation 300 s").
    gpu = GpuAutoscalerSettings(name="serve")
    assert (gpu.min_replicas, gpu.max_replicas, gpu.target_utilization) == (2, 10, 70)
    assert gpu.scale_down_stabilization_seconds == 300
    assert gpu.kind == "Deployment"


def test_queue_autoscaler_defaults_are_the_seed_policy():
    # Issue 9, the seed's queue policy: queue length target 10, scale out by 2, cooldown 300 s.
    queue = QueueAutoscalerSettings(name="workers", cluster_queue="shared")
    assert queue.queue_length_target == 10
    assert queue.scale_up_pods == 2
    assert queue.cooldown_seconds == 300
    assert queue.scale_down_stabilization_seconds == 300


# ------------------------------------------------------------------------------ objects


def test_gpu_scaled_object_scales_its_deployment_on_its_pods_gpu_utilisation():
    obj = gpu_scaled_object(GpuAutoscalerSettings(name="serve"), "training", PROMETHEUS)
    spec = obj["spec"]
    assert obj["apiVersion"] == "keda.sh/v1alpha1"
    assert obj["metadata"] == {"name": "serve", "namespace": "training"}
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "serve"}
    assert spec["scaleTargetRef"] == target
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 10)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    # Value: the HPA applies ceil(current × average / target) itself; AverageValue would divide
    # the average by the replica count (KEDA docs, "Scaling Deployments": metricType).
    assert trigger["metricType"] == "Value"
    assert trigger["metadata"] == {
        "serverAddress": PROMETHEUS,
        "query": 'avg(avg by (exported_pod) (DCGM_FI_DEV_GPU_UTIL{exported_namespace="training", '
        'exported_pod=~"serve-[a-z0-9]+-[a-z0-9]+"}))',
        "threshold": "70",
    }
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] == {
        "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
        "scaleDown": {"stabilizationWindowSeconds": 300},
    }
    assert crds.errors(obj) == []


def test_queue_scaled_object_adds_a_worker_per_ten_pending_two_at_a_time():
    scaler = QueueAutoscalerSettings(name="workers", cluster_queue="shared")
    obj = queue_scaled_object(scaler, "training", PROMETHEUS)
    spec = obj["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (0, 10)
    assert spec["cooldownPeriod"] == 300
    (trigger,) = spec["triggers"]
    # AverageValue: desired replicas = ceil(pending / 10), one worker per 10 pending workloads.
    assert trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["query"] == 'sum(kueue_pending_workloads{cluster_queue="shared"})'
    assert trigger["metadata"]["threshold"] == "10"
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"]["policies"] == [{"type": "Pods", "value": 2, "periodSeconds": 60}]
    assert behavior["scaleDown"] == {"stabilizationWindowSeconds": 300}
    assert crds.errors(obj) == []


@pytest.mark.parametrize(
    ("kind", "pod", "matches"),
    [
        ("Deployment", "serve-7d9f8c6b5-x2k4q", True),
        # Another Deployment whose name starts with the target's.
        ("Deployment", "serve-canary-7d9f8c6b5-x2k4q", False),
        ("StatefulSet", "serve-0", True),
        ("StatefulSet", "serve-backup-0", False),
    ],
)
def test_the_pod_pattern_matches_the_targets_pods_only(kind, pod, matches):
    # PromQL regex matchers are anchored at both ends, as fullmatch is.
    assert bool(re.fullmatch(pod_pattern(kind, "serve"), pod)) is matches


# ------------------------------------------------------------------------------ queries

# PINS.md, "Monitoring and autoscaling": the DCGM exporter's dcp-metrics-included.csv, with the
# pod labels as Prometheus keeps them under honorLabels: false; and Kueue v0.19.2's
# pkg/metrics/metrics.go: kueue_pending_workloads{cluster_queue, status}.
KNOWN_LABELS = {
    "DCGM_FI_DEV_GPU_UTIL": {"exported_namespace", "exported_pod", "exported_container", "gpu",
                             "UUID", "modelName", "Hostname"},
    "kueue_pending_workloads": {"cluster_queue", "status"},
}  # fmt: skip
QUERIES = [
    gpu_utilization_query("training", "Deployment", "serve"),
    gpu_utilization_query("team-a", "StatefulSet", "serve"),
    queue_depth_query("shared"),
]


@pytest.mark.parametrize("query", QUERIES)
def test_queries_read_only_metrics_and_labels_that_are_exported(query):
    selectors = re.findall(r"([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}", query)
    assert selectors
    for metric, matchers in selectors:
        assert metric in KNOWN_LABELS, metric
        labels = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*=~?", matchers))
        assert labels <= KNOWN_LABELS[metric], labels - KNOWN_LABELS[metric]
    for grouping in re.findall(r"by \(([^)]*)\)", query):
        assert {g.strip() for g in grouping.split(",")} <= set().union(*KNOWN_LABELS.values())


def test_every_query_of_every_stack_parses_with_promtool(tmp_path):
    shipped = [
        so["spec"]["triggers"][0]["metadata"]["query"]
        for stack in STACKS
        for so in scaled_objects(stack).values()
    ]
    assert shipped, "no stack ships an autoscaler: nothing was parsed"
    rules = [{"record": f"keda:query_{i}", "expr": q} for i, q in enumerate(QUERIES + shipped)]
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "keda", "rules": rules}]}))
    run = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_promtool_refuses_a_broken_query(tmp_path):
    """The check above can fail: an unbalanced query is refused."""
    path = tmp_path / "broken.yaml"
    rule = {"record": "keda:broken", "expr": 'avg(DCGM_FI_DEV_GPU_UTIL{gpu="0"}'}
    path.write_text(yaml.safe_dump({"groups": [{"name": "keda", "rules": [rule]}]}))
    run = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True)
    assert run.returncode != 0


# ------------------------------------------------------------------------------ stacks


@pytest.mark.parametrize("stack", STACKS)
def test_keda_is_the_only_external_metrics_api(stack):
    """Only one APIService may serve v1beta1.external.metrics.k8s.io; KEDA's metrics server
    registers it (keda chart 2.20.2, templates/metrics-server/apiservice.yaml), as
    prometheus-adapter's chart would."""
    plan = planned(stack)
    charts = [r.inputs["chart"] for r in plan.of_type(RELEASE)]
    registering = [c for c in charts if c.rsplit("/", 1)[-1] in ("keda", "prometheus-adapter")]
    assert registering == ["keda"], charts
    api_services = [
        o["metadata"]["name"] for o in plan.kubernetes_objects() if o["kind"] == "APIService"
    ]
    assert "v1beta1.external.metrics.k8s.io" not in api_services


def test_keda_is_pinned_to_the_release_its_schemas_come_from():
    # shared/PINS.md "Charts" and shared/crds/README.md: kedacore/keda v2.20.2.
    assert (CHARTS["keda"].repository, CHARTS["keda"].version) == (
        "https://kedacore.github.io/charts",
        "2.20.2",
    )
    assert "| kedacore/keda | v2.20.2 |" in (crds.CRDS / "README.md").read_text()


def test_kueue_exports_the_queue_depth_the_scalers_read(stack_plan):
    for release in stack_plan.of_type(RELEASE):
        if release.inputs["chart"].endswith("/kueue"):
            # kueue chart 0.19.2: enablePrometheus (default false) creates the ServiceMonitor
            # (templates/prometheus/monitor.yaml).
            assert release.inputs["values"]["enablePrometheus"] is True


def test_dev_ships_an_example_gpu_autoscaler_and_the_plan_lists_it():
    so = scaled_objects("dev")["llm-inference"]
    assert so["metadata"]["namespace"] == "training"
    assert so["spec"]["triggers"][0]["metadata"]["serverAddress"] == PROMETHEUS
    report = planned("dev").outputs["workload_autoscalers"]["training/llm-inference"]
    assert report["target"] == "Deployment training/llm-inference"
    assert (report["min"], report["max"]) == (2, 10)
    assert report["threshold"] == "70 (Value)"


def test_staging_ships_an_example_queue_autoscaler_and_the_plan_lists_it():
    so = scaled_objects("staging")["batch-workers"]
    query = so["spec"]["triggers"][0]["metadata"]["query"]
    assert query == 'sum(kueue_pending_workloads{cluster_queue="shared"})'
    report = planned("staging").outputs["workload_autoscalers"]["training/batch-workers"]
    assert (report["target"], report["min"], report["max"]) == (
        "Deployment training/batch-workers",
        0,
        10,
    )


# ---------------------------------------------------------------------------- bad input

W = "gpu-platform:workload_autoscaling"


def gpu(**fields) -> dict:
    return aws(workload_autoscaling={"gpu": [{"name": "serve", **fields}]})


def queue(**fields) -> dict:
    return aws(workload_autoscaling={"queue": [{"name": "workers", **fields}]})


BAD = [
    case(gpu(min_replicas=5, max_replicas=3), f"{W}.gpu[0].min_replicas", "5",
         "no larger than max_replicas", id="min-above-max"),
    case(gpu(target_utilization=0), f"{W}.gpu[0].target_utilization", "0",
         "greater than or equal to 1", id="utilisation-zero"),
    case(gpu(target_utilization=101), f"{W}.gpu[0].target_utilization", "101",
         "less than or equal to 100", id="utilisation-above-100"),
    case(gpu(kind="Job"), f"{W}.gpu[0].kind", "Job", "Deployment or StatefulSet", id="a-job"),
    case(gpu(kind="DaemonSet"), f"{W}.gpu[0].kind", "DaemonSet", "Deployment, StatefulSet",
         id="a-daemonset"),
    case(queue(cluster_queue="nope"), f"{W}.queue[0].cluster_queue", "nope", "shared",
         id="unknown-cluster-queue"),
    case(aws(workload_autoscaling={"gpu": [{"name": "serve"}],
                                   "queue": [{"name": "serve", "cluster_queue": "shared"}]}),
         f"{W}.queue[0].name", "serve", "give it one", id="two-autoscalers-one-target"),
    # The default namespace written out is still the same workload.
    case(aws(workload_autoscaling={"gpu": [{"name": "serve"},
                                           {"name": "serve", "namespace": "training"}]}),
         f"{W}.gpu[1].name", "serve", "give it one", id="same-target-default-namespace"),
    case(gpu(min_replicas=0), f"{W}.gpu[0].min_replicas", "0", "give 1 or more",
         id="gpu-autoscaler-at-zero"),
    case(aws(workload_autoscaling={"enabled": False, "gpu": [{"name": "serve"}]}),
         f"{W}.enabled", "false", "set it true", id="autoscalers-without-keda"),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_bad_autoscaler_exits_2_naming_the_key(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
