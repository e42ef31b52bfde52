"""The Fleet health records (components/observability/fleet_health.py: time between failures and
time to repair per node and pool) and the Young–Daly checkpoint interval: promtool runs the
hand-worked cases of tests/promtool/fleet_test.yaml, and every pool of every stack is measured."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.observability.alerts import prometheus_rule_spec
from components.observability.fleet_health import checkpoint_rules, fleet_rules
from model.config import PlatformConfig
from tests.conftest import STACKS, stack_config
from tests.helpers.alert_stacks import aws_config, promtool_cases
from tests.helpers.bad_stacks import GROUP

FLEET_TESTS = Path(__file__).parents[2] / "promtool" / "fleet_test.yaml"
FLEET_GROUP = "gpu-platform.fleet"
RECORDS = [
    "gpu_platform_node:out_of_service:bool",
    "gpu_platform_node:failures:window",
    "gpu_platform_node:in_service_seconds:window",
    "gpu_platform_node:out_of_service_seconds:window",
    "gpu_platform_node:mtbf_seconds:window",
    "gpu_platform_node:mttr_seconds:window",
    "gpu_platform_pool:mtbf_seconds:window",
    "gpu_platform_pool:mttr_seconds:window",
    "gpu_platform_job:checkpoint_interval_seconds:young_daly",
]


def fleet_group(cfg: PlatformConfig) -> dict:
    (group,) = [g for g in prometheus_rule_spec(cfg)["groups"] if g["name"] == FLEET_GROUP]
    return group


def test_mtbf_mttr_and_the_young_daly_interval_of_a_pool_with_known_failures(tmp_path):
    spec = prometheus_rule_spec(aws_config(groups=[GROUP], fleet_window="1h"))
    result = promtool_cases(tmp_path, spec, FLEET_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_cases_can_fail(tmp_path):
    """Over a 15-minute window node-2's first quarantine (10m-14m) falls outside it: two
    failures, not the hand-worked three, and promtool says which values differ: 48 samples
    (16 a node, 15m to 30m), 16 of them out of service, (48 - 16) × 60 / 2 = 960 s."""
    spec = prometheus_rule_spec(aws_config(groups=[GROUP], fleet_window="15m"))
    result = promtool_cases(tmp_path, spec, FLEET_TESTS)
    assert result.returncode == 1
    name = '{__name__="gpu_platform_pool:mtbf_seconds:window", pool="a100"}'
    assert f"exp: {name} 1.44E+03\n        got: {name} 9.6E+02" in result.stderr


@pytest.mark.parametrize("stack", STACKS)
def test_every_pool_of_every_stack_is_measured(stack):
    """Each pool's nodes (its node selector, as kube-state-metrics names the labels) feed the
    node state, and every record is there, evaluated each minute: a sample is a minute."""
    cfg = stack_config(stack)
    group = fleet_group(cfg)
    assert group["interval"] == "1m"
    assert [r["record"] for r in group["rules"]] == RECORDS
    state = group["rules"][0]["expr"]
    for pool in cfg.gpu_pools:
        assert f'"pool", "{pool.name}", "", ""' in state
        for key, value in pool.node_selector.items():
            # kube-state-metrics internal/store/utils.go, sanitizeLabelName.
            assert f'label_{re.sub(r"[^a-zA-Z0-9_]", "_", key)}="{value}"' in state


def test_a_quarantine_and_on_aws_a_failed_agent_condition_put_a_node_out_of_service():
    """The self-test's quarantine taint (bootstrap/selftest/quarantine.py) on every provider; on
    AWS also the EKS node monitoring agent's conditions that node repair acts on (EKS User
    Guide, "Detect node health issues")."""
    aws = fleet_group(stack_config("dev"))["rules"][0]["expr"]
    onprem = fleet_group(stack_config("onprem"))["rules"][0]["expr"]
    taint = 'kube_node_spec_taint{key="gpu-platform/selftest-failed"}'
    assert taint in aws and taint in onprem
    assert 'condition=~"AcceleratedHardwareReady|' in aws
    assert "kube_node_status_condition" not in onprem


def test_the_default_window_is_a_week():
    assert fleet_group(aws_config())["rules"][1]["expr"].count("[7d]") == 2


def test_a_stack_without_gpu_pools_records_no_fleet_state():
    # Nothing to measure: no group of empty records, no interval without a pool's MTBF.
    cfg = aws_config(groups=[])
    assert fleet_rules(cfg) == []
    assert checkpoint_rules(cfg) == []
    assert FLEET_GROUP not in {g["name"] for g in prometheus_rule_spec(cfg)["groups"]}
