"""Each pool's stored baseline (components/observability/baseline.py), which a GPU-stack
change's canary is held to: promtool runs the hand-worked cases of tests/promtool/
baseline_test.yaml, the image queries the series the rules record (one name, in contract/), and
every pool of every stack whose self-test pushes has one."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.observability.alerts import prometheus_rule_spec
from components.observability.baseline import baseline_rules
from contract.baseline import BASELINE_RECORD
from model.config import PlatformConfig
from model.config.node_join import canary_pools
from tests.conftest import STACKS, stack_config
from tests.helpers.alert_stacks import aws_config, promtool_cases, scheduled_config
from tests.helpers.bad_stacks import GROUP
from tests.helpers.canary_stacks import CANARY_STACKS, canary_env_and_config

BASELINE_TESTS = Path(__file__).parents[2] / "promtool" / "baseline_test.yaml"
BASELINE_GROUP = "gpu-platform.baseline"
H100 = {"name": "h100", "instance_types": ["p5.48xlarge"]}


def baseline_group(cfg: PlatformConfig) -> dict | None:
    groups = [g for g in prometheus_rule_spec(cfg)["groups"] if g["name"] == BASELINE_GROUP]
    return groups[0] if groups else None


def test_the_baseline_is_the_median_of_the_pools_last_passing_figures(tmp_path):
    spec = prometheus_rule_spec(scheduled_config([GROUP, H100], baseline_window="1h"))
    result = promtool_cases(tmp_path, spec, BASELINE_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_cases_can_fail(tmp_path):
    """Over a 20-minute window node-2's passing GEMM figures (until 25m) are gone at 60m and
    its failing ones never count: the median of 900 920 1300 1320 is (920 + 1300) / 2 = 1110."""
    spec = prometheus_rule_spec(scheduled_config([GROUP, H100], baseline_window="20m"))
    result = promtool_cases(tmp_path, spec, BASELINE_TESTS)
    assert result.returncode == 1
    name = (
        '{__name__="gpu_platform_pool:selftest_figure_baseline:median", '
        'check="compute.gemm_bf16", pool="a100", unit="TFLOP/s"}'
    )
    assert f"{name} 9.9E+02" in result.stderr  # expected
    assert f"{name} 1.11E+03" in result.stderr  # got


def test_the_series_the_canary_queries_is_the_one_recorded():
    """The image asks Prometheus for contract.baseline.BASELINE_RECORD (bootstrap/selftest/
    baseline.py; tests/image/selftest/test_baseline.py holds its query to the same name); the
    program records it last, from the others, under a level:metric:operations name
    (Prometheus docs, "Recording rules", "Best practices")."""
    group = baseline_group(scheduled_config())
    assert BASELINE_RECORD == "gpu_platform_pool:selftest_figure_baseline:median"
    assert group["rules"][-1]["record"] == BASELINE_RECORD
    assert group["rules"][-1]["expr"].startswith("quantile by (pool, check, unit) (0.5, ")
    # A 14-day window read every 5 minutes, not every 30 s (4,032 samples a series).
    assert group["interval"] == "5m"


def test_the_default_window_is_two_weeks_within_the_default_retention():
    cfg = scheduled_config()
    assert "[14d]" in baseline_group(cfg)["rules"][1]["expr"]
    # model/config/observability.py: retention_days defaults to 15; alerts.check_retention holds
    # every `*_window` to it.
    assert cfg.observability.retention_days == 15


@pytest.mark.parametrize("stack", [*STACKS, *(f"{s}-roll" for s in CANARY_STACKS)])
def test_every_pool_a_canary_rolls_through_has_a_baseline(stack):
    """Where a canary reads the baseline (the pools that roll through one), each pool's nodes
    (its node selector on kube_node_labels) feed it; where no canary reads it (an existing
    cluster, a stack without the self-test) there is nothing to record."""
    roll = stack.removesuffix("-roll")
    cfg = canary_env_and_config(roll)[1] if stack != roll else stack_config(stack)
    group = baseline_group(cfg)
    if not canary_pools(cfg):
        assert group is None
        return
    passing = group["rules"][0]["expr"]
    for pool in canary_pools(cfg):
        assert f'"pool", "{pool.name}", "", ""' in passing


def test_a_stack_whose_selftest_does_not_push_records_no_baseline():
    cfg = aws_config(groups=[GROUP])
    assert baseline_rules(cfg) == []
    assert baseline_group(cfg) is None
