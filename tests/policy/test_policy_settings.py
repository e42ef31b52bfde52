"""The sizing rule reads the stack's floor, not the default 8 (STYLE.md §14): every shipped
stack leaves policy.min_vcpus_per_gpu at 8, so a literal 8 in policy/rules/sizing.py passed.
p5.48xlarge has 192 vCPUs and 8 GPUs (AWS EC2 accelerated computing instance specifications):
24 per GPU."""

from __future__ import annotations

import pytest

from model.config.policy import PolicySettings
from policy.rules import BY_NAME, violations
from tests.helpers.policy_cases import context, find


def flagged(floor: int) -> list[str]:
    ctx = context("prod", settings=PolicySettings(min_vcpus_per_gpu=floor))
    group = find(ctx, "NodeGroup", "prod-h100-ondemand")
    return [v.message for v in violations(BY_NAME["vcpus-per-gpu"], group, ctx)]


@pytest.mark.parametrize("floor", [8, 24])
def test_p5_meets_a_floor_up_to_its_24_vcpus_per_gpu(floor):
    assert flagged(floor) == []


def test_p5_breaks_a_floor_of_25():
    assert flagged(25) == ["p5.48xlarge: 24 vCPUs per GPU < 25"]
