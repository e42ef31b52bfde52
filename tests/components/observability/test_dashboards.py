"""The dashboards in components/observability/dashboards, with the rows some stacks add
(components/observability/dashboards/rows): valid JSON Grafana can load, unique panel ids, every
query parsed by Prometheus's own promtool. That every metric and label a query reads is exported, by
a component configured to export it, is tests/components/observability/test_metric_sources.py's
business."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from components.observability.alerts import prometheus_rule_spec
from components.observability.monitoring import DASHBOARDS, dashboards
from contract.training_metrics import GOODPUT_PUSH_JOB, GOODPUT_SERIES, RANK_STEP_SECONDS
from tests.helpers.alert_stacks import scheduled_config
from tests.helpers.metric_sources import dashboard_queries
from tests.helpers.tools import promtool


def load(stem: str) -> dict:
    """The dashboard as a stack with every optional row loads it."""
    return json.loads(dashboards(selftest_history=True, reservations=True, priced=True)[stem])


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
        (f"{stem}/{panel}/{ref}", expr)
        for stem in STEMS
        for panel, ref, expr in dashboard_queries(load(stem))
    ]


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


def test_the_views_the_issues_ask_for_are_there():
    assert STEMS == ["fleet-health", "gpu-fleet", "queues", "team-cost", "training-job"]


def test_the_training_view_reads_tensor_activity_and_the_recipes_metrics_by_pod_and_recipe():
    exprs = " ".join(expr for where, expr in expressions() if where.startswith("training-job/"))
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in exprs
    assert "exported_pod" in exprs
    # What the recipes export (common contract with bootstrap/trainkit/metrics.py), one panel each.
    for metric in (
        "gpu_platform_training_step_seconds",
        "gpu_platform_training_loss",
        "gpu_platform_training_samples_per_second",
        "gpu_platform_training_gpu_memory_bytes",
    ):
        assert f"max by (namespace, pod, recipe) ({metric})" in exprs, metric


def test_the_fleet_view_gets_a_self_test_history_row_of_what_the_runs_push():
    fleet = load("gpu-fleet")
    (row,) = [p for p in fleet["panels"] if p["type"] == "row" and p["id"] == 14]
    assert row["title"] == "Self-test history"
    exprs = " ".join(expr for where, expr in expressions() if where.startswith("gpu-fleet/"))
    # The names the image pushes (the contract with bootstrap/selftest).
    for metric in (
        "gpu_platform_selftest_check_status",
        "gpu_platform_selftest_last_run_timestamp_seconds",
        "gpu_platform_selftest_figure",
        "gpu_platform_selftest_figure_floor",
    ):
        assert metric in exprs, metric
    # The row starts below the dashboard's last panel, so Grafana stacks nothing on it.
    plain = json.loads(dashboards()["gpu-fleet"])
    bottom = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in plain["panels"])
    assert row["gridPos"]["y"] == bottom
    assert "gpu_platform_selftest" not in dashboards()["gpu-fleet"]


def test_the_training_view_has_goodput_rows_of_what_trainkit_pushes():
    """A Goodput row (per job) and a per-team row, reading every series trainkit pushes under its
    push job, by the names contract/training_metrics.py spells; below the dashboard's other
    panels. Every stack has the Pushgateway that holds them
    (tests/components/observability/test_pushgateway.py)."""
    board = load("training-job")
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows == ["Goodput", "Goodput by team, queue and pool", "Checkpoint interval"]
    goodput = [e for w, e in expressions() if w.startswith("training-job/") and "_gpu_" in e]
    for metric in GOODPUT_SERIES:
        reads = [e for _, e in expressions() if metric in e]
        assert reads, metric
        assert all(f'{metric}{{job="{GOODPUT_PUSH_JOB}"}}' in e for e in reads), metric
    by_team = " ".join(e for e in goodput if "by (team, queue, pool" in e)
    assert "gpu_platform_job_productive_gpu_seconds" in by_team
    assert "gpu_platform_job_lost_gpu_seconds" in by_team
    # The rows start below every panel before them, so Grafana stacks nothing on them.
    first = next(i for i, p in enumerate(board["panels"]) if p["type"] == "row")
    above = board["panels"][:first]
    assert board["panels"][first]["gridPos"]["y"] == max(
        p["gridPos"]["y"] + p["gridPos"]["h"] for p in above
    )
    # The straggler view, above them, reads the ranks' own series.
    assert RANK_STEP_SECONDS in json.dumps(above)
    assert "gpu_platform_job:rank_step_seconds:slowest_over_median" in json.dumps(above)


def test_no_panel_reads_the_self_test_step_time_that_nothing_exports():
    exprs = " ".join(expr for _, expr in expressions())
    assert "gpu_platform_selftest_step_seconds" not in exprs


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


# The seed's alerts on the fleet's nodes: the GPUs' faults, the EKS agent's conditions and the
# self-test's verdicts (components/observability/alerts.py).
FLEET_ALERTS = {
    "GpuXidError",
    "GpuMissing",
    "EksNodeConditionFailed",
    "SelfTestFailed",
    "SelfTestBelowFloor",
    "SelfTestStale",
}


def test_the_fleet_health_view_shows_mtbf_and_mttr_per_pool_beside_the_fleet_alerts():
    board = load("fleet-health")
    exprs = {expr for _, _, expr in dashboard_queries(board)}
    assert "gpu_platform_pool:mtbf_seconds:window" in exprs
    assert "gpu_platform_pool:mttr_seconds:window" in exprs
    assert "gpu_platform_node:mtbf_seconds:window" in exprs
    assert "gpu_platform_node:mttr_seconds:window" in exprs
    (alerts,) = [e for e in exprs if "ALERTS{" in e]
    listed = set(re.search(r'alertname=~"([^"]*)"', alerts).group(1).split("|"))
    assert listed == FLEET_ALERTS
    # Each is an alert the platform declares: a misspelt name would never show.
    cfg = scheduled_config()
    declared = {r["alert"] for g in prometheus_rule_spec(cfg)["groups"] for r in g["rules"]
                if "alert" in r}  # fmt: skip
    assert listed <= declared


def test_the_training_view_shows_the_interval_a_job_uses_beside_young_daly():
    """One panel, both lines: what the job does and what would lose least."""
    board = load("training-job")
    (panel,) = [p for p in board["panels"] if p["title"].startswith("Checkpoint interval:")]
    exprs = [t["expr"] for t in panel["targets"]]
    assert exprs == [
        "max by (namespace, job_name) "
        '(gpu_platform_job_checkpoint_interval_seconds{job="training-goodput"})',
        "max by (namespace, job_name) (gpu_platform_job:checkpoint_interval_seconds:young_daly)",
    ]
    assert panel["fieldConfig"]["defaults"]["unit"] == "s"


def test_the_fleet_view_gets_a_row_of_reserved_gpus_used_against_paid_where_a_window_is():
    fleet = load("gpu-fleet")
    (row,) = [p for p in fleet["panels"] if p["type"] == "row" and p["title"] == "Reservations"]
    exprs = " ".join(expr for where, expr in expressions() if where.startswith("gpu-fleet/"))
    # The records of components/observability/reservations.py.
    for record in (
        "gpu_platform_reservation:gpus_allocated:sum",
        "gpu_platform_reservation:gpus_paid:sum",
    ):
        assert record in exprs, record
    # Below the self-test history row, the lower of the two optional rows' bottoms.
    with_history = json.loads(dashboards(selftest_history=True)["gpu-fleet"])
    bottom = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in with_history["panels"])
    assert row["gridPos"]["y"] == bottom
    assert "gpu_platform_reservation" not in dashboards(selftest_history=True)["gpu-fleet"]


def test_the_team_cost_view_shows_usd_only_where_a_pool_has_a_price():
    """An existing cluster's pools have no price: its Team cost dashboard has GPU-hours alone,
    not USD panels that would say "No data"."""
    priced = dashboards(priced=True)["team-cost"]
    unpriced = dashboards()["team-cost"]
    assert "gpu_platform_team:usd:month_to_date" in priced
    assert "gpu_platform_team:gpu_hours:month_to_date" in unpriced
    assert "usd" not in unpriced.lower().replace("uid", "")


def test_the_teams_dashboard_names_its_idle_jobs():
    """Issue 40 §3: an idle job is named on the team's dashboard: the Team cost view lists the
    chosen team's jobs by their busiest GPU (the idle record GpuIdle reads), idlest first."""
    exprs = [
        target["expr"]
        for panel in load("team-cost")["panels"]
        for target in panel.get("targets", [])
    ]
    idle = [e for e in exprs if "gpu_platform_job:gpu_utilisation:max" in e]
    assert idle == [
        "sort(max by (namespace, job_name) "
        '(gpu_platform_job:gpu_utilisation:max{namespace=~"$team"}))'
    ]
