"""A user's own stack keeps the suite green: every test that holds for every stack runs once
more, on a copy of the project with a `research` stack added in another region, with other groups
and other sizes. Those tests are parametrised by stack, so `-k research` selects exactly them; the
rest of the suite reads no stack file of the user's and already ran once."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import yaml

from infra.plan.engine import ROOT

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


def test_the_suite_passes_with_a_users_research_stack_in_another_region(tmp_path):
    project = tmp_path / "project"
    # The whole project as a user's clone has it: a package added later is copied too.
    ignore = shutil.ignore_patterns(
        ".git", ".venv*", "__pycache__", ".pytest_cache", ".ruff_cache", "out"
    )
    shutil.copytree(ROOT, project, ignore=ignore)
    (tmp_path / "shared").symlink_to(ROOT.parent / "shared")
    (project / "stacks" / "Pulumi.research.yaml").write_text(yaml.safe_dump(RESEARCH))
    # Only modules that hold every-stack tests are collected: the image side's (torch, the
    # recipes) read no stack file and would only cost the copy its collection time.
    every_stack = [
        f"tests/{path.name}"
        for path in sorted((project / "tests").glob("test_*.py"))
        if path.name != "test_user_stacks.py" and EVERY_STACK.search(path.read_text())
    ]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rp", "-x", "-p", "no:cacheprovider",
         "-k", "research", *every_stack],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    passed = re.findall(r"^PASSED (\S+)", result.stdout, flags=re.MULTILINE)
    # `-k research` selected the every-stack tests (about a hundred), not a handful by accident,
    # and among them the vendors' documented settings on the new stack.
    assert len(passed) >= 90, result.stdout[-2000:]
    assert any(p.startswith("tests/test_documented_settings.py::") for p in passed)
