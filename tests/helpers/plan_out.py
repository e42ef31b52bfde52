"""What `python -m plan <stack>` writes, laid out as it writes it (out/<stack>/manifests/*.yaml
and rendered/<release>.yaml, plan/cli.py `write_outputs`, plan/render.py `write_rendered`),
from the session's plan and rendering: for tests that read the plan as a cluster gets it, not
the Python that made it. Kept beside the plan cache under the same key, so a folder is written
once for every process and session with the same sources.

`with_selftest` is a stack as a user plans it once they turn the self-test on (an AWS stack
runs it only with `selftest.image` set): the jobs it then runs must be admitted too.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from model.config.selftest import runs
from model.stacks import ROOT
from plan.cli import plan_stack, write_outputs
from plan.render import render_plan, write_rendered
from tests.conftest import (
    PLAN_CACHE,
    SHARED_HELM,
    STACKS,
    make_project,
    planned,
    rendered,
    stack_config,
    stack_file_config,
)
from tests.helpers.plan_cache import DiskCache, plan_key, tree_key

# A pinned image as a user who turns the self-test on sets it (docs/selftest.md).
SELFTEST_IMAGE = "registry.example.com/gpu-platform/selftest@sha256:" + "0" * 64


@functools.cache
def _cache() -> DiskCache:
    return DiskCache(PLAN_CACHE, plan_key(ROOT))


def _written(name: str, write) -> Path:
    def compute() -> Path:
        folder = _cache().here / name
        write(folder)
        return folder

    return _cache().get(f"{name}-{tree_key(SHARED_HELM)}", compute)


@functools.cache
def stack_out(stack: str) -> Path:
    """out/<stack> of a shipped stack, as `python -m plan <stack>` writes it."""

    def write(folder: Path) -> None:
        write_outputs(planned(stack), folder)
        write_rendered(rendered(stack), folder)

    return _written(f"out-{stack}", write)


@functools.cache
def with_selftest(stack: str) -> Path:
    """out/<stack> of the stack with `selftest.image` set where it does not run the self-test;
    the stack's own folder where it does."""
    if runs(stack_config(stack)):
        return stack_out(stack)

    def write(folder: Path) -> None:
        config = stack_file_config(stack)
        selftest = dict(config.get("gpu-platform:selftest") or {})
        config["gpu-platform:selftest"] = {**selftest, "image": SELFTEST_IMAGE}
        # Every stack beside it: a MultiKueue manager plans its workers first.
        stacks = {s: stack_file_config(s) for s in STACKS}
        (folder / "project").mkdir(parents=True, exist_ok=True)
        root = make_project(folder / "project", {**stacks, stack: config})
        plan = plan_stack(stack, root)
        write_outputs(plan, folder)
        write_rendered(render_plan(plan, (SHARED_HELM,)), folder)

    return _written(f"out-{stack}-with-selftest", write)


@functools.cache
def manifests(out: Path) -> tuple[dict[str, Any], ...]:
    """Every object of `out`/manifests, as the plan wrote it."""
    return tuple(
        yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        for path in sorted((out / "manifests").glob("*.yaml"))
    )


def fixture_out(stack: str, config: dict[str, Any]) -> Path:
    """out/<stack> of a test's own stack file (`config`: its `gpu-platform:*` keys), planned
    and rendered as `python -m plan` writes it, once per cache key and content."""

    def write(folder: Path) -> None:
        (folder / "project").mkdir(parents=True, exist_ok=True)
        plan = plan_stack(stack, make_project(folder / "project", {stack: config}))
        write_outputs(plan, folder)
        write_rendered(render_plan(plan, (SHARED_HELM,)), folder)

    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    return _written(f"out-{stack}-{digest}", write)
