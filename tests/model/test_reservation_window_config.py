"""gpu_node_groups[].reservation_window: its defaults, and each bad window refused by the plan with
exit 2, naming the stack file, the key path, the value and what is valid."""

from __future__ import annotations

import pytest

from model.config.reservation import ReservationWindowSettings
from tests.conftest import AWS_STACKS, stack_config
from tests.helpers.bad_stacks import NS, assert_refused, case, group
from tests.helpers.selftest_stacks import IMAGE

START, END = "2026-12-14T11:30:00Z", "2026-12-16T11:30:00Z"
WINDOW = {"start": START, "end": END, "instances": 2}
AT = f"{NS}:gpu_node_groups[0].reservation_window"


def block(scaling: dict | None = None, **window) -> dict:
    return group(
        instance_types=["p5.48xlarge"],
        capacity="capacity_block",
        capacity_reservation_id="cr-0123456789abcdef1",
        zone="us-east-1a",
        reservation_window={k: v for k, v in {**WINDOW, **window}.items() if v is not None},
        **({"scaling": scaling} if scaling else {}),
    )


def test_defaults_leave_the_block_time_to_checkpoint_before_eks_scales_it_down():
    settings = ReservationWindowSettings(start=START, end=END, instances=2)
    # The node-join check's default limit on a node (selftest.node_join.timeout_minutes).
    assert settings.warmup_minutes == 30
    # EKS User Guide capacity-blocks-mng: the group is scaled to 0 forty minutes before the end;
    # the default drain starts 20 minutes before that.
    assert settings.drain_minutes == 60
    assert settings.on_drain == "requeue"


BAD = [
    case(
        group(reservation_window=WINDOW),
        AT,
        "on_demand",
        "needs capacity: reservation or capacity_block",
        id="window-on-on-demand",
    ),
    case(
        block(start="2026-12-14T11:30:00"),
        f"{AT}.start",
        "2026-12-14T11:30:00",
        "2026-12-14T11:30:00Z",
        id="start-without-zone",
    ),
    case(
        block(end="2026-12-16T12:30:00+01:00"),
        f"{AT}.end",
        "2026-12-16T12:30:00+01:00",
        "is not in UTC",
        id="end-in-another-zone",
    ),
    case(
        block(end=START),
        f"{AT}.end",
        "2026-12-14T11:30:00+00:00",
        "is not after start",
        id="end-not-after-start",
    ),
    case(
        block(end="2026-12-16T12:00:00Z"),
        f"{AT}.end",
        "2026-12-16T12:00:00+00:00",
        "every one ends at 11:30 UTC",
        id="block-not-ending-at-11-30",
    ),
    case(block(drain_minutes=40), f"{AT}.drain_minutes", "40", "more than 40", id="drain-too-late"),
    case(
        block(start="2026-12-16T10:30:00Z", warmup_minutes=30, drain_minutes=45),
        f"{AT}.drain_minutes",
        "drain_minutes 45",
        "leave no time open in a window of 60 minutes",
        id="nothing-left-open",
    ),
    case(block(on_drain="evict"), f"{AT}.on_drain", "evict", "'requeue' or 'hold'", id="on-drain"),
    # What was bought is a count of instances: without it nothing says what is paid.
    case(block(instances=None), f"{AT}.instances", "required value is missing", "", id="no-count"),
    case(block(instances=0), f"{AT}.instances", "0", "greater than or equal to 1", id="zero"),
    # A group larger than its reservation: the nodes past the count are never launched.
    case(
        block(scaling={"min_size": 0, "max_size": 3}),
        f"{NS}:gpu_node_groups[0].scaling.max_size",
        "3 is more than the reservation holds, reservation_window.instances 2",
        "a max_size of at most 2",
        id="group-larger-than-its-reservation",
    ),
    # A window the controller could not act on: its pods would have no image to run, or there
    # would be no flavor to open.
    case(block(), AT, "a100", "set selftest.image", id="window-without-the-controllers-image"),
    case(
        {**block(), f"{NS}:selftest": {"image": IMAGE}, f"{NS}:scheduling": {"enabled": False}},
        AT,
        "scheduling is off",
        "enable scheduling or remove the window",
        id="window-without-kueue",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_bad_window_is_refused_naming_key_value_and_what_is_valid(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_shipped_capacity_block_has_a_window(stack):
    """A shipped AWS stack with a Capacity Block shows how one is run: opened after its warm-up,
    drained before AWS reclaims it, its paid-but-idle hours in the estimate. Without a window its
    flavor is open before the block's instances exist and after they are gone."""
    blocks = [g for g in stack_config(stack).gpu_node_groups if g.capacity == "capacity_block"]
    assert [g.name for g in blocks if g.reservation_window is None] == []


def test_some_shipped_stack_has_a_capacity_block():
    # Otherwise the test above holds of nothing.
    assert any(
        g.capacity == "capacity_block" for s in AWS_STACKS for g in stack_config(s).gpu_node_groups
    )
