"""A team's job run as its pod runs it (STYLE.md §18): the `training-launcher` ConfigMap as the
plan renders it, materialised from the rendered job's volume items with their modes at its
mountPath; the image laid out as bootstrap/Dockerfile lays it (COPY destinations, ENV
PYTHONPATH, WORKDIR), with a team's script on top as a team's own Dockerfile FROM it would add
it; every other volume of the pod at its mountPath; the container's command and environment
exactly as rendered, paths mapped into the folder, index 0's name and port onto loopback. The
checkout is on no path the processes see: what the worker imports comes from the image's copy.

A worker that imports `contract.env` and `trainkit` (what every trainkit job, recipe and the
self-test import) must start: the launcher's own two-file `contract` package must not shadow
the image's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from components.scheduling.training_job import render
from jobs.team import TeamJob, plan_job
from tests.conftest import planned, stack_config
from tests.helpers.hang import HANG_S
from tests.helpers.image_layout import (
    ROOT,
    ContainerRoot,
    container_env,
    host_base,
    image_layout,
    rewrite,
)
from tests.helpers.loopback import free_port

STACK = "onprem"
TRAIN = """\
import os, sys
import contract.env
import trainkit

print("argv", sys.argv[1:], flush=True)
print("contract.env", contract.env.__file__, flush=True)
print("trainkit", trainkit.__file__, flush=True)
"""
# A team's image: its script on top of the platform's image, where it starts.
TEAM_DOCKERFILE = """\
ARG BASE
FROM ${BASE}
COPY train.py /opt/team/train.py
WORKDIR /opt/team
"""
# What the downward API gives this one pod (the Job's index 0, no restart yet).
FIELDS = {
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


def trainer_pod(jobset: dict) -> tuple[dict, dict]:
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return pod, next(c for c in pod["containers"] if c["name"] == "trainer")


def run_pod(base: Path, command: list[str]) -> tuple[subprocess.CompletedProcess, ContainerRoot]:
    cfg = stack_config(STACK)
    spec = plan_job(cfg, TeamJob(image=None, command=command, nodes=1, gpus_per_node=1))
    jobset = render(spec)[0]
    pod, container = trainer_pod(jobset)
    namespace = jobset["metadata"]["namespace"]
    configmaps = {
        o["metadata"]["name"]: o
        for o in planned(STACK).kubernetes_objects()
        if o["kind"] == "ConfigMap" and o["metadata"]["namespace"] == namespace
    }
    context = base / "team-context"
    context.mkdir()
    (context / "train.py").write_text(TRAIN)
    (context / "Dockerfile").write_text(TEAM_DOCKERFILE)
    platform = image_layout(ROOT / "bootstrap/Dockerfile", base=host_base())
    team = image_layout(context / "Dockerfile", context=context, base=platform)
    box = ContainerRoot(base / "root")
    box.install(team)
    box.mount_all(pod, container, configmaps)
    env = container_env(container, FIELDS, configmaps)
    port = str(free_port())
    command = rewrite(
        box.command(container, env),
        {f"{spec.name}-trainer-0-0.{spec.name}": "127.0.0.1", "=29500": f"={port}"},
    )
    process = subprocess.run(
        command,
        env={**box.env(team.env), **box.env(env), "OMP_NUM_THREADS": "1"},
        cwd=box.path(container.get("workingDir", team.workdir)),
        capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    return process, box


@pytest.fixture(scope="module")
def pods(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, ContainerRoot]]:
    found = {}
    for command in (["train.py", "--lr", "1e-5"],):
        base = tmp_path_factory.mktemp("pod")
        found[" ".join(command)] = run_pod(base, command)
    return found


def test_a_worker_that_imports_contract_and_trainkit_starts_under_the_rendered_launcher(pods):
    process, box = pods["train.py --lr 1e-5"]
    output = process.stdout + process.stderr
    assert process.returncode == 0, output[-4000:]
    assert "argv ['--lr', '1e-5']" in output
    # The image's copies (bootstrap/Dockerfile: COPY contract /opt/platform/contract, COPY
    # bootstrap/trainkit /opt/bootstrap/trainkit), not the ConfigMap's, not the checkout's.
    assert f"contract.env {box.path('/opt/platform/contract/env.py')}" in output
    assert f"trainkit {box.path('/opt/bootstrap/trainkit/__init__.py')}" in output
