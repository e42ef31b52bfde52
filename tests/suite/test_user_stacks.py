"""A user's own stack keeps the suite green: every test that holds for every stack runs once
more, on a copy of the project with two stacks of a user's added: `research`, in another region
with other groups and other sizes, and `ml-prod`, a production stack of another name. What is
checked of a user stack:

- the tests parametrised by stack (`-k research` selects them: their ids name the stack) hold
  on `research` as on the shipped ones, each taking its expectation from the stack's config;
- the tests that loop over every stack in their body (found by their source: a test function,
  not parametrised by stack, that reads STACKS, AWS_STACKS or CEPH_STACKS) hold with both user
  stacks present, so none assumes that only `prod` is production or that every stack is a
  shipped one. Those named `test_shipped_*` loop over SHIPPED_STACKS, or ask only that the
  shipped examples be among the stacks.

The rest of the suite reads no stack file of the user's and already ran once. Collection
plans nothing; the time goes to planning the two user stacks (and, for the loops, the shipped
ones again) in one process."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from model.stacks import ROOT
from tests.conftest import stack_file_config, stack_text
from tests.helpers.hang import HANG_S

RESEARCH = {
    "config": {
        "gpu-platform:aws": {"region": "us-west-2", "zones": ["us-west-2a", "us-west-2b"]},
        "gpu-platform:network": {"vpc_cidr": "10.40.0.0/16"},
        "gpu-platform:cluster": {
            "public_access_cidrs": ["198.51.100.0/24"],
            "admin_principal_arns": ["arn:aws:iam::210987654321:role/research-admins"],
        },
        "gpu-platform:gpu_node_groups": [
            {
                "name": "l40s-efa",
                "instance_types": ["g6e.48xlarge"],
                "efa": True,
                "zone": "us-west-2b",
                "scaling": {"min_size": 0, "max_size": 2},
            },
            {
                "name": "a10g-spot",
                "instance_types": ["g5.12xlarge"],
                "capacity": "spot",
                "scaling": {"min_size": 0, "max_size": 6},
            },
        ],
        "gpu-platform:storage": {
            "fsx": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 2400}
        },
    }
}


# What marks a module that runs tests over every stack (tests/conftest.py).
EVERY_STACK = re.compile(r"\b(STACKS|AWS_STACKS|CEPH_STACKS|stack_plan|aws_plan)\b")
LOOPED = {"STACKS", "AWS_STACKS", "CEPH_STACKS"}
BY_STACK = {"stack", "stack_plan", "aws_plan"}


def ml_prod() -> dict:
    """The shipped prod under another name, in another VPC range and account: a user's own
    production stack."""
    config = stack_file_config("prod")
    config["gpu-platform:network"]["vpc_cidr"] = "10.50.0.0/16"
    config["gpu-platform:cluster"]["admin_principal_arns"] = [
        "arn:aws:iam::210987654321:role/ml-prod-admins"
    ]
    return {"config": config}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("user-stacks")
    project = root / "project"
    # The whole project as a user's clone has it: a package added later is copied too.
    ignore = shutil.ignore_patterns(
        ".git", ".venv*", "__pycache__", ".pytest_cache", ".ruff_cache", "out"
    )
    shutil.copytree(ROOT, project, ignore=ignore)
    (root / "shared").symlink_to(ROOT.parent / "shared")
    (project / "stacks" / "Pulumi.research.yaml").write_text(yaml.safe_dump(RESEARCH))
    (project / "stacks" / "Pulumi.ml-prod.yaml").write_text(stack_text(ml_prod()))
    return project


def every_stack_modules(project) -> list:
    # Only modules that hold every-stack tests are collected: the image side's (torch, the
    # recipes) read no stack file and would only cost the copy its collection time.
    return [
        path
        for path in sorted((project / "tests").rglob("test_*.py"))
        if path.name != "test_user_stacks.py"
        and not path.is_relative_to(project / "tests" / "image")
        and EVERY_STACK.search(path.read_text())
    ]


def module_path(module, project) -> str:
    """`tests/<folders>/test_x.py`, as pytest names a module of the copy."""
    return module.relative_to(project).as_posix()


def looping_tests(module, project) -> list[str]:
    """The module's tests that loop over every stack in their body, as `path::name` (the path
    from the copy's root, as pytest names them)."""
    found = []
    for node in ast.parse(module.read_text()).body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        if {a.arg for a in node.args.args} & BY_STACK:
            continue
        if {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & LOOPED:
            found.append(f"{module_path(module, project)}::{node.name}")
    return found


@pytest.fixture(scope="module")
def run(project) -> tuple[list[str], list[str]]:
    """One pytest run in the copy, so that each stack is planned once for both selections: the
    tests parametrised by stack whose id names `research`, and the tests that loop over every
    stack (selected by name). Returns those looping tests and every test that passed."""
    modules = every_stack_modules(project)
    looping = [test for module in modules for test in looping_tests(module, project)]
    names = " or ".join(test.split("::")[1] for test in looping)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rp", "-x", "-p", "no:cacheprovider", "-p",
         "no:randomly", "-k", f"research or {names}", *(module_path(m, project) for m in modules)],
        cwd=project, capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    failures = result.stdout[result.stdout.find("= FAILURES =") :][:6000]
    assert result.returncode == 0, failures or result.stdout[-4000:] + result.stderr[-2000:]
    return looping, re.findall(r"^PASSED (\S+)", result.stdout, flags=re.MULTILINE)


def test_the_suite_passes_with_a_users_research_stack_in_another_region(run):
    _, passed = run
    on_research = [p for p in passed if "research" in p]
    # `-k research` selected the every-stack tests (about a hundred), not a handful by accident,
    # and among them the vendors' documented settings on the new stack.
    assert len(on_research) >= 90, passed
    assert any(
        p.startswith("tests/components/data/test_documented_settings.py::") for p in on_research
    )


def test_the_tests_that_loop_over_every_stack_pass_with_a_users_stacks(run):
    looping, passed = run
    # Among them the one that assumed only `prod` is production
    # (tests/components/control/test_cluster.py).
    assert (
        "tests/components/control/test_cluster.py::test_only_production_stacks_protect_the_cluster_and_its_key"
        in looping
    )
    assert set(looping) <= {p.split("[")[0] for p in passed}, passed
