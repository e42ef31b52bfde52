"""Every metric a dashboard, an alert or a ScaledObject reads is emitted by a component the stack
configures to emit it, with the labels the query reads (tests/helpers/metric_sources.py). A query on
a metric nobody exports is empty without a word: a panel with no data, an alert that never fires."""

from __future__ import annotations

import copy

import pytest
import yaml

from contract.env import TRAINKIT_PUSHGATEWAY_URL
from contract.training_metrics import IDENTITY_LABELS
from model.config import ConfigError, config_from_pulumi
from model.stacks import _encode
from plan.cli import plan_stack
from tests.conftest import STACKS, make_project, planned, stack_file_config
from tests.helpers.metric_sources import (
    configuration,
    emitted,
    problems,
    push_urls,
    queries,
    with_jobs,
)
from tests.helpers.rendered_jobs import submitted_jobs

# The Queues dashboard's "GPUs in use" query.
NS = "gpu-platform"
QUEUE_USAGE = (
    'sum by (cluster_queue) (kueue_cluster_queue_resource_usage{resource=~"nvidia.com/.*"})'
)


PUSHGATEWAY_URL = "http://prometheus-pushgateway.monitoring.svc:9091"
# The Goodput row's per-job ratio.
GOODPUT = (
    'sum by (namespace, job_name) (gpu_platform_job_productive_gpu_seconds{job="training-goodput"})'
    " / (sum by (namespace, job_name) "
    '(gpu_platform_job_allocated_gpu_seconds{job="training-goodput"}) > 0)'
)
RANKS = "max by (namespace, job_name, rank, node) (gpu_platform_training_rank_step_seconds)"


@pytest.mark.parametrize("stack", STACKS)
def test_every_query_reads_what_a_configured_component_emits(stack):
    """Beside what the stack declares, what `python -m jobs` renders on it: only a team's job
    tells where trainkit pushes its goodput."""
    plan = planned(stack)
    config = with_jobs(configuration(plan), [job for _, job in submitted_jobs(stack)])
    known, missing = emitted(config)
    found = {where: problems(expr, known, missing) for where, expr in queries(plan)}
    assert {where: p for where, p in found.items() if p} == {}


def test_every_kind_of_query_is_read():
    """Dashboards, alert rules and ScaledObjects all reach the check (dev has a GPU autoscaler,
    staging a queue one)."""
    wheres = [w for s in ("dev", "staging") for w, _ in queries(planned(s))]
    assert any(w.startswith("dashboard queues.json") for w in wheres)
    assert "alert GpuMissing" in wheres
    assert "ScaledObject llm-inference" in wheres
    assert "ScaledObject batch-workers" in wheres


def changed(stack: str, release: str, *path: str, value) -> dict:
    """The stack's configuration with one Helm value of one release set to `value` (None:
    removed)."""
    config = copy.deepcopy(configuration(planned(stack)))
    node = config["releases"][release]
    for key in path[:-1]:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return config


def test_kueue_cluster_queue_resource_gauges_need_enable_cluster_queue_resources():
    """Kueue v0.19.2 cmd/kueue/main.go passes `metrics.enableClusterQueueResources` to its
    caches as WithResourceMetrics: off, resource usage and nominal quota are never exported."""
    known, _ = emitted(configuration(planned("dev")))
    assert problems(QUEUE_USAGE, known) == []
    manager = yaml.safe_load(
        configuration(planned("dev"))["releases"]["kueue"]["managerConfig"][
            "controllerManagerConfigYaml"
        ]
    )
    assert manager["metrics"]["enableClusterQueueResources"] is True
    del manager["metrics"]["enableClusterQueueResources"]
    config = changed(
        "dev", "kueue", "managerConfig", "controllerManagerConfigYaml",
        value=yaml.safe_dump(manager),
    )  # fmt: skip
    assert problems(QUEUE_USAGE, *emitted(config)) == [
        "kueue_cluster_queue_resource_usage not emitted: kueue managerConfig "
        "metrics.enableClusterQueueResources is not true"
    ]


def test_kueue_exports_nothing_without_enable_prometheus():
    config = changed("staging", "kueue", "enablePrometheus", value=None)
    assert problems('sum(kueue_pending_workloads{cluster_queue="shared"})', *emitted(config)) == [
        "kueue_pending_workloads not emitted: "
        "kueue enablePrometheus is not true (no ServiceMonitor)"
    ]


def test_a_node_label_is_read_only_where_kube_state_metrics_allow_lists_it():
    expr = 'kube_node_labels{label_nvidia_com_device_plugin_config="mps-2"}'
    assert problems(expr, emitted(configuration(planned("dev")))[0]) == []
    config = changed("dev", "kube-prometheus-stack", "kube-state-metrics", "metricLabelsAllowlist",
                     value=None)  # fmt: skip
    assert problems(expr, *emitted(config)) == [
        "label label_nvidia_com_device_plugin_config not on ['kube_node_labels']"
    ]


def test_dcgm_pod_labels_follow_the_service_monitors_honor_labels():
    """honorLabels false (the platform's choice): the GPU user's pod is `exported_pod`; a bare
    `pod` is the exporter's own and is refused. With honorLabels true it would be the reverse."""
    known, _ = emitted(configuration(planned("dev")))
    assert problems('DCGM_FI_DEV_GPU_UTIL{exported_pod="x"}', known) == []
    assert problems('DCGM_FI_DEV_GPU_UTIL{pod="x"}', known) == [
        "label pod not on ['DCGM_FI_DEV_GPU_UTIL']"
    ]
    config = changed("dev", "gpu-operator", "dcgmExporter", "serviceMonitor", "honorLabels",
                     value=True)  # fmt: skip
    assert problems('DCGM_FI_DEV_GPU_UTIL{exported_pod="x"}', emitted(config)[0]) == [
        "label exported_pod not on ['DCGM_FI_DEV_GPU_UTIL']"
    ]


def test_a_subquery_s_range_and_step_are_no_metric_but_its_inner_metrics_are_read():
    # Prometheus docs, "Querying basics", "Subquery":
    # <instant_query> '[' <range> ':' [<resolution>] ']'.
    known = {"a:sum": {"pool"}}
    assert problems("sum by (pool) (sum_over_time(a:sum[30d:5m]))", known) == []
    assert problems("sum_over_time((a:sum and b:sum)[30d:5m])", known) == ["unknown metric b:sum"]


def test_a_misspelt_metric_and_a_label_its_metric_lacks_are_reported():
    known, _ = emitted(configuration(planned("dev")))
    assert problems("avg(DCGM_FI_DEV_GPU_UTILL)", known) == ["unknown metric DCGM_FI_DEV_GPU_UTILL"]
    assert problems("sum by (namespace) (DCGM_FI_DEV_FB_USED)", known) == [
        "label namespace not on ['DCGM_FI_DEV_FB_USED']"
    ]


def test_recipe_metrics_need_the_training_pod_monitor():
    config = copy.deepcopy(configuration(planned("dev")))
    config["pod_monitors"] = set()
    assert problems("max by (namespace, pod, recipe) (gpu_platform_training_loss)",
                    *emitted(config))[0] == (
        "gpu_platform_training_loss not emitted: no PodMonitor training-jobs"
    )  # fmt: skip


def kueue_off(stack: str) -> dict | None:
    """The shipped stack's file with Kueue off (`scheduling.enabled: false`), or None where the
    stack needs Kueue (MultiKueue, a queue-depth autoscaler) and the config refuses it off."""
    config = stack_file_config(stack)
    key = f"{NS}:scheduling"
    config[key] = {**config.get(key, {}), "enabled": False}
    try:
        config_from_pulumi({k: _encode(v)[0] for k, v in config.items()}, stack)
    except ConfigError:
        return None
    return config


KUEUE_OFF = [s for s in STACKS if kueue_off(s) is not None]


def test_some_shipped_stacks_can_run_without_kueue():
    """The class below runs over something: dev takes scheduling.enabled: false (prod no
    longer: its Capacity Block's window opens a Kueue flavor, refused without Kueue)."""
    assert {"dev"} <= set(KUEUE_OFF)
    assert "prod" not in KUEUE_OFF


@pytest.mark.parametrize("stack", KUEUE_OFF)
def test_with_kueue_off_no_query_reads_a_metric_the_stack_does_not_export(tmp_path, stack):
    """Kueue off, there is no kueue release, so no kueue_* metric: the Queues dashboard and
    the queue-backlog alert must not be declared, nor any other query on Kueue's metrics.
    Beside the plan, the jobs `python -m jobs` renders on the stack: they push the goodput."""
    root = make_project(tmp_path, {stack: kueue_off(stack)})
    plan = plan_stack(stack, root)
    config = with_jobs(configuration(plan), [job for _, job in submitted_jobs(stack)])
    known, missing = emitted(config)
    assert not any(m.startswith("kueue_") for m in known)
    found = {where: problems(expr, known, missing) for where, expr in queries(plan)}
    assert {where: p for where, p in found.items() if p} == {}
    wheres = [where for where, _ in queries(plan)]
    assert not any(w.startswith("dashboard queues.json") for w in wheres)
    assert "alert KueueQueueBacklog" not in wheres
    # What stays is still checked: the GPU fleet's panels and the GPU alerts.
    assert any(w.startswith("dashboard gpu-fleet.json") for w in wheres)
    assert "alert GpuMissing" in wheres


def test_goodput_exists_only_where_a_training_job_pushes_it_to_the_pushgateway():
    """Every stack has the Pushgateway (components/observability/pushgateway.py); trainkit's
    series are there only where the job builder hands jobs its address."""
    config = copy.deepcopy(configuration(planned("onprem")))
    config["push_urls"][TRAINKIT_PUSHGATEWAY_URL] = set()
    assert problems(GOODPUT, *emitted(config))[0] == (
        "gpu_platform_job_allocated_gpu_seconds not emitted: no training job sets "
        f"TRAINKIT_PUSHGATEWAY_URL={PUSHGATEWAY_URL} (push job training-goodput)"
    )
    config["push_urls"][TRAINKIT_PUSHGATEWAY_URL] = {PUSHGATEWAY_URL}
    known, _ = emitted(config)
    assert problems(GOODPUT, known) == []
    # Lost GPU-seconds and restarts carry the cause; the ratio's inputs do not.
    assert problems("sum by (cause) (gpu_platform_job_restarts)", known) == []
    assert problems("sum by (cause) (gpu_platform_job_allocated_gpu_seconds)", known) == [
        "label cause not on ['gpu_platform_job_allocated_gpu_seconds']"
    ]
    # No Pushgateway at all: none of it, whatever the jobs say.
    del config["releases"]["prometheus-pushgateway"]
    assert problems(GOODPUT, *emitted(config))[0] == (
        "gpu_platform_job_allocated_gpu_seconds not emitted: no prometheus-pushgateway release"
    )


def test_push_addresses_are_read_from_jobsets_too():
    """A JobSet's pods are its replicatedJobs' templates (jobset.x-k8s.io/v1alpha2)."""
    container = {"name": "trainer", "env": [{"name": TRAINKIT_PUSHGATEWAY_URL, "value": "u"}]}
    jobset = {
        "kind": "JobSet",
        "spec": {
            "replicatedJobs": [
                {"template": {"spec": {"template": {"spec": {"containers": [container]}}}}}
            ]
        },
    }
    assert push_urls([jobset])[TRAINKIT_PUSHGATEWAY_URL] == {"u"}


def test_a_training_series_names_its_job_only_through_the_pod_monitor_relabeling():
    """The straggler rules compare one job's ranks by `job_name`, which the PodMonitor copies
    from its pods' JobSet label; without the relabeling no series has it."""
    config = copy.deepcopy(configuration(planned("dev")))
    assert config["pod_monitor_labels"]["training-jobs"] == {"job_name"}
    # The goodput's grouping label: a job's step times and its goodput join on it.
    assert "job_name" in IDENTITY_LABELS
    assert problems(RANKS, emitted(config)[0]) == []
    config["pod_monitor_labels"]["training-jobs"] = set()
    assert problems(RANKS, emitted(config)[0]) == [
        "label job_name not on ['gpu_platform_training_rank_step_seconds']"
    ]


def test_a_recorded_series_carries_only_the_labels_its_rule_keeps():
    known, _ = emitted(configuration(planned("dev")))
    ratio = "gpu_platform_job:rank_step_seconds:slowest_over_median"
    assert known[ratio] == {"namespace", "job_name"}
    assert problems(f'{ratio}{{node="n"}}', known) == [f"label node not on ['{ratio}']"]
    # The goodput ratio keeps the push's grouping labels (contract/training_metrics.py), no cause.
    goodput = "gpu_platform_job:goodput:ratio"
    assert known[goodput] == {"namespace", "job_name", "team", "queue", "pool"}
    assert problems(f'{goodput}{{cause="hung"}}', known) == [f"label cause not on ['{goodput}']"]


def test_a_label_a_query_writes_itself_is_carried():
    """label_replace's destination (the Fleet health records' `pool`) is the query's own."""
    known, _ = emitted(configuration(planned("dev")))
    written = 'max by (node, pool) (label_replace(kube_node_labels, "pool", "a100", "", ""))'
    assert problems(written, known) == []
    assert problems("max by (node, pool) (kube_node_labels)", known) == [
        "label pool not on ['kube_node_labels']"
    ]


def test_taints_and_alerts_are_known_with_their_labels():
    """kube-state-metrics' kube_node_spec_taint (docs/metrics/cluster/node-metrics.md) and
    Prometheus's own ALERTS, labelled alertname, alertstate and the rules' own labels."""
    known, _ = emitted(configuration(planned("dev")))
    assert known["kube_node_spec_taint"] == {"node", "key", "value", "effect"}
    assert known["ALERTS"] == {"alertname", "alertstate", "severity"}
    assert problems('ALERTS{alertstat="firing"}', known) == ["label alertstat not on ['ALERTS']"]
