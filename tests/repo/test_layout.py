"""Guards on the project's shape: what Pulumi reads, how the program loads, what pytest sees."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from model.config.loading import read_yaml
from model.stacks import ROOT
from tests.conftest import check_golden
from tests.helpers.source_graph import GRAPH, circles


def test_pulumi_project_file():
    doc = read_yaml(ROOT / "Pulumi.yaml", "Pulumi.yaml")
    assert doc["name"] == "gpu-platform"
    assert doc["main"] == "infra"
    assert doc["stackConfigDir"] == "stacks"
    assert doc["runtime"]["name"] == "python"
    assert doc["runtime"]["options"]["virtualenv"] == ".venv"


def test_infra_modules_shadow_no_importable_module():
    """The language host puts infra/ itself on sys.path: `infra/platform.py` would replace the
    standard library's `platform` for every library the program imports."""
    taken = set(sys.stdlib_module_names) | set(importlib.metadata.packages_distributions())
    infra = ROOT / "infra"
    ours = {p.stem for p in infra.glob("*.py")} - {"__init__", "__main__"}
    ours |= {p.parent.name for p in infra.glob("*/__init__.py")}
    assert {"composition", "stack_warnings"} <= ours
    assert ours and not ours & taken, ours & taken


def test_the_plan_package_reads_one_model_module():
    """Issue 18: the plan's modules import one model module, which imports only the engine, and
    no module imports back into one that imports it (tests/repo/test_layers.py: no circle)."""
    graph = {
        name.removeprefix("plan."): {d.removeprefix("plan.") for d in deps if d.startswith("plan.")}
        for name, deps in GRAPH.items()
        if name.startswith("plan.")
    }
    assert {"cli", "engine", "model", "diff", "graph", "review", "policy"} <= set(graph)
    assert graph["model"] == {"engine"}, graph["model"]
    # plan/__init__.py re-exports nothing: no module reaches the package's names.
    assert not [m for m, deps in graph.items() if "plan" in deps]
    assert {"graph", "review", "policy", "cli"} <= {
        m for m, deps in graph.items() if "model" in deps
    }
    assert circles(graph) == []


def test_program_runs_the_way_the_language_host_runs_it(tmp_path):
    """runpy.run_path('infra') from the project root, with nothing of ours on sys.path."""
    script = textwrap.dedent(
        f"""
        import os, runpy, sys
        sys.path = [p for p in sys.path if p not in ("", {str(ROOT)!r})]
        import pulumi
        from pulumi.runtime import set_mocks
        from pulumi.runtime.config import set_all_config

        class Mocks(pulumi.runtime.Mocks):
            def new_resource(self, args):
                return args.name + "-id", args.inputs
            def call(self, args):
                return {{}}

        set_mocks(Mocks(), project="gpu-platform", stack="onprem", preview=False)
        set_all_config({{
            "gpu-platform:provider": "existing",
            "gpu-platform:existing": '{{"name": "lab", "kubeconfig_path": "kc"}}',
            "gpu-platform:storage": '{{"shared_data": {{"existing_claim": "shared-data"}}}}',
        }})
        os.chdir({str(ROOT)!r})
        runpy.run_path("infra", run_name="__main__")
        print("ran", "infra" in sys.modules, "components.control.network" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ran", "True", "True"]


def test_every_test_file_is_collected():
    """pytest only collects test_*.py files in packages under tests/: a test written elsewhere,
    or in a folder without an __init__.py, would silently not run or clash by name."""
    for path in (ROOT / "tests").rglob("*.py"):
        if "def test_" in path.read_text():
            assert path.name.startswith("test_"), f"{path} has tests pytest will not collect"
        for folder in path.relative_to(ROOT).parents:
            if folder != Path("."):
                assert (ROOT / folder / "__init__.py").is_file(), f"{folder}: not a package"


def test_shared_reference_data_is_present():
    """The CRD schemas and chart defaults sit beside the repository (../shared): without them the
    checks that read them must fail, never quietly skip."""
    for folder in ("crds", "charts"):
        path = ROOT.parent / "shared" / folder
        assert path.is_dir(), f"{path} is missing: check out ../shared beside the repository"


def test_update_golden_rewrites_the_file_and_still_fails(tmp_path, monkeypatch):
    """A regression must not be blessed by a green run: regenerating shows the diff and fails."""
    golden = tmp_path / "x.txt"
    golden.write_text("old\n")
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    with pytest.raises(AssertionError, match="UPDATE_GOLDEN=1"):
        check_golden(golden, "new\n")
    assert golden.read_text() == "old\n"
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    with pytest.raises(AssertionError, match=r"(?s)rewrote .*-old\n\+new"):
        check_golden(golden, "new\n")
    assert golden.read_text() == "new\n"
    check_golden(golden, "new\n")
