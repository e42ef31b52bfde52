"""What the program renders, as the launcher and torch read it and as the pod runs it: every
rendered job's args through torchrun's own parse, and a team's job run as its pod runs it
(STYLE.md §18).

The pod: the `training-launcher` ConfigMap as `python -m plan` writes it, materialised from the
rendered job's volume items with their modes at its mountPath; the image laid out as
bootstrap/Dockerfile lays it (COPY destinations, ENV PYTHONPATH, WORKDIR), with a team's script
on top as a team's own Dockerfile FROM it would add it; every other volume of the pod at its
mountPath; the container's command and environment exactly as `python -m jobs submit` renders
them, paths mapped into the folder, index 0's name and port onto loopback. The checkout is on
no path the processes see: what the worker imports comes from the image's copy. A worker that
imports `contract.env` and `trainkit` (what every trainkit job, recipe and the self-test
import) must start: the launcher's own two-file `contract` package must not shadow the
image's."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from torch.distributed.run import config_from_args

from contract.launch import parse
from tests.helpers.hang import HANG_S
from tests.helpers.image_layout import (
    ROOT,
    ContainerRoot,
    container_env,
    expand,
    host_base,
    image_layout,
    rewrite,
)
from tests.helpers.job_commands import ACCEPTED
from tests.helpers.loopback import free_port
from tests.helpers.program_cli import (
    POD_FIELDS,
    configmaps,
    every_rendered_job,
    submit,
    trainer_pod,
)

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
# Kubernetes API reference, PodSpec `terminationGracePeriodSeconds`: "Defaults to 30 seconds."
KUBERNETES_GRACE_S = 30
# What the launcher keeps of the grace period to exit itself after its workers' time is up
# (components/scheduling/training_job.py, SHUTDOWN_MARGIN_SECONDS).
MARGIN_S = 10
LAUNCHER = ["python", "/opt/gpu-platform/launcher/launch.py"]


def torchrun_args(container: dict) -> list[str]:
    """What the launcher hands torchrun's parse: the rendered words after `python launch.py`,
    `$(VAR)` expanded as Kubernetes does (index 0's completion index)."""
    words = [*container["command"], *container.get("args", [])]
    assert words[:2] == LAUNCHER, words
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    return [expand(w, {**env, "JOB_COMPLETION_INDEX": "0"}) for w in words[2:]]


def torch_shutdown_timeout(container: dict, monkeypatch) -> int:
    """The workers' time after SIGTERM as torch 2.13 reads it, from the rendered args and the
    container's environment: torch/distributed/run.py `--shutdown-timeout` (argparse `env`
    action: PET_SHUTDOWN_TIMEOUT), then LaunchConfig (torch/distributed/launcher/api.py):
    TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30."""
    with monkeypatch.context() as m:
        for name in list(os.environ):
            if name.startswith(("PET_", "TORCH_ELASTIC_")):
                m.delenv(name)
        for entry in container["env"]:
            if "value" in entry:
                m.setenv(entry["name"], entry["value"])
        m.setenv("OMP_NUM_THREADS", "1")
        config, _, _ = config_from_args(parse(torchrun_args(container)))
    return config.shutdown_timeout


def test_every_rendered_job_gives_its_workers_the_grace_period_less_the_launchers_margin(
    monkeypatch,
):
    """Checkpoints on eviction: torchrun's agent SIGKILLs the workers `shutdown_timeout` after
    the pod's SIGTERM, 30 s unless told (torch 2.13 torch/distributed/elastic/agent/server/
    api.py, `_shutdown(e.sigval, timeout=self._shutdown_timeout)`). Every job must give them
    the whole of its pod's grace period but the launcher's own margin, and more than nothing."""
    wrong, seen = [], set()
    for stack, what, job in every_rendered_job():
        pod, container = trainer_pod(job)
        grace = pod.get("terminationGracePeriodSeconds", KUBERNETES_GRACE_S)
        timeout = torch_shutdown_timeout(container, monkeypatch)
        seen.add((grace, timeout))
        if timeout != grace - MARGIN_S or timeout <= 0:
            wrong.append(f"{stack}: {what}: grace {grace} s, torch's shutdown timeout {timeout} s")
    assert not wrong, "\n".join(wrong)
    # Worked examples: the self-test keeps Kubernetes' 30 s; a team's job and a recipe have
    # --grace-period-seconds / recipes.grace_period_seconds, 300 by default.
    assert {(30, 20), (300, 290)} <= seen


@pytest.mark.parametrize("command", list(ACCEPTED), ids=" ".join)
def test_every_command_form_the_cli_accepts_renders_args_the_launcher_accepts(command):
    """docs/training.md's first example among them (`-- python train.py --lr 1e-5`): what
    `python -m jobs submit` renders goes through torchrun's parse and the launcher's own
    refusals (contract/launch.parse), and names the script or module the team gave."""
    submitted = submit(["--stack", STACK, "--nodes", "2"], list(command), "cmd")
    assert submitted.returncode == 0, submitted.stderr
    _, container = trainer_pod(submitted.job)
    args = parse(torchrun_args(container))
    assert (args.module, args.training_script, args.training_script_args) == ACCEPTED[command]


@dataclass(frozen=True)
class Pod:
    process: subprocess.CompletedProcess
    box: ContainerRoot
    # The container's environment as the kubelet built it (container paths).
    env: dict[str, str]

    @property
    def output(self) -> str:
        return self.process.stdout + self.process.stderr


def docs_first_job_command() -> tuple[list[str], list[str]]:
    """docs/training.md's first command block, `python -m jobs submit FLAGS -- COMMAND`, as
    (FLAGS, COMMAND), its placeholder digest filled in."""
    text = (ROOT / "docs/training.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.DOTALL).group(1)
    # A shell joins a line ending in a backslash with the next.
    words = shlex.split(block.replace("\\\n", " ").replace("<64 hex>", "0" * 64))
    assert words[1:4] == ["-m", "jobs", "submit"], words
    split = words.index("--")
    return words[4:split], words[split + 1 :]


def test_the_docs_first_job_command_renders_args_the_launcher_accepts():
    flags, command = docs_first_job_command()
    submitted = submit(flags, command, "docs")
    assert submitted.returncode == 0, submitted.stderr
    _, container = trainer_pod(submitted.job)
    args = parse(torchrun_args(container))
    assert (args.module, args.training_script, args.training_script_args) == (
        False, "train.py", ["--lr", "1e-5"]
    )  # fmt: skip


def run_pod(base: Path, command: list[str]) -> Pod:
    """The job `python -m jobs submit` renders for `command` on one node and one GPU, its pod
    run with the ConfigMaps `python -m plan` writes for its namespace."""
    name = "pod-layout"
    submitted = submit(["--stack", STACK, "--nodes", "1", "--gpus-per-node", "1"], command, name)
    assert submitted.returncode == 0, submitted.stderr
    pod, container = trainer_pod(submitted.job)
    mounted = configmaps(STACK, submitted.job["metadata"]["namespace"])
    context = base / "team-context"
    context.mkdir()
    (context / "train.py").write_text(TRAIN)
    (context / "Dockerfile").write_text(TEAM_DOCKERFILE)
    platform = image_layout(ROOT / "bootstrap/Dockerfile", base=host_base())
    team = image_layout(context / "Dockerfile", context=context, base=platform)
    box = ContainerRoot(base / "root")
    box.install(team)
    box.mount_all(pod, container, mounted)
    env = container_env(container, POD_FIELDS, mounted)
    port = str(free_port())
    command = rewrite(
        box.command(container, env),
        {f"{name}-trainer-0-0.{name}": "127.0.0.1", "=29500": f"={port}"},
    )
    process = subprocess.run(
        command,
        env={**box.env(team.env), **box.env(env), "OMP_NUM_THREADS": "1"},
        cwd=box.path(container.get("workingDir", team.workdir)),
        capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    return Pod(process, box, env)


@pytest.fixture(scope="module")
def pods(tmp_path_factory) -> dict[str, Pod]:
    found = {}
    for command in (["train.py", "--lr", "1e-5"],):
        base = tmp_path_factory.mktemp("pod")
        found[" ".join(command)] = run_pod(base, command)
    return found


def test_a_worker_that_imports_contract_and_trainkit_starts_under_the_rendered_launcher(pods):
    """On main: `ModuleNotFoundError: No module named 'contract.env'`, exit 78."""
    pod = pods["train.py --lr 1e-5"]
    output, box = pod.output, pod.box
    assert pod.process.returncode == 0, output[-4000:]
    assert "argv ['--lr', '1e-5']" in output
    # The image's copies (bootstrap/Dockerfile: COPY contract /opt/platform/contract, COPY
    # bootstrap/trainkit /opt/bootstrap/trainkit), not the ConfigMap's, not the checkout's.
    assert f"contract.env {box.path('/opt/platform/contract/env.py')}" in output
    assert f"trainkit {box.path('/opt/bootstrap/trainkit/__init__.py')}" in output


def test_the_launcher_makes_the_flight_record_folder_on_shared_data(pods):
    """The job's flight-record prefix lies on the shared-data claim, which outlives the pod, and
    its folder exists once the launcher has started: torch writes the dump into it but makes
    only its own default folder."""
    pod = pods["train.py --lr 1e-5"]
    assert pod.process.returncode == 0, pod.output[-4000:]
    prefix = pod.env["TORCH_FR_DUMP_TEMP_FILE"]
    # contract/mounts.py: shared-data is mounted at /mnt/shared-data.
    assert prefix.startswith("/mnt/shared-data/"), prefix
    assert pod.box.path(prefix).is_relative_to(pod.box.claims["shared-data"])
    assert pod.box.path(prefix).parent.is_dir()
