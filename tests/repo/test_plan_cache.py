"""The plans the tests share through the disk (tests/helpers/plan_cache.py): a changed source,
stack file, installed provider or date makes a new key, so no test reads a plan of other
sources, and what the cache hands back is the plan a fresh run makes."""

from __future__ import annotations

import pickle
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import pytest

from plan import engine
from plan.cli import main, plan_stack
from tests.conftest import PLAN_CACHE, ROOT, make_project, planned, stack_file_config
from tests.helpers.plan_cache import SOURCE_FILES, SOURCE_FOLDERS, DiskCache, plan_key

VERSIONS = {"pulumi": "3.272.0", "pulumi-aws": "7.51.1"}


def copy_sources(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for folder in SOURCE_FOLDERS:
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in SOURCE_FILES:
        shutil.copy(ROOT / name, root / name)
    return root


def test_the_key_changes_with_a_source_a_stack_file_a_new_module_or_a_provider_version(tmp_path):
    root = copy_sources(tmp_path)
    key = plan_key(root, VERSIONS)
    assert plan_key(root, VERSIONS) == key
    (root / "docs").mkdir()
    (root / "docs" / "notes.md").write_text("not read by the plan\n")
    assert plan_key(root, VERSIONS) == key

    source = root / "components" / "data" / "nodes.py"
    source.write_text(source.read_text() + "\n# one more line\n")
    after_source = plan_key(root, VERSIONS)
    assert after_source != key

    stack = root / "stacks" / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("config:", "config:  ", 1))
    after_stack = plan_key(root, VERSIONS)
    assert after_stack not in {key, after_source}

    assert plan_key(root, {**VERSIONS, "pulumi-aws": "7.52.0"}) != after_stack

    (root / "model" / "extra.py").write_text("")
    assert plan_key(root, VERSIONS) != after_stack
    # The plan reads the date (a minor's support window, the cost's items).
    assert plan_key(root, VERSIONS, date(2026, 12, 2)) != plan_key(
        root, VERSIONS, date(2026, 12, 3)
    )


def test_the_cached_plan_equals_a_fresh_one():
    stack = "dev"
    planned(stack)  # stores it, or finds it stored by another process
    cache = DiskCache(PLAN_CACHE, plan_key(ROOT))
    on_disk = pickle.loads(cache.path(f"plan-{stack}").read_bytes())
    fresh = plan_stack(stack)
    assert on_disk == fresh
    assert len(fresh.resources) > 100


def test_callers_asking_at_once_compute_a_value_once_and_older_keys_go(tmp_path):
    """Four callers ask for one name together, each through its own open lock file as separate
    processes would (flock locks an open file, not a process): one computes, the others wait and
    read it. The folder of another key, older sources, is removed."""
    (tmp_path / "old-key").mkdir()
    computed = []
    start = threading.Barrier(4)

    def compute() -> str:
        computed.append(1)
        time.sleep(0.2)  # the others are at the lock by now
        return "value"

    def ask() -> str:
        start.wait()
        return DiskCache(tmp_path, "new-key").get("stack", compute)

    with ThreadPoolExecutor(4) as pool:
        values = list(pool.map(lambda _: ask(), range(4)))
    assert values == ["value"] * 4
    assert computed == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folders.lock", "new-key"]


class ProgramRun(Exception):
    """Raised where the program would run: planning was asked for."""


def test_the_cli_on_the_session_plans_runs_no_program_for_this_projects_stack(
    cli_on_session_plans, monkeypatch, tmp_path, capsys
):
    planned("dev")

    def run(*_args, **_kwargs):
        raise ProgramRun

    monkeypatch.setattr(engine, "record", run)
    assert main(["dev", "--quiet", "--out", str(tmp_path / "dev")]) == 0
    # --quiet: dev's warnings and advisories a line each, then the summary.
    assert capsys.readouterr().out.splitlines()[-1].startswith("Planned dev: ")
    # A stack of another root (a test's own project) is planned fresh.
    (tmp_path / "other").mkdir()
    other = make_project(tmp_path / "other", {"dev": stack_file_config("dev")})
    monkeypatch.setattr("plan.cli.ROOT", other)
    with pytest.raises(ProgramRun):
        main(["dev", "--quiet", "--out", str(other / "out")])
