"""Shared fixtures: each stack is planned once under the mock engine, for every worker of a
session and for later sessions with the same sources (tests/helpers/plan_cache.py)."""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from model.config.loading import read_yaml
from model.stacks import ROOT
from model.stacks import stack_config as model_stack_config
from plan.cli import plan_stack
from plan.model import Plan
from plan.render import Rendering, render_plan
from tests.helpers.cpu_selftest import run_cpu_selftest
from tests.helpers.once_per_session import once_per_session
from tests.helpers.plan_cache import DiskCache, plan_key, tree_key

# Every stack file found, shipped or the user's own; tests that hold for every stack take their
# expectations from the stack's config, and those about the shipped examples say so in their name.
STACKS = sorted(p.name.split(".")[1] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
# The example stacks this repository ships: what a `test_shipped_*` test loops over.
SHIPPED_STACKS = ("burst", "dev", "onprem", "prod", "staging")


# Where planned and rendered stacks are kept between processes (git ignores .pytest_cache/;
# `make clean` removes it).
PLAN_CACHE = ROOT / ".pytest_cache" / "plans"


@functools.cache
def _plans() -> DiskCache:
    return DiskCache(PLAN_CACHE, plan_key(ROOT))


@functools.cache
def planned(stack: str) -> Plan:
    return _plans().get(f"plan-{stack}", lambda: plan_stack(stack))


def project_plan(stack: str, stacks: dict[str, dict[str, Any]]) -> Plan:
    """`stack` planned in a project of a test's own stack files (`stacks`: each one's
    `gpu-platform:*` keys, `stack` among them), once per content across the test processes:
    the plan cache keeps it beside the shipped stacks' plans."""
    digest = hashlib.sha256(json.dumps(stacks, sort_keys=True).encode()).hexdigest()[:16]

    def fresh() -> Plan:
        return plan_stack(stack, make_project(Path(tempfile.mkdtemp(prefix=f"{stack}-")), stacks))

    return _plans().get(f"plan-{stack}-{digest}", fresh)


def project_rendered(stack: str, stacks: dict[str, dict[str, Any]]) -> Rendering:
    """project_plan's plan with every Helm release rendered, cached as `rendered` is."""
    digest = hashlib.sha256(json.dumps(stacks, sort_keys=True).encode()).hexdigest()[:16]
    return _plans().get(
        f"rendered-{stack}-{digest}-{tree_key(SHARED_HELM)}",
        lambda: render_plan(project_plan(stack, stacks), (SHARED_HELM,)),
    )


@pytest.fixture
def cli_on_session_plans(monkeypatch):
    """`python -m plan`'s main reads the session's plan of a stack of this project (a copy: it
    adds the rendering's warnings to the plan), so a test of what the command writes, diffs and
    prints plans no stack again; a stack of another root (a test's own project) is planned
    fresh. tests/repo/test_plan_cache.py holds the session's plan equal to a fresh one."""

    def session_plan(stack: str, root: Path = ROOT, _referrers: tuple[str, ...] = ()) -> Plan:
        if root != ROOT:
            return plan_stack(stack, root, _referrers)
        return copy.deepcopy(planned(stack))

    monkeypatch.setattr("plan.cli.plan_stack", session_plan)


# Every chart the platform pins, packaged at the pinned version (../shared/helm/README.md).
SHARED_HELM = ROOT.parent / "shared" / "helm"


@functools.cache
def rendered(stack: str) -> Rendering:
    """Every Helm release of a stack rendered from ../shared/helm, once per key like the plan:
    the key adds the chart archives' bytes."""
    assert SHARED_HELM.is_dir(), f"{SHARED_HELM} is missing: check out ../shared beside the repo"
    name = f"rendered-{stack}-{tree_key(SHARED_HELM)}"
    return _plans().get(name, lambda: render_plan(planned(stack), (SHARED_HELM,)))


def stack_file_config(stack: str) -> dict[str, Any]:
    """The `config:` mapping of the shipped stack file, read as Pulumi reads it (go-yaml v3): a
    fresh copy each call, for tests that write a changed stack of their own."""
    return read_yaml(ROOT / "stacks" / f"Pulumi.{stack}.yaml", stack)["config"]


# The validated config of a stack (of this project, or of another root), read once per process.
stack_config = functools.cache(model_stack_config)


AWS_STACKS = [s for s in STACKS if stack_config(s).provider == "aws"]
CEPH_STACKS = [s for s in STACKS if stack_config(s).storage.ceph is not None]


# STYLE.md §8's tiers (markers in pyproject.toml), by the folder under tests/ a test sits in.
TIERS = {
    "model": "unit",
    "docs": "unit",
    "repo": "unit",
    "tools": "unit",
    "components": "program",
    "controllers": "program",
    "jobs": "program",
    "plan": "program",
    "program": "program",
    "suite": "program",
    "policy": "policy",
    "image": "selftest",
    "cluster": "selftest",
}


# The modules whose one run takes a worker longest (a pytest of its own, real torchrun runs):
# xdist's loadscope hands modules out in collection order, so these go first, and no worker is
# left running one of them alone at the end.
LONGEST_FIRST = (
    "tests/suite/test_user_stacks.py",
    "tests/image/recipes/test_training.py",
    "tests/image/trainkit/test_resilience.py",
    "tests/cluster/test_recovery.py",
    "tests/cluster/test_selftest.py",
    "tests/image/gpu_check/test_gpu_check.py",
    "tests/image/trainkit/test_trainkit.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test gets its folder's tier; a folder missing from TIERS gets none, and
    tests/repo/test_tiers.py names it. The longest modules are moved to the front."""
    tests = ROOT / "tests"
    for item in items:
        tier = TIERS.get(item.path.relative_to(tests).parts[0])
        if tier is not None:
            item.add_marker(tier)
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.relative_to(ROOT).as_posix(), len(rank)))


@pytest.fixture(params=STACKS)
def stack_plan(request) -> Plan:
    return planned(request.param)


@pytest.fixture(params=AWS_STACKS)
def aws_plan(request) -> Plan:
    return planned(request.param)


@pytest.fixture(scope="session")
def cpu_selftest(tmp_path_factory, worker_id):
    """The real self-test on this CPU, every check group (tests/helpers/cpu_selftest.py): run
    once per session, read by the runner's tests and the training group's on every worker."""
    return once_per_session(tmp_path_factory, worker_id, "cpu-selftest", run_cpu_selftest)


def stack_text(doc: dict[str, Any]) -> str:
    """`doc` as a YAML file that Pulumi reads back as the same values: JSON, whose strings are
    always quoted. PyYAML's emitter quotes only what YAML 1.1 would misread, so a string such as
    0o17 or 1e3 would come back from go-yaml's rules as a number."""
    return json.dumps(doc, indent=2) + "\n"


def make_project(tmp_path: Path, stacks: dict[str, dict[str, Any]], project_config=None) -> Path:
    """A project folder that runs this repository's program with other stack files."""
    doc = read_yaml(ROOT / "Pulumi.yaml", "Pulumi.yaml")
    if project_config is not None:
        doc["config"] = project_config
    (tmp_path / "Pulumi.yaml").write_text(stack_text(doc))
    (tmp_path / "stacks").mkdir()
    for name, config in stacks.items():
        (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text(stack_text({"config": config}))
    for package in ("infra", "components", "model", "contract"):
        (tmp_path / package).symlink_to(ROOT / package)
    return tmp_path


def copy_program(tmp_path: Path, main_source: str, stacks: dict[str, dict[str, Any]]) -> Path:
    """A project with its own `infra/__main__.py`, for programs the real one would never be."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "infra", root / "infra", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "infra" / "__main__.py").write_text(main_source)
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "stacks").mkdir()
    for name, config in stacks.items():
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(stack_text({"config": config}))
    return root


# kubernetes-validate reads and decodes the JSON schema files of a kind on every call (most of
# a rendered stack's validation time), and lists and sorts its schema folders twice per call (a
# quarter of what is left); neither changes within a run, so each is read once.
kubernetes_validate.utils.schema_contents = functools.cache(
    kubernetes_validate.utils.schema_contents
)
kubernetes_validate.utils.all_versions = functools.cache(kubernetes_validate.utils.all_versions)


def validate_kubernetes(obj: dict[str, Any], kubernetes_version: str) -> None:
    """Strict validation against the Kubernetes schema of the stack's version."""
    try:
        kubernetes_validate.validate(obj, f"{kubernetes_version}.0", strict=True)
    except kubernetes_validate.ValidationError as error:
        where = "/".join(str(p) for p in error.path)
        first = str(error).splitlines()[0]
        name = f"{obj['kind']} {obj['metadata'].get('name')}"
        raise AssertionError(f"{name}: {where}: {first}") from None


def find(plan: Plan, token: str, name: str):
    matches = [r for r in plan.resources if r.type == token and r.name == name]
    assert len(matches) == 1, f"expected one {token} {name}, found {len(matches)}"
    return matches[0]


def check_golden(golden: Path, rendered: str) -> None:
    """`rendered` must equal the reviewed file. `UPDATE_GOLDEN=1` rewrites the file and still
    fails, showing the diff: a changed golden file goes through review, never through a green
    run."""
    old = golden.read_text() if golden.exists() else ""
    if rendered == old:
        return
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            rendered.splitlines(keepends=True),
            f"{golden.name} (reviewed)",
            f"{golden.name} (rendered)",
        )
    )
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered)
        raise AssertionError(f"rewrote {golden}; review and commit this change:\n{diff}")
    raise AssertionError(
        f"{golden} differs from what the builder renders; if the change is intended, run with "
        f"UPDATE_GOLDEN=1 and review the diff:\n{diff}"
    )
