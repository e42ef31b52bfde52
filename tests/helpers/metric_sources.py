"""What each metric source emits, as the stack configures it, and what each query reads.

A query on a metric nobody exports stays empty without a word: a dashboard panel shows "No data",
an alert never fires, a ScaledObject never scales. A metric exists only where a component emits
it *and is configured to*: Kueue exports nothing without `enablePrometheus`, and its ClusterQueue
resource gauges only with `metrics.enableClusterQueueResources`; kube-state-metrics exports a
node label only when allow-listed. `configuration(plan)` reads those settings from what the
stack declares (Helm release values, the PodMonitor), `emitted()` turns them into metric ->
labels, and `problems()` names every metric or label a query reads that is not there, with the
setting that would emit it.

Sources, at the pinned versions (../shared/PINS.md):
- DCGM exporter, GPU Operator v26.7.0: the counters of its default `dcp-metrics-included.csv`
  (PINS.md, "Monitoring and autoscaling"); labels gpu, UUID, pci_bus_id, device, modelName,
  Hostname, GPU_I_PROFILE / GPU_I_ID under MIG, and the GPU user's pod, container and namespace,
  which arrive as exported_* when the ServiceMonitor keeps honorLabels false (FACTS.md,
  "Monitoring"). Chart defaults: dcgmExporter.enabled and .serviceMonitor.enabled true.
- Kueue v0.19.2, pkg/metrics/metrics.go: kueue_pending_workloads{cluster_queue, status,
  replica_role}, kueue_admitted_active_workloads{cluster_queue, replica_role};
  kueue_cluster_queue_resource_usage and kueue_cluster_queue_nominal_quota{cohort,
  cluster_queue, flavor, resource, replica_role} only with the manager config's
  `metrics.enableClusterQueueResources: true` (cmd/kueue/main.go: WithResourceMetrics). The
  chart creates its ServiceMonitor only with `enablePrometheus: true` (default false).
- kube-state-metrics (kube-prometheus-stack 88.5.3, subchart 8.4.0, on by default through
  `kubeStateMetrics.enabled`): kube_node_status_capacity{node, resource, unit},
  kube_node_status_allocatable{node, resource, unit},
  kube_node_status_condition{node, condition, status}, kube_node_created{node},
  kube_node_spec_taint{node, key, value, effect} (one series per taint the node carries, on by
  default: kube-state-metrics docs/metrics/cluster/node-metrics.md, STABLE),
  kube_node_labels{node} plus
  `label_<key>` for each node label key in `--metric-labels-allowlist` (chart value
  `metricLabelsAllowlist`, entries `nodes=[k1,k2]`), every character outside [a-zA-Z0-9_] of
  the key turned into `_` (kube-state-metrics internal/store/utils.go, sanitizeLabelName); and
  of pods (docs/metrics/workload/pod-metrics.md, internal/store/pod.go: every pod series has
  namespace, pod, uid): kube_pod_container_resource_requests{container, node, resource, unit},
  kube_pod_status_phase{phase}, kube_pod_labels with `label_<key>` for each pod label key in an
  allow-list entry `pods=[k1,k2]`.
- The training recipes and teams' scripts (bootstrap/trainkit/metrics.py), each series labelled
  `recipe`, scraped by the platform's PodMonitor `training-jobs`, which adds the pod's
  `namespace` and `pod`, and the label each of its relabelings targets (`job_name`, the pod's
  JobSet). Beside them each node's local rank 0 serves every rank's step time,
  `RANK_STEP_SECONDS{rank, node}` (contract/training_metrics.py).
- trainkit's goodput (contract/training_metrics.py: GOODPUT_SERIES, grouped by IDENTITY_LABELS,
  lost GPU-seconds and restarts by `cause`), pushed to the Pushgateway under job
  `training-goodput` by every job the builder gives TRAINKIT_PUSHGATEWAY_URL.
- The Pushgateway (prometheus-pushgateway chart 3.8.0) holds what the self-test pushes (the
  contract with bootstrap/selftest): gpu_platform_selftest_check_status{check, node, status},
  _last_run_timestamp_seconds{node}, _figure and _figure_floor{check, node, gpu, unit}, under
  job `gpu-platform-selftest`, and its own push_time_seconds{node} per group. They exist only
  where a self-test Job or CronJob is told the Pushgateway's address (SELFTEST_PUSHGATEWAY_URL)
  and the chart's ServiceMonitor is on (`serviceMonitor.enabled`, default false). The scrape
  adds namespace, service, pod, endpoint, container; it keeps the pushed `job` only with
  `serviceMonitor.honorLabels: true` (Prometheus docs, `honor_labels`: otherwise it is renamed
  `exported_job`).
- The stack's own recording rules (the PrometheusRule's `record`s), labelled by their outermost
  aggregation's `by (...)`, and ALERTS{alertname, alertstate, <the alert's labels>}, which
  Prometheus keeps for each of its alerts while pending or firing (Prometheus docs, "Alerting
  rules", "Inspecting alerts during runtime"); the labels of an alert's expression are left out,
  each alert's own.
Prometheus picks other releases' ServiceMonitors and PodMonitors only with
`prometheusSpec.{serviceMonitor,podMonitor}SelectorNilUsesHelmValues: false`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from contract.env import SELFTEST_PUSHGATEWAY_URL, TRAINKIT_PUSHGATEWAY_URL
from contract.training_metrics import (
    GOODPUT_PUSH_JOB,
    GOODPUT_SERIES,
    IDENTITY_LABELS,
    LOST_GPU_SECONDS,
    RANK_STEP_SECONDS,
    RESTARTS,
)
from plan.model import Plan

RELEASE = "kubernetes:helm.sh/v3:Release"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
JOB_KINDS = (
    "kubernetes:batch/v1:Job",
    "kubernetes:batch/v1:CronJob",
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
)
PUSHGATEWAY = "prometheus-pushgateway"
PUSH_URL_ENV = SELFTEST_PUSHGATEWAY_URL
TRAINING_MONITOR = "training-jobs"

DCGM_METRICS = [
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
]
DCGM_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}
DCGM_LABELS |= {"GPU_I_PROFILE", "GPU_I_ID"}
DCGM_POD_LABELS = ("namespace", "pod", "container")
KUEUE_QUEUE_METRICS = {
    "kueue_pending_workloads": {"cluster_queue", "status", "replica_role"},
    "kueue_admitted_active_workloads": {"cluster_queue", "replica_role"},
}
KUEUE_RESOURCE_LABELS = {"cohort", "cluster_queue", "flavor", "resource", "replica_role"}
KUEUE_RESOURCE_METRICS = ["kueue_cluster_queue_resource_usage", "kueue_cluster_queue_nominal_quota"]
NODE_METRICS = {
    "kube_node_created": {"node"},
    "kube_node_status_capacity": {"node", "resource", "unit"},
    "kube_node_status_allocatable": {"node", "resource", "unit"},
    "kube_node_status_condition": {"node", "condition", "status"},
    "kube_node_spec_taint": {"node", "key", "value", "effect"},
}
POD_SERIES_LABELS = {"namespace", "pod", "uid"}
POD_METRICS = {
    "kube_pod_container_resource_requests": POD_SERIES_LABELS
    | {"container", "node", "resource", "unit"},
    "kube_pod_status_phase": POD_SERIES_LABELS | {"phase"},
}
RECIPE_METRICS = [
    "gpu_platform_training_step",
    "gpu_platform_training_loss",
    "gpu_platform_training_step_seconds",
    "gpu_platform_training_samples_per_second",
    "gpu_platform_training_gpu_memory_bytes",
]
RECIPE_LABELS = {"recipe", "namespace", "pod"}
TRAINKIT_METRICS = {RANK_STEP_SECONDS: {"rank", "node", "namespace", "pod"}}
GOODPUT_METRICS = {
    metric: set(IDENTITY_LABELS) | ({"cause"} if metric in (LOST_GPU_SECONDS, RESTARTS) else set())
    for metric in GOODPUT_SERIES
}
SELFTEST_METRICS = {
    "gpu_platform_selftest_check_status": {"check", "node", "status"},
    "gpu_platform_selftest_last_run_timestamp_seconds": {"node"},
    "gpu_platform_selftest_figure": {"check", "node", "gpu", "unit"},
    "gpu_platform_selftest_figure_floor": {"check", "node", "gpu", "unit"},
    # The Pushgateway's own, on every group at each push: the grouping labels (Pushgateway
    # README, "About timestamps").
    "push_time_seconds": {"node"},
}
SCRAPE_LABELS = {"namespace", "service", "pod", "endpoint", "container"}


# ------------------------------------------------------------------------ configuration


def configuration(plan: Plan) -> dict[str, Any]:
    """What the stack declares that decides which metrics exist: each Helm release's values by
    chart name, and the names of its PodMonitors."""
    releases = plan.of_type(RELEASE)
    return {
        "releases": {r.inputs["name"]: r.inputs["values"] for r in releases},
        "namespaces": {r.inputs["name"]: r.inputs["namespace"] for r in releases},
        "pod_monitors": {r.inputs["metadata"]["name"] for r in plan.of_type(POD_MONITOR)},
        "pod_monitor_labels": {
            r.inputs["metadata"]["name"]: {
                relabel["targetLabel"]
                for endpoint in r.inputs["spec"]["podMetricsEndpoints"]
                for relabel in endpoint.get("relabelings", [])
                if relabel.get("action", "replace") == "replace"
            }
            for r in plan.of_type(POD_MONITOR)
        },
        "push_urls": push_urls([r.inputs for kind in JOB_KINDS for r in plan.of_type(kind)]),
        "records": {
            rule["record"]: kept_labels(rule["expr"])
            for r in plan.of_type(PROMETHEUS_RULE)
            for group in r.inputs["spec"]["groups"]
            for rule in group["rules"]
            if "record" in rule
        },
        "alerts": {
            rule["alert"]: set(rule.get("labels", {}))
            for r in plan.of_type(PROMETHEUS_RULE)
            for group in r.inputs["spec"]["groups"]
            for rule in group["rules"]
            if "alert" in rule
        },
    }


def push_urls(jobs: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Environment variable -> the values the jobs' containers give it, for the two push
    addresses: the self-test's and trainkit's."""
    found: dict[str, set[str]] = {SELFTEST_PUSHGATEWAY_URL: set(), TRAINKIT_PUSHGATEWAY_URL: set()}
    for obj in jobs:
        for pod in _pod_specs(obj):
            for e in (e for c in pod["containers"] for e in c.get("env", [])):
                if e["name"] in found and "value" in e:
                    found[e["name"]].add(e["value"])
    return found


def with_jobs(config: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The configuration with the push addresses of jobs that are not in the plan: what
    `python -m jobs` renders (tests/helpers/rendered_jobs.submitted_jobs)."""
    rendered = push_urls(jobs)
    urls = {env: config["push_urls"].get(env, set()) | rendered[env] for env in rendered}
    return {**config, "push_urls": urls}


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj["spec"]
    if obj["kind"] == "JobSet":
        return [rj["template"]["spec"]["template"]["spec"] for rj in spec["replicatedJobs"]]
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return [spec["template"]["spec"]]


def kept_labels(expr: str) -> set[str]:
    """The labels a recorded series keeps: its outermost aggregation's `by (...)`."""
    found = re.search(r"\bby\s*\(([^)]*)\)", expr)
    return {label.strip() for label in found.group(1).split(",")} if found else set()


# label_replace(v, "dst", "replacement", "src", "regex") (PromQL functions): its last four
# arguments are strings, the first of them the label it writes.
LABEL_REPLACE_DST = re.compile(
    r',\s*"([A-Za-z_][A-Za-z0-9_]*)"(?:\s*,\s*"(?:[^"\\]|\\.)*"){3}\s*\)'
)


def _written_labels(expr: str) -> set[str]:
    """Labels a query writes itself (label_replace's destination): carried whatever it reads."""
    return set(LABEL_REPLACE_DST.findall(expr))


def _selects(kps: dict[str, Any] | None, kind: str) -> bool:
    spec = (kps or {}).get("prometheus", {}).get("prometheusSpec", {})
    return spec.get(f"{kind}SelectorNilUsesHelmValues", True) is False


def _unscraped(
    kps: dict[str, Any] | None, release: dict[str, Any] | None, name: str, off: str | None
) -> str | None:
    """Why Prometheus never scrapes the ServiceMonitor of release `name`: absent, switched off
    (`off`, read from the release), or outside what Prometheus selects; None when it scrapes."""
    if release is None:
        return f"no {name} release"
    if off is not None:
        return off
    return (
        None
        if _selects(kps, "serviceMonitor")
        else "Prometheus ignores other releases' ServiceMonitors"
    )


def _node_label(key: str) -> str:
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def _allowlisted_labels(ksm: dict[str, Any], kind: str = "nodes") -> set[str]:
    keys: set[str] = set()
    for entry in ksm.get("metricLabelsAllowlist", []):
        resource, _, listed = entry.partition("=")
        if resource == kind:
            keys |= {k.strip() for k in listed.strip("[]").split(",") if k.strip()}
    return keys


def emitted(config: dict[str, Any]) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Metric -> labels for every metric the configuration emits and Prometheus scrapes, and
    metric -> why not for the known ones it does not."""
    releases = config["releases"]
    kps = releases.get("kube-prometheus-stack")
    found: dict[str, set[str]] = {}
    missing: dict[str, str] = {}

    def source(metrics: dict[str, set[str]], why_not: str | None) -> None:
        if why_not is None:
            found.update(metrics)
        else:
            missing.update(dict.fromkeys(metrics, why_not))

    gpu_operator = releases.get("gpu-operator")
    dcgm = (gpu_operator or {}).get("dcgmExporter", {})
    monitor = dcgm.get("serviceMonitor", {})
    pod_labels = (
        {f"exported_{label}" for label in DCGM_POD_LABELS}
        if monitor.get("honorLabels", False) is False
        else set(DCGM_POD_LABELS)
    )
    source(
        dict.fromkeys(DCGM_METRICS, DCGM_LABELS | pod_labels),
        "no gpu-operator release"
        if gpu_operator is None
        else "gpu-operator dcgmExporter.enabled is false"
        if dcgm.get("enabled", True) is False
        else "gpu-operator dcgmExporter.serviceMonitor.enabled is false"
        if monitor.get("enabled", True) is False
        else "gpu-operator dcgmExporter.config replaces the default counters"
        if "config" in dcgm
        else "Prometheus ignores other releases' ServiceMonitors"
        if not _selects(kps, "serviceMonitor")
        else None,
    )

    kueue = releases.get("kueue")
    kueue_off = _unscraped(
        kps, kueue, "kueue",
        None if (kueue or {}).get("enablePrometheus") is True
        else "kueue enablePrometheus is not true (no ServiceMonitor)",
    )  # fmt: skip
    source(KUEUE_QUEUE_METRICS, kueue_off)
    manager = yaml.safe_load(
        (kueue or {}).get("managerConfig", {}).get("controllerManagerConfigYaml", "") or "{}"
    )
    source(
        dict.fromkeys(KUEUE_RESOURCE_METRICS, KUEUE_RESOURCE_LABELS),
        kueue_off
        or (
            None
            if manager.get("metrics", {}).get("enableClusterQueueResources") is True
            else "kueue managerConfig metrics.enableClusterQueueResources is not true"
        ),
    )

    ksm = (kps or {}).get("kube-state-metrics", {})
    node_labels = {"node"} | {_node_label(k) for k in _allowlisted_labels(ksm)}
    pod_labels = POD_SERIES_LABELS | {_node_label(k) for k in _allowlisted_labels(ksm, "pods")}
    source(
        {
            **NODE_METRICS,
            "kube_node_labels": node_labels,
            **POD_METRICS,
            "kube_pod_labels": pod_labels,
        },
        "no kube-prometheus-stack release"
        if kps is None
        else "kube-prometheus-stack kubeStateMetrics.enabled is false"
        if kps.get("kubeStateMetrics", {}).get("enabled", True) is False
        else None,
    )

    gateway = releases.get(PUSHGATEWAY)
    monitor = (gateway or {}).get("serviceMonitor", {})
    honored = monitor.get("honorLabels", True) is True
    # The chart names its Service after a release that holds the chart's name, port 9091.
    url = f"http://{PUSHGATEWAY}.{config['namespaces'].get(PUSHGATEWAY)}.svc:9091"

    def pushed(metrics: dict, env: str, pusher: str, detail: str = "") -> None:
        """`metrics`, pushed by `pusher` to the address in `env`, reach Prometheus through the
        Pushgateway's ServiceMonitor, its pushed `job` kept where honorLabels is."""
        source(
            {
                metric: labels | SCRAPE_LABELS | {"job" if honored else "exported_job"}
                for metric, labels in metrics.items()
            },
            _unscraped(
                kps,
                gateway,
                "prometheus-pushgateway",
                None
                if monitor.get("enabled") is True
                else "prometheus-pushgateway serviceMonitor.enabled is not true",
            )
            or (
                f"no {pusher} sets {env}={url}{detail}"
                if url not in config["push_urls"][env]
                else None
            ),
        )

    pushed(SELFTEST_METRICS, PUSH_URL_ENV, "self-test Job or CronJob")
    pushed(
        GOODPUT_METRICS, TRAINKIT_PUSHGATEWAY_URL, "training job", f" (push job {GOODPUT_PUSH_JOB})"
    )

    relabelled = config.get("pod_monitor_labels", {}).get(TRAINING_MONITOR, set())
    source(
        {
            **dict.fromkeys(RECIPE_METRICS, RECIPE_LABELS | relabelled),
            **{metric: labels | relabelled for metric, labels in TRAINKIT_METRICS.items()},
        },
        f"no PodMonitor {TRAINING_MONITOR}"
        if TRAINING_MONITOR not in config["pod_monitors"]
        else "Prometheus ignores other releases' PodMonitors"
        if not _selects(kps, "podMonitor")
        else None,
    )
    found.update(config.get("records", {}))
    alerts = config.get("alerts", {})
    source(
        {"ALERTS": {"alertname", "alertstate"}.union(*alerts.values())},
        None if alerts else "the stack declares no alerting rule",
    )
    return found, missing


# ------------------------------------------------------------------------------ queries


# Grafana's Prometheus data source puts the panel's range (`to - from`) into a query's
# `$__range` as whole seconds with an `s` (grafana public/app/plugins/datasource/prometheus/
# datasource.ts, getRangeScopedVars: `__range: sRange + 's'`); here a 31-day month's.
GRAFANA_RANGE = "2678400s"


def dashboard_queries(dashboard: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(panel id, refId, expr) of every target, rows' nested panels included, as Prometheus
    gets it: with Grafana's range in place of `$__range`."""
    panels = []
    for panel in dashboard["panels"]:
        panels += [panel, *panel.get("panels", [])]
    return [
        (p["id"], t["refId"], t["expr"].replace("$__range", GRAFANA_RANGE))
        for p in panels
        for t in p.get("targets", [])
    ]


def queries(plan: Plan) -> list[tuple[str, str]]:
    """(where, PromQL) of everything the stack asks Prometheus: dashboards (the ConfigMaps
    Grafana's sidecar loads), alert rules and ScaledObjects' Prometheus triggers."""
    found = []
    for cm in plan.of_type(CONFIG_MAP):
        if cm.inputs["metadata"].get("labels", {}).get("grafana_dashboard") == "1":
            for key, text in cm.inputs["data"].items():
                found += [
                    (f"dashboard {key} panel {panel}/{ref}", expr)
                    for panel, ref, expr in dashboard_queries(json.loads(text))
                ]
    for rule in plan.of_type(PROMETHEUS_RULE):
        for group in rule.inputs["spec"]["groups"]:
            found += [
                (f"alert {r['alert']}" if "alert" in r else f"record {r['record']}", r["expr"])
                for r in group["rules"]
            ]
    for obj in plan.of_type(SCALED_OBJECT):
        for trigger in obj.inputs["spec"]["triggers"]:
            if trigger["type"] == "prometheus":
                name = obj.inputs["metadata"]["name"]
                found.append((f"ScaledObject {name}", trigger["metadata"]["query"]))
    return found


KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
KEYWORDS |= {"and", "or", "unless", "inf", "nan"}


def problems(
    expr: str, known: dict[str, set[str]], missing: dict[str, str] | None = None
) -> list[str]:
    """Metrics a query reads that are not in `known` (with the reason from `missing` where it
    says one), and labels it reads that none of its metrics carry."""
    missing = missing or {}
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    matchers = re.findall(r"\{([^}]*)\}", text)
    # group_left(l)/group_right(l) read `l` from the other side of the match, like by (l).
    grouping = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\("
    groupings = re.findall(grouping + r"([^)]*)\)", text)
    bare = re.sub(r"\{[^}]*\}", " ", text)
    bare = re.sub(grouping + r"[^)]*\)", " ", bare)
    # A range or subquery selector ([5m], [30d:5m]) holds durations, no metric name.
    bare = re.sub(r"\[[^\]]*\]", " ", bare)
    names = {
        m.group(1)
        for m in re.finditer(r"\b([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()", bare)
        if m.group(1) not in KEYWORDS
    }
    found = [
        f"{n} not emitted: {missing[n]}" if n in missing else f"unknown metric {n}"
        for n in sorted(names - set(known))
    ]
    if found:
        # The labels of a metric that is not there say nothing more.
        return found
    carried = set().union(*(known.get(n, set()) for n in names)) | _written_labels(expr)
    labels = {m.split("=")[0].split("!")[0].strip() for ms in matchers for m in ms.split(",")}
    labels |= {label.strip() for g in groupings for label in g.split(",")}
    found += [f"label {lbl} not on {sorted(names)}" for lbl in sorted(labels - carried - {""})]
    return found
