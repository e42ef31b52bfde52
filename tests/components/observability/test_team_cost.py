"""The team cost rules (components/observability/team_cost.py): GPU-hours and their price per
team, queue, pool and job, the month to date, and each team's budget alerts; promtool runs the
cases of tests/promtool/team_cost_test.yaml and team_cost_month_test.yaml."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
import yaml

from components.observability.alerts import prometheus_rule_spec
from components.observability.monitoring import dashboards
from components.observability.team_cost import (
    INTERVAL_MINUTES,
    PRICE,
    QUEUES,
    RUNNING,
    TEAM_COST_GROUP,
    team_cost_rules,
)
from model.config import PlatformConfig
from model.cost import cost_report, pool_gpu_hour_prices
from plan.cost_text import format_cost
from tests.conftest import STACKS, planned, stack_config
from tests.helpers.alert_stacks import aws_config, budget_config, promtool_cases
from tests.helpers.bad_stacks import assert_refused, aws, case, existing

PROMTOOL = Path(__file__).parents[2] / "promtool"
BUDGET_ALERTS = {"TeamBudgetNearlySpent", "TeamBudgetSpent"}


def records(cfg: PlatformConfig) -> dict[str, str]:
    return {r.name: r.expr for r in team_cost_rules(cfg)}


def test_budget_alerts_fire_at_80_and_100_percent_and_stay_silent_below(tmp_path):
    result = promtool_cases(
        tmp_path, prometheus_rule_spec(budget_config()), PROMTOOL / "team_cost_test.yaml"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_month_to_date_starts_again_at_a_month_boundary(tmp_path):
    cfg = budget_config()
    group = {
        "name": TEAM_COST_GROUP,
        "interval": "60m",
        "rules": [r.rule(cfg.alerts) for r in team_cost_rules(cfg, interval_minutes=60)],
    }
    result = promtool_cases(tmp_path, {"groups": [group]}, PROMTOOL / "team_cost_month_test.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_price_series_holds_the_catalogs_figures_per_gpu():
    # p4d.24xlarge on demand, us-east-1: $21.958/h (instances.vantage.sh via tsaol/aws-gpu,
    # model/catalog_rows.py), 8 GPUs: $2.74475 a GPU-hour.
    assert 'vector(2.74475), "pool", "a100"' in records(budget_config())[PRICE]
    prod = records(stack_config("prod"))[PRICE]
    # A Capacity Block at its own rate: p5.48xlarge, $39.33 an instance-hour (aws.amazon.com/
    # ec2/capacityblocks/pricing, 2024-Q4 table), 8 GPUs: $4.91625.
    assert 'vector(4.91625), "pool", "h100-block"' in prod
    # p5.48xlarge on demand, us-east-1: $55.04/h, 8 GPUs: $6.88.
    assert 'vector(6.88), "pool", "h100-ondemand"' in prod


@pytest.mark.parametrize("stack", STACKS)
def test_every_team_has_a_cost_series_and_every_pool_a_price_or_why_not(stack):
    cfg = stack_config(stack)
    found = records(cfg)
    for team in cfg.scheduling.all_teams(cfg.namespaces.training):
        assert f'"namespace", "{team.name}"' in found[QUEUES], team.name
    for pool in cfg.gpu_pools:
        assert f'"pool", "{pool.name}"' in found[RUNNING], pool.name
    prices = pool_gpu_hour_prices(cfg)
    assert set(prices) == {p.name for p in cfg.gpu_pools}
    for pool, price in prices.items():
        if price.usd is None:
            assert price.basis, pool
            assert f'"pool", "{pool}"' not in found.get(PRICE, "")
        else:
            assert f'vector({price.usd:g}), "pool", "{pool}"' in found[PRICE]


def test_a_shared_or_mig_pools_devices_count_as_their_share_of_a_gpu():
    """Time-slicing with 4 replicas advertises 4 nvidia.com/gpu per GPU, MPS with 2 two (GPU
    Operator docs, "Time-Slicing GPUs"), MIG single its slices; whole GPUs count as they are."""
    expr = records(aws_config())[RUNNING]
    assert 'kube_node_labels{label_gpu_platform_node_group="a100-ts"}' in expr
    assert ') / 4 and on(node) kube_node_labels{label_gpu_platform_node_group="a100-ts"}' in expr
    assert ') / 2 and on(node) kube_node_labels{label_gpu_platform_node_group="a100-mps"}' in expr
    # MIG single cuts an A100 40 GB into seven 1g.5gb slices (NVIDIA MIG User Guide, supported
    # profiles: 1g.5gb, 7 instances), each advertised as an nvidia.com/gpu.
    assert ') / 7 and on(node) kube_node_labels{label_gpu_platform_node_group="a100-mig"}' in expr
    assert '== 1)) and on(node) kube_node_labels{label_gpu_platform_node_group="a100"}' in expr


def test_every_budget_alert_has_a_firing_and_a_silent_promtool_case():
    cases = yaml.safe_load((PROMTOOL / "team_cost_test.yaml").read_text())["tests"]
    checks = [c for t in cases for c in t.get("alert_rule_test", [])]
    assert {c["alertname"] for c in checks if c["exp_alerts"]} == BUDGET_ALERTS
    assert {c["alertname"] for c in checks if not c["exp_alerts"]} == BUDGET_ALERTS


def test_budget_alerts_only_where_a_team_has_a_budget():
    assert {r.name for r in team_cost_rules(budget_config())} >= BUDGET_ALERTS
    assert not BUDGET_ALERTS & {r.name for r in team_cost_rules(stack_config("dev"))}


TEAM = {"name": "vision"}


@pytest.mark.parametrize(
    "stack, path, value, valid",
    [
        case(
            aws(scheduling={"teams": [{**TEAM, "monthly_budget_usd": 0}]}),
            "gpu-platform:scheduling.teams[0].monthly_budget_usd",
            "0",
            "greater than 0",
            "zero",
        ),
        case(
            aws(scheduling={"teams": [{**TEAM, "monthly_budget_usd": True}]}),
            "gpu-platform:scheduling.teams[0].monthly_budget_usd",
            "true",
            "give a number",
            "boolean",
        ),
        case(
            existing(scheduling={"teams": [{**TEAM, "monthly_budget_usd": 100}]}),
            "gpu-platform:scheduling.teams[0].monthly_budget_usd",
            "vision",
            "only valid with provider aws",
            "existing-cluster",
        ),
    ],
)
def test_a_bad_team_budget_is_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


@pytest.mark.parametrize("stack, usd", [("dev", True), ("onprem", False)])
def test_the_team_cost_dashboard_shows_usd_where_the_stack_prices_its_pools(stack, usd):
    (board,) = [
        o["data"]["team-cost.json"]
        for o in planned(stack).kubernetes_objects()
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "dashboard-team-cost"
    ]
    assert ("gpu_platform_team:usd:month_to_date" in board) is usd


def test_the_cost_estimate_breaks_the_pools_down_by_team_quota():
    """burst: one ClusterQueue `burst` naming no pools, so its nominal quota is every GPU of each
    pool: h100-spot and h100-block, 2 p5.48xlarge (8 GPUs each) at most, 16 GPUs each; shared by
    the training namespace and research, 8 GPUs each. h100-spot at $2.752 a GPU-hour (p5.48xlarge
    on demand $55.04/h less the assumed 60 % spot discount, over 8 GPUs), 730 h: 8 x 2.752 x 730
    = $16,071.68; h100-block at $4.91625 (a Capacity Block, $39.33 an instance-hour, over 8):
    8 x 4.91625 x 730 = $28,710.90; together $44,782.58 a team."""
    report = cost_report(stack_config("burst"), date(2026, 12, 5))
    research = next(t for t in report["teams"] if t["team"] == "research")
    assert research["monthly_usd"] == 44782.58
    assert research["shared_with"] == 1
    assert [(p["pool"], p["gpus"], p["monthly_usd"]) for p in research["pools"]] == [
        ("h100-spot", 8, 16071.68),
        ("h100-block", 8, 28710.9),
    ]
    text = "\n".join(format_cost(report))
    assert "    research (queue burst, shared with 1 other team(s)): $44,782.58/month" in text
    assert "      h100-block: 8 GPUs x $4.91625/GPU-h = $28,710.90/month" in text


def test_the_dashboards_tables_by_job_sum_what_ran_this_month_at_the_rules_step():
    """The per-job tables read the GPUs running over the panel's range, the month so far
    (Grafana's relative time now/M), each sample standing for the group's interval; the
    GPU-hours table is the query its promtool case runs once Grafana fills in the team and a
    35-minute range."""
    board = json.loads(dashboards(priced=True)["team-cost"])
    by_id = {p["id"]: p for p in board["panels"]}
    for table in (by_id[3], by_id[7]):
        assert table["timeFrom"] == "now/M"
        expr = table["targets"][0]["expr"]
        assert f"sum_over_time({RUNNING}" in expr and f"* {INTERVAL_MINUTES} / 60" in expr
    sent = by_id[3]["targets"][0]["expr"].replace("$team", "vision").replace("$__range", "35m")
    cases = yaml.safe_load((PROMTOOL / "team_cost_test.yaml").read_text())["tests"]
    assert sent in [c["expr"] for t in cases for c in t.get("promql_expr_test", [])]
