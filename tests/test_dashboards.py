"""The dashboards in components/dashboards: valid JSON Grafana can load, unique panel ids, every
query parsed by Prometheus's own promtool, and only metrics and labels the exporters really
export. A misspelt metric or a DCGM query on `pod` instead of `exported_pod` fails here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import yaml

from components.observability import DASHBOARDS

# Metric -> labels a query may read. Sources:
# - DCGM: the GPU Operator's exporter counters file `dcp-metrics-included.csv` (shared/PINS.md,
#   "Monitoring and autoscaling"); labels gpu, UUID, modelName, Hostname, and the GPU user's pod
#   as exported_namespace / exported_pod / exported_container, since the ServiceMonitor keeps
#   honorLabels false (shared/FACTS.md, "Monitoring").
# - Kueue v0.19.2, pkg/metrics: kueue_pending_workloads{cluster_queue,status},
#   kueue_admitted_active_workloads{cluster_queue}, kueue_cluster_queue_resource_usage and
#   kueue_cluster_queue_nominal_quota{cohort,cluster_queue,flavor,resource}.
# - The training recipes (recipes/metrics.py), each series labelled `recipe`, scraped by the
#   platform's PodMonitor, which adds the pod's `namespace` and `pod` (Prometheus Operator's
#   PodMonitor target labels; honorLabels false).
DCGM_LABELS = {
    "gpu",
    "UUID",
    "modelName",
    "Hostname",
    "exported_namespace",
    "exported_pod",
    "exported_container",
}
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
RECIPE_LABELS = {"recipe", "namespace", "pod"}
RECIPE_METRICS = [
    "gpu_platform_training_step",
    "gpu_platform_training_loss",
    "gpu_platform_training_step_seconds",
    "gpu_platform_training_samples_per_second",
    "gpu_platform_training_gpu_memory_bytes",
]
KUEUE_QUEUE = {"cohort", "cluster_queue", "flavor", "resource"}
KNOWN: dict[str, set[str]] = {
    **dict.fromkeys(DCGM_METRICS, DCGM_LABELS),
    "kueue_pending_workloads": {"cluster_queue", "status"},
    "kueue_admitted_active_workloads": {"cluster_queue"},
    "kueue_cluster_queue_resource_usage": KUEUE_QUEUE,
    "kueue_cluster_queue_nominal_quota": KUEUE_QUEUE,
    **dict.fromkeys(RECIPE_METRICS, RECIPE_LABELS),
}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
KEYWORDS |= {"and", "or", "unless", "inf", "nan"}


def load(stem: str) -> dict:
    return json.loads((DASHBOARDS / f"{stem}.json").read_text())


STEMS = sorted(p.stem for p in DASHBOARDS.glob("*.json"))


def panels(dashboard: dict) -> list[dict]:
    """Every panel, rows' nested panels included."""
    found = []
    for panel in dashboard["panels"]:
        found.append(panel)
        found += panel.get("panels", [])
    return found


def expressions() -> list[tuple[str, str]]:
    return [
        (f"{stem}/{panel['id']}/{target['refId']}", target["expr"])
        for stem in STEMS
        for panel in panels(load(stem))
        for target in panel.get("targets", [])
    ]


def metric_and_label_problems(expr: str) -> list[str]:
    """Metrics not in KNOWN, and labels a query reads that its metrics do not carry."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    matchers = re.findall(r"\{([^}]*)\}", text)
    groupings = re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", text)
    bare = re.sub(r"\{[^}]*\}", " ", text)
    bare = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", " ", bare)
    names = {
        m.group(1)
        for m in re.finditer(r"\b([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()", bare)
        if m.group(1) not in KEYWORDS
    }
    problems = [f"unknown metric {n}" for n in sorted(names - set(KNOWN))]
    carried = set().union(*(KNOWN.get(n, set()) for n in names))
    labels = {m.split("=")[0].split("!")[0].strip() for ms in matchers for m in ms.split(",")}
    labels |= {label.strip() for g in groupings for label in g.split(",")}
    problems += [f"label {lbl} not on {sorted(names)}" for lbl in sorted(labels - carried - {""})]
    return problems


@pytest.mark.parametrize("stem", STEMS)
def test_dashboard_is_json_grafana_loads_with_unique_panel_ids(stem):
    dashboard = load(stem)
    assert dashboard["title"] and dashboard["uid"]
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids)), f"{stem}: panel ids repeat: {ids}"
    # kube-prometheus-stack's Prometheus data source (chart values
    # grafana.sidecar.datasources.uid: prometheus).
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            assert target["datasource"] == {"type": "prometheus", "uid": "prometheus"}


def test_the_three_views_the_issue_asks_for_are_there():
    assert STEMS == ["gpu-fleet", "queues", "training-job"]


@pytest.mark.parametrize(("where", "expr"), expressions())
def test_every_query_uses_known_metrics_and_their_labels(where, expr):
    assert metric_and_label_problems(expr) == [], where


def test_the_metric_check_catches_a_typo_and_a_pod_label_dcgm_renames():
    assert metric_and_label_problems("avg(DCGM_FI_DEV_GPU_UTILL)") == [
        "unknown metric DCGM_FI_DEV_GPU_UTILL"
    ]
    assert metric_and_label_problems('DCGM_FI_DEV_GPU_UTIL{pod="x"}') == [
        "label pod not on ['DCGM_FI_DEV_GPU_UTIL']"
    ]
    assert metric_and_label_problems("sum by (namespace) (DCGM_FI_DEV_FB_USED)") == [
        "label namespace not on ['DCGM_FI_DEV_FB_USED']"
    ]


def test_the_training_view_reads_tensor_activity_and_the_recipes_metrics_by_pod_and_recipe():
    exprs = " ".join(expr for where, expr in expressions() if where.startswith("training-job/"))
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in exprs
    assert "exported_pod" in exprs
    # What the recipes export (common contract with recipes/metrics.py), one panel each.
    for metric in (
        "gpu_platform_training_step_seconds",
        "gpu_platform_training_loss",
        "gpu_platform_training_samples_per_second",
        "gpu_platform_training_gpu_memory_bytes",
    ):
        assert f"max by (namespace, pod, recipe) ({metric})" in exprs, metric


def test_no_panel_reads_the_self_test_step_time_that_nothing_exports():
    exprs = " ".join(expr for _, expr in expressions())
    assert "gpu_platform_selftest_step_seconds" not in exprs


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: `apt-get install prometheus` (Prometheus's promtool)")
    return path


def test_promtool_parses_every_dashboard_query(tmp_path):
    """Each query as a recording rule: `promtool check rules` parses every expression."""
    rules = [
        {"record": "dashboard:" + re.sub(r"[^A-Za-z0-9_]", "_", where), "expr": expr}
        for where, expr in expressions()
    ]
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_promtool_refuses_a_broken_query(tmp_path):
    """The check above can fail: an unbalanced parenthesis does not parse."""
    path = tmp_path / "broken.rules.yaml"
    rule = {"record": "dashboard:broken", "expr": "avg(DCGM_FI_DEV_GPU_UTIL"}
    path.write_text(yaml.safe_dump({"groups": [{"name": "broken", "rules": [rule]}]}))
    result = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
