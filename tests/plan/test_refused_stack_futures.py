"""A refused stack's error reaches the caller once, and nothing else of it is reported: the SDK's
futures that also hold it, dropped unread, used to be reported by asyncio from the garbage
collector ("Future exception was never retrieved"), whose traceback formatting parses source
in CPython 3.11 and so failed an unrelated test's ast.parse in the same process (cpython
gh-106905: "SystemError: AST constructor recursion depth mismatch"; plan/engine.py
_unread_refusal)."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from model.config import ConfigError
from plan.cli import plan_stack
from plan.engine import _unread_refusal
from tests.conftest import make_project, stack_file_config


def test_a_refused_stack_leaves_no_future_reported_unread(tmp_path, caplog):
    # onprem bursts to a worker stack whose scheduling lacks the team's LocalQueue: the
    # manager's contract check refuses it while the program runs (its futures hold the error).
    burst = stack_file_config("burst")
    burst["gpu-platform:scheduling"] = {"cluster_queues": [{"name": "burst"}]}
    root = make_project(tmp_path, {"onprem": stack_file_config("onprem"), "burst": burst})
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        # The SDK's settings hold the first run's futures until the next run replaces them.
        for _ in range(2):
            with pytest.raises(ConfigError):
                plan_stack("onprem", root)
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_an_error_nothing_raised_is_still_reported(caplog):
    # The handler forgets only the error that stopped the program, not asyncio's other reports.
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            stopped = ConfigError("stacks/Pulumi.t.yaml", ["stopped the program"])
            other = RuntimeError("an error nothing raised")
            _unread_refusal([stopped], loop, {"message": "unread", "exception": stopped})
            _unread_refusal([stopped], loop, {"message": "unread", "exception": other})
    finally:
        loop.close()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == ["unread"]
