"""A reservation window's paid-but-idle hours in the cost estimate and the plan's cost section,
with worked examples from the window stack (tests/helpers/varied_stacks.py)."""

from __future__ import annotations

from datetime import date

import pytest

from model.cost import cost_report
from plan.cost_text import format_cost
from tests.conftest import AWS_STACKS, stack_config
from tests.helpers.varied_stacks import window_config

TODAY = date(2026, 12, 5)


def test_each_window_shows_its_paid_and_idle_instance_hours_and_their_price():
    by_group = {w["group"]: w for w in cost_report(window_config(), TODAY)["reservations"]}
    # The Capacity Block: bought for 4 instances, paid for all 4 though its group launches at
    # most 2 (its default max_size): 4 x 48 h = 192 instance-h; idle: the 30-minute warm-up and
    # the 60-minute drain of each, 6 instance-h, at the block's $39.33/instance-h (EC2 Capacity
    # Blocks pricing, p5.48xlarge in us-east-1) = $235.98.
    assert by_group["block"]["instances"] == 4
    assert by_group["block"]["paid_instance_hours"] == 192
    assert by_group["block"]["idle_instance_hours"] == 6
    assert by_group["block"]["idle_usd"] == 235.98
    # The reservation: 2 instances for 8 h = 16; idle 15 + 20 minutes of each, 70 minutes, at
    # p5.48xlarge's on-demand $55.04/h in us-east-1 = $64.21.
    assert by_group["odcr"]["paid_instance_hours"] == 16
    assert by_group["odcr"]["idle_usd"] == 64.21


def test_the_plan_prints_the_idle_hours():
    text = "\n".join(format_cost(cost_report(window_config(), TODAY)))
    assert "reservation window of block" in text
    assert "192 instance-h paid, 6 instance-h paid but idle ($235.98)" in text


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_no_window_no_reservation_lines(stack):
    cfg = stack_config(stack)
    windows = [g for g in cfg.gpu_node_groups if g.reservation_window is not None]
    assert ("reservations" in cost_report(cfg, TODAY)) == bool(windows)
