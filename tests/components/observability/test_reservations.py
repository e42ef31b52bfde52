"""The reserved GPU-hours records (components/observability/reservations.py) under promtool, on a
stack whose Capacity Block window sits on promtool's clock; and none where no pool has a window."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.observability.alerts import alert_groups, prometheus_rule_spec
from components.observability.reservations import reservation_rules
from model.config import parse_config
from tests.conftest import AWS_STACKS, stack_config
from tests.helpers.alert_stacks import promtool_cases
from tests.helpers.varied_stacks import WINDOW_CONFIG

CASES = Path(__file__).parents[2] / "promtool" / "reservation_rules_test.yaml"
GROUP = "gpu-platform.reservations"


def epoch_window_config():
    """The window stack with the block's window moved to promtool's first hours (its clock starts
    at the Unix epoch), the reservation's out of its reach."""
    raw = {k.split(":", 1)[1]: v for k, v in WINDOW_CONFIG.items()}
    groups = [dict(g) for g in raw["gpu_node_groups"]]
    for g in groups:
        if g["name"] == "block":
            g["reservation_window"] = {
                **g["reservation_window"],
                "start": "1970-01-01T00:00:00Z",
                "end": "1970-01-01T11:30:00Z",
            }
    return parse_config({**raw, "gpu_node_groups": groups}, "window")


def test_reserved_gpus_used_and_paid_under_promtool(tmp_path):
    result = promtool_cases(tmp_path, prometheus_rule_spec(epoch_window_config()), CASES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_records_the_dashboard_row_reads():
    names = [r.name for r in reservation_rules(epoch_window_config())]
    assert names == [
        "gpu_platform_reservation:gpus_allocated:sum",
        "gpu_platform_reservation:gpus_paid:sum",
    ]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_no_reservation_records_without_a_window(stack):
    cfg = stack_config(stack)
    windows = [g for g in cfg.gpu_node_groups if g.reservation_window is not None]
    assert (GROUP in alert_groups(cfg)) == bool(windows)
