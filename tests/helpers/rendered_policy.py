"""A job the program renders, and the failure policies it carries, asked through the program's own
command (`python -m jobs submit --render-only`, from the repository root) and read from the
JobSet it writes: the image side's tests import nothing of the program, and the harness must
apply the rules `pulumi up` and `jobs submit` ship, not a copy of them."""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def rendered_jobset(stack: str, nodes: int) -> dict:
    """A team job of `nodes` nodes on the stack, as `python -m jobs submit --render-only`
    writes it."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "jobs", "submit", "--stack", stack, "--nodes", str(nodes),
             "--render-only", "--name", "policy", "--out", out, "--", "python", "train.py"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
        (jobset,) = yaml.safe_load_all((Path(out) / "policy" / "job.yaml").read_text())
    return jobset


def rendered_policies() -> tuple[dict, dict]:
    """(the JobSet's failurePolicy, its trainer Job's podFailurePolicy) of a 2-node team job
    on prod, the policy every job the builder renders carries."""
    jobset = rendered_jobset("prod", 2)
    (trainer,) = jobset["spec"]["replicatedJobs"]
    return jobset["spec"]["failurePolicy"], trainer["template"]["spec"]["podFailurePolicy"]
