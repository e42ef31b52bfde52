"""Where the self-test runs beside a reservation window: a windowed pool's reservation launches
nothing before its window (EC2 User Guide, "Capacity Blocks for ML") and its Kueue flavor has
quota 0 outside it, so neither the post-deploy run `pulumi up` waits on, nor the scheduled runs,
nor a canary node group (which `up` waits on too) may ask for it; its nodes are tested by the
node-join check in the window's warm-up, before the flavor opens. And the stacks that would
break the rule, refused naming the keys."""

from __future__ import annotations

import pytest

from model.config.node_join import canary_pools
from model.config.selftest import selftest_pool
from model.config.selftest_schedule import scheduled_pools
from tests.helpers.bad_stacks import NS, assert_refused, aws, case
from tests.helpers.selftest_stacks import IMAGE
from tests.helpers.varied_stacks import window_config, window_configs

WINDOW = {"start": "2026-12-14T11:30:00Z", "end": "2026-12-16T11:30:00Z", "instances": 2}
BLOCK = {
    "name": "block",
    "instance_types": ["p5.48xlarge"],
    "capacity": "capacity_block",
    "capacity_reservation_id": "cr-0123456789abcdef1",
    "zone": "us-east-1a",
    "reservation_window": WINDOW,
}
ON_DEMAND = {"name": "od", "instance_types": ["p5.48xlarge"], "zone": "us-east-1a"}


def test_the_window_stack_tests_its_on_demand_pool_and_leaves_the_windows_to_the_warm_up():
    # tests/helpers/varied_stacks.py: odcr and block have windows (listed first), p5od none.
    cfg = window_config()
    assert selftest_pool(cfg).name == "p5od"
    assert scheduled_pools(cfg) == ["p5od"]
    assert [p.name for p in canary_pools(cfg)] == ["p5od"]


@pytest.mark.parametrize(("name", "cfg"), window_configs(), ids=[n for n, _ in window_configs()])
def test_no_run_up_or_a_schedule_waits_on_asks_for_a_windowed_pool(name, cfg):
    closed = {g.name for g in cfg.gpu_node_groups if g.reservation_window is not None}
    assert closed, name
    if cfg.selftest.resolved_mode(cfg.production) != "off":
        assert selftest_pool(cfg).name not in closed, name
    assert closed.isdisjoint(scheduled_pools(cfg)), name
    assert closed.isdisjoint(p.name for p in canary_pools(cfg)), name


def stack(*groups: dict, **selftest) -> dict:
    return aws(gpu_node_groups=list(groups), selftest={"image": IMAGE, **selftest})


BAD = [
    case(
        stack(BLOCK),
        f"{NS}:selftest.mode",
        "warn, but every GPU pool has a reservation window (gpu_node_groups[0]",
        "set selftest.mode: off, or add a pool without one",
        id="every-pool-windowed",
    ),
    case(
        stack(ON_DEMAND, BLOCK, pool="block"),
        f"{NS}:selftest.pool",
        "'block' has a reservation_window",
        "valid: a pool without one (od)",
        id="post-deploy-run-on-a-window",
    ),
    case(
        stack(ON_DEMAND, BLOCK, schedule={"pools": ["od", "block"]}),
        f"{NS}:selftest.schedule.pools[1]",
        "'block' has a reservation_window",
        "list pools without one",
        id="scheduled-run-on-a-window",
    ),
    case(
        stack(BLOCK, mode="off"),
        f"{NS}:selftest.schedule.pools",
        "or has a reservation window (gpu_node_groups[0].reservation_window)",
        "set selftest.schedule.enabled: false",
        id="no-pool-to-schedule",
    ),
    case(
        stack(BLOCK, mode="off", schedule={"enabled": False}, node_join={"canary": True}),
        f"{NS}:selftest.node_join.canary",
        "every pool tested on join has a reservation window (gpu_node_groups[0]",
        "Valid: false, or unset",
        id="canary-on-a-window",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_a_run_that_would_wait_on_a_closed_window_is_refused_naming_the_keys(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
