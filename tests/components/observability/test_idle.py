"""Idle GPUs named by job and team (issue 40 §3): the GpuIdle rule joins the DCGM series to the
pod's JobSet through kube_pod_labels, which holds only what kube-state-metrics is told to export,
and each side keeps the labels the join matches on only under the honorLabels the stack scrapes
it with. The firing and silent cases, with both sides labelled so, are in
tests/promtool/alerts_test.yaml (GpuIdle)."""

from __future__ import annotations

import re

import pytest
import yaml

from components.data.gpu_operator import helm_values
from components.observability.alerts import prometheus_rule_spec
from components.observability.monitoring import monitoring_values
from model.config.observability import ObservabilitySettings
from model.stacks import ROOT
from tests.conftest import STACKS, stack_config
from tests.helpers.alert_stacks import aws_config

KSM_CHART_VALUES = ROOT.parent / "shared/charts/kube-prometheus-stack/88.5.3/values.yaml"


def _exprs(cfg) -> list[str]:
    return [r["expr"] for g in prometheus_rule_spec(cfg)["groups"] for r in g["rules"]]


def _allowlisted_pod_labels(cfg) -> set[str]:
    """kube-state-metrics' names of the pod labels the stack's values allow-list
    (`pods=[k1,k2]`; every character outside [a-zA-Z0-9_] becomes `_`, kube-state-metrics
    internal/store/utils.go)."""
    values = monitoring_values(ObservabilitySettings(), None, {})
    found = set()
    for entry in values["kube-state-metrics"]["metricLabelsAllowlist"]:
        kind, _, keys = entry.partition("=")
        if kind == "pods":
            found |= {"label_" + re.sub(r"[^a-zA-Z0-9_]", "_", k) for k in keys[1:-1].split(",")}
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_pod_label_a_rule_reads_is_one_kube_state_metrics_exports(stack):
    """A `label_<key>` matcher on kube_pod_labels that is not allow-listed matches no series:
    the job is never named and its alert never fires."""
    read = set()
    for expr in _exprs(stack_config(stack)):
        for selector in re.findall(r"kube_pod_labels\{([^}]*)\}", expr):
            read |= set(re.findall(r"(label_\w+)\s*!?=", selector))
    assert read, "no rule reads a pod label: idle GPUs are not named by job"
    assert read <= _allowlisted_pod_labels(stack_config(stack)), sorted(read)


def test_the_idle_alert_reads_the_jobset_name_label_kube_state_metrics_exports():
    # JobSet v0.12.0 pkg/constants/constants.go: JobSetNameKey "jobset.sigs.k8s.io/jobset-name",
    # on every pod of the JobSet; kube-state-metrics' name for it.
    assert any(
        'kube_pod_labels{label_jobset_sigs_k8s_io_jobset_name!=""}' in e
        for e in _exprs(aws_config())
    )


def test_the_join_matches_on_the_labels_each_side_is_scraped_with():
    """The DCGM exporter scraped with honorLabels false names the GPU's pod exported_*; the
    rule matches on those and copies kube_pod_labels' own `namespace`/`pod` (kept by
    kube-prometheus-stack's honorLabels true) into them. Flip either and the join is empty."""
    dcgm = helm_values([], aws_config().gpu_operator, on_aws=True)["dcgmExporter"]
    assert dcgm["serviceMonitor"]["honorLabels"] is False
    chart = yaml.safe_load(KSM_CHART_VALUES.read_text())
    assert chart["kube-state-metrics"]["prometheus"]["monitor"]["http"]["honorLabels"] is True
    ours = monitoring_values(ObservabilitySettings(), None, {})["kube-state-metrics"]
    assert "prometheus" not in ours, "the platform's values override the chart's honorLabels"
    idle = next(e for e in _exprs(aws_config()) if "group_left(job_name)" in e)
    assert "on(exported_namespace, exported_pod)" in idle
    assert '"exported_namespace", "$1", "namespace"' in idle
    assert '"exported_pod", "$1", "pod"' in idle


def test_the_training_view_lists_idle_jobs_by_team_from_what_the_rules_produce():
    import json

    from components.observability.monitoring import dashboards

    board = json.loads(dashboards()["training-job"])
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    rules = prometheus_rule_spec(aws_config())["groups"]
    records = {r["record"] for g in rules for r in g["rules"] if "record" in r}
    assert "gpu_platform_job:gpu_utilisation:max" in records
    assert sum("gpu_platform_job:gpu_utilisation:max" in e and "team" in e for e in exprs) == 2


RECLAIM_TESTS = ROOT / "tests/promtool/idle_reclaim_test.yaml"


def test_the_reclaimer_lists_only_a_job_idle_through_its_whole_window(tmp_path):
    """The query the reclaimer is rendered with is the one the promtool cases hold: a job idle
    for the whole of after_minutes is listed; one that started within it, or woke in it, not."""
    from components.observability.idle import idle_jobs_query
    from tests.helpers.alert_stacks import promtool_cases

    cases = yaml.safe_load(RECLAIM_TESTS.read_text())["tests"]
    (expr,) = {c["expr"] for t in cases for c in t["promql_expr_test"]}
    assert idle_jobs_query(aws_config(), 60) == expr
    result = promtool_cases(tmp_path, prometheus_rule_spec(aws_config()), RECLAIM_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
