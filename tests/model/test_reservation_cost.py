"""A reservation window's paid-but-idle hours in the cost estimate and the plan's cost section,
with worked examples from the window stack (tests/helpers/varied_stacks.py)."""

from __future__ import annotations

from datetime import date

import pytest

from model.cost import cost_lines, cost_report
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


def test_a_windowed_groups_line_prices_every_instance_bought_not_the_groups_size():
    """A reservation is billed for every instance bought (EC2 User Guide, "Capacity Blocks for
    ML": paid up front; a capacity reservation bills each reserved instance whether it runs):
    the group's line prices the window's instances at min, desired and max, whatever the
    group launches."""
    lines = {x.item.split(" (")[0]: x for x in cost_lines(window_config(), TODAY)}
    block, odcr = lines["GPU node group block"], lines["GPU node group odcr"]
    # 4 bought x $39.33/instance-h (EC2 Capacity Blocks pricing, p5.48xlarge, us-east-1) =
    # 157.32/h; x 730 h = 114,843.60 a month.
    assert (block.hourly_min, block.hourly_desired, block.hourly_max) == (157.32,) * 3
    assert block.monthly_max == 114843.60
    # 2 reserved x $55.04/h (p5.48xlarge on demand, us-east-1) = 110.08/h; x 730 = 80,358.40.
    assert (odcr.hourly_min, odcr.hourly_max, odcr.monthly_max) == (110.08, 110.08, 80358.40)


def test_the_plan_prints_the_idle_hours():
    text = "\n".join(format_cost(cost_report(window_config(), TODAY)))
    assert "reservation window of block" in text
    assert "192 instance-h paid, 6 instance-h paid but idle ($235.98)" in text


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_no_window_no_reservation_lines(stack):
    cfg = stack_config(stack)
    windows = [g for g in cfg.gpu_node_groups if g.reservation_window is not None]
    assert ("reservations" in cost_report(cfg, TODAY)) == bool(windows)
