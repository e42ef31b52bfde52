"""What the program writes, for the image side's tests, which import nothing of the program
(tests/repo/test_import_boundary.py): its own commands run as a user runs them, from the
repository root in this interpreter, and their output read back.

- `plan_manifests(stack)`: the objects `python -m plan <stack>` writes to manifests/, once per
  process;
- `submit(flags, command)`: `python -m jobs submit --render-only ... -- COMMAND`, its exit code,
  its error output and the JobSet it wrote;
- `every_rendered_job()`: every job the platform and `python -m jobs` render on every stack,
  (stack, what, object), as the controller models sweep them (tests/helpers/rendered_jobs.py);
- `trainer_pod(job)`, `configmaps(stack, namespace)`: a rendered job's trainer pod and
  container, and the ConfigMaps the plan writes in a namespace (what its pods mount and read);
  `POD_FIELDS`, what the downward API gives its first pod.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.hang import HANG_S

ROOT = Path(__file__).resolve().parents[2]
# What the downward API gives a rendered job's pod of index 0, before any restart: the values of
# its `valueFrom` variables (tests/helpers/image_layout.py, container_env).
POD_FIELDS = {
    "JOB_COMPLETION_INDEX": "0",
    "NODE_NAME": "node-0",
    "POD_NAME": "pod-0",
    "POD_NAMESPACE": "training",
    "CPU_REQUEST_MILLICORES": "1000",
    "CPU_LIMIT_MILLICORES": "1000",
    "MEMORY_REQUEST_MIB": "16384",
    "MEMORY_LIMIT_MIB": "16384",
    "JOBSET_RESTART_ATTEMPT": "",
}


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S
    )


@functools.cache
def plan_manifests(stack: str) -> tuple[dict[str, Any], ...]:
    out = Path(tempfile.mkdtemp(prefix=f"plan-{stack}-"))
    run = _run(["-m", "plan", stack, "--out", str(out), "--quiet"])
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return tuple(
        doc
        for path in sorted((out / "manifests").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    )


def configmaps(stack: str, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o
        for o in plan_manifests(stack)
        if o["kind"] == "ConfigMap" and o["metadata"]["namespace"] == namespace
    }


def trainer_pod(job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JobSet's trainer pod or a batch Job's (a CronJob's template), and its container."""
    if job["kind"] == "JobSet":
        job = job["spec"]["replicatedJobs"][0]["template"]
    pod = job["spec"]["template"]["spec"]
    return pod, next(c for c in pod["containers"] if c["name"] == "trainer")


@dataclass(frozen=True)
class Submitted:
    returncode: int
    stderr: str
    # The JobSet written, None when refused.
    job: dict[str, Any] | None


def submit(flags: list[str], command: list[str], name: str = "job") -> Submitted:
    """`python -m jobs submit --render-only --name NAME FLAGS -- COMMAND`."""
    with tempfile.TemporaryDirectory() as out:
        run = _run(
            ["-m", "jobs", "submit", "--render-only", "--name", name, "--out", out,
             *flags, "--", *command]
        )  # fmt: skip
        written = Path(out) / name / "job.yaml"
        job = yaml.safe_load(written.read_text()) if written.is_file() else None
    return Submitted(run.returncode, run.stderr, job)


@functools.cache
def every_rendered_job() -> tuple[tuple[str, str, dict[str, Any]], ...]:
    run = _run(["-m", "tests.helpers.rendered_jobs"])
    assert run.returncode == 0, run.stderr[-3000:]
    return tuple((stack, what, job) for stack, what, job in json.loads(run.stdout))
