"""scheduling.jobs: the restart limit of every JobSet the platform renders and trainkit's hang
watchdog bounds, with their defaults, and bad values refused naming the stack file, the key,
the value and what is valid."""

from __future__ import annotations

import pytest

from model.config.scheduling import JobSettings
from tests.conftest import STACKS, stack_config
from tests.helpers.bad_stacks import NS, assert_refused, existing

KEY = f"{NS}:scheduling.jobs"


def test_the_defaults_are_three_restarts_a_factor_of_ten_and_half_an_hour():
    assert JobSettings() == JobSettings(max_restarts=3, hang_factor=10, hang_ceiling_seconds=1800)
    for stack in STACKS:
        assert stack_config(stack).scheduling.jobs == JobSettings()


@pytest.mark.parametrize(
    ("field", "value", "valid"),
    [
        ("max_restarts", -1, "greater than or equal to 0"),
        ("max_restarts", 101, "less than or equal to 100"),
        ("max_restarts", "three", "valid integer"),
        ("hang_factor", 1, "greater than or equal to 2"),
        ("hang_ceiling_seconds", 30, "greater than or equal to 60"),
        ("hang_ceiling_seconds", 86401, "less than or equal to 86400"),
    ],
)
def test_a_bad_value_is_refused_with_its_key_and_what_is_valid(
    tmp_path, monkeypatch, capsys, field, value, valid
):
    stack = existing(scheduling={"jobs": {field: value}})
    assert_refused(tmp_path, monkeypatch, capsys, stack, f"{KEY}.{field}", str(value), valid)


def test_a_misspelt_key_is_refused_with_the_one_meant(tmp_path, monkeypatch, capsys):
    stack = existing(scheduling={"jobs": {"max_restart": 3}})
    path, meant = f"{KEY}.max_restart", "did you mean 'max_restarts'"
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, "unknown key", meant)
