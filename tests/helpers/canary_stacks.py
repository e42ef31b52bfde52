"""Stacks whose GPU-stack changes roll through a canary (selftest.node_join.canary): every AWS
stack this repository ships and the capacity-kinds stack (a group of every capacity kind), each
given a self-test image, which turns the node-join check and with it the canary on (prod and
burst ship one; the others would leave the canary's tests no pool to read). The capacity-kinds
stack's reserved groups have no window, so each kind gets its canary."""

from __future__ import annotations

import functools

from model.config import PlatformConfig, parse_config
from plan.model import Plan
from tests.conftest import AWS_STACKS, project_plan, stack_file_config
from tests.helpers.bad_stacks import NS
from tests.helpers.selftest_stacks import FSX, IMAGE
from tests.helpers.varied_stacks import CAPACITY_CONFIG, CAPACITY_STACK

CANARY_STACKS = (*AWS_STACKS, CAPACITY_STACK)


def canary_config(stack: str) -> dict:
    """`stack`'s config with the self-test image set."""
    if stack in AWS_STACKS:
        config = stack_file_config(stack)
    else:
        # The self-test's runs keep their reports on shared-data, which the capacity-kinds
        # stack leaves out.
        config = {**CAPACITY_CONFIG, f"{NS}:storage": FSX}
    config[f"{NS}:selftest"] = {**config.get(f"{NS}:selftest", {}), "image": IMAGE}
    return config


@functools.cache
def canary_plan(stack: str) -> Plan:
    name = canary_env_and_config(stack)[0]
    return project_plan(name, {name: canary_config(stack)})


def canary_env_and_config(stack: str) -> tuple[str, PlatformConfig]:
    """The name `stack`'s canary variant is planned under, and its validated config."""
    name = f"{stack}-roll"
    raw = {k.removeprefix(f"{NS}:"): v for k, v in canary_config(stack).items()}
    return name, parse_config(raw, f"Pulumi.{name}.yaml")
