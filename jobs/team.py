"""`python -m jobs submit --stack S --team T --nodes N --image <ref@digest> -- <command>`: a
team's own image and command as a Kueue-admitted distributed job on a GPU pool of the stack,
through the job builder the recipes use (components/scheduling/training_job.py): the same queue,
GPUs, fabric devices, hugepages, NCCL ConfigMap, /dev/shm, volumes, metrics port and refusals.
Written to `out/jobs/<job name>/job.yaml` (the Job) and, with `--apply`, applied with kubectl.

The team (`--team`, a `scheduling.teams` name; default the training namespace) decides the
namespace, the LocalQueue (`default` there) and the priority class
(`scheduling.teams[].priority_class` unless `--priority-class`). A team whose ClusterQueue
bursts to MultiKueue workers has its job rendered for the first worker's pools (its node
selector, GPUs, fabric and NCCL ConfigMap), from that worker's stack file, and applied to this
stack's cluster with `spec.managedBy: kueue.x-k8s.io/multikueue`: MultiKueue copies the Job to
the worker, where the team's namespace holds everything its pods name.

The command runs under torchrun with the job's rendezvous, in the container's Python: `python
train.py ARGS`, `train.py ARGS`, `python -m module ARGS` or `-m module ARGS` (python3 too); any
other command (`bash run.sh`) is refused before anything is written. The job keeps its
checkpoints under `<output>/<job name>` on shared-data and is told where in TRAINKIT_CHECKPOINT_DIR,
which trainkit (bootstrap/trainkit) reads: resubmitting the same job (same name) resumes it.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from components.scheduling.job_spec import TrainingJobSpec, spec_for_pool
from components.scheduling.training_job import RESERVED_ENV, TRAINING_METRICS_PORT
from components.selftest.preflight import with_preflight
from contract.env import TRAINKIT_CHECKPOINT_DIR
from contract.mounts import SHARED_DATA_MOUNT_PATH
from jobs.common import (
    POOL_CHOICE,
    RENDER_ONLY_IMAGE,
    GpuMemoryNeed,
    SubmitError,
    add_delivery_flags,
    check_name,
    choose_pool,
    deliver,
    destination,
    job_name,
    load_workers,
    size_problems,
)
from model.config import ConfigError, PlatformConfig
from model.config.recipes import SharedPath
from model.config.scheduling import LOCAL_QUEUE, PRIORITIES
from model.config.selftest import PinnedImage
from model.stacks import ROOT, stack_config

# The checkpoint folder's variable; trainkit reads the same name (bootstrap/trainkit).
# TensorFlow guide, "Use a GPU", "Limiting GPU memory growth": "set the environmental variable
# TF_FORCE_GPU_ALLOW_GROWTH to true" so that TensorFlow does not map all of every GPU's memory
# at start.
TF_MEMORY_GROWTH = ("TF_FORCE_GPU_ALLOW_GROWTH", "true")
FRAMEWORKS = ("pytorch", "tensorflow")
DEFAULT_OUTPUT = "runs/jobs"
# Time between SIGTERM and SIGKILL for an evicted or preempted pod to save its checkpoint, as
# the recipes default to: Kubernetes' own 30 s is too short for a large model's optimizer state.
DEFAULT_GRACE_PERIOD_SECONDS = 300
# Kubernetes API validation (IsEnvVarName): letters, digits, '_', '-' or '.', not starting with
# a digit.
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
JOB_LABEL = "gpu-platform/job"


@dataclass(frozen=True)
class TeamJob:
    """What a team asks for; the stack and the pool decide the rest."""

    image: str | None
    command: list[str]
    nodes: int
    gpus_per_node: int | None = None
    pool: str | None = None
    name: str | None = None
    framework: str = "pytorch"
    env: dict[str, str] = field(default_factory=dict)
    output: str = DEFAULT_OUTPUT
    min_gpu_memory_gib: int | None = None
    # None: the team's (scheduling.teams[].priority_class).
    priority_class: str | None = None
    grace_period_seconds: int = DEFAULT_GRACE_PERIOD_SECONDS
    # A scheduling.teams name; None: the training namespace.
    team: str | None = None


def shape_problem(annotated: object, value: str, flag: str) -> list[str]:
    """The config model's own words for a value of the wrong shape."""
    _, shape = get_args(annotated)
    try:
        shape.check(value)
    except ValueError as error:
        return [f"{flag} {value!r}: {error}"]
    return []


def request_problems(job: TeamJob) -> list[str]:
    """What is wrong with the request itself, before any pool is looked at."""
    found = size_problems(job.nodes, job.gpus_per_node) + command_problems(job.command)
    if job.framework not in FRAMEWORKS:
        found.append(f"--framework {job.framework!r}: one of {', '.join(FRAMEWORKS)}")
    if job.image is not None:
        found += shape_problem(PinnedImage, job.image, "--image")
    found += shape_problem(SharedPath, job.output, "--output")
    for name in job.env:
        if not ENV_NAME.fullmatch(name):
            found.append(
                f"--env {name}: not an environment variable name Kubernetes accepts; use "
                "letters, digits, '_', '-' or '.', not starting with a digit"
            )
        elif name in (*RESERVED_ENV, TRAINKIT_CHECKPOINT_DIR):
            found.append(
                f"--env {name}: the platform sets it for every job"
                + (" (move it with --output)" if name == TRAINKIT_CHECKPOINT_DIR else "")
            )
    if job.min_gpu_memory_gib is not None and job.min_gpu_memory_gib < 1:
        found.append(f"--min-gpu-memory-gib {job.min_gpu_memory_gib}: give 1 or more")
    if job.grace_period_seconds < 30:
        found.append(
            f"--grace-period-seconds {job.grace_period_seconds}: give 30 or more (Kubernetes' "
            "default); a pod needs the time to save its checkpoint"
        )
    return found


# What the launcher runs each worker with: the container's own `python` (contract/launch.py).
INTERPRETERS = ("python", "python3")


# What every refusal of a command says to write instead.
COMMAND_FORMS = "give `python train.py ARGS` or `python -m module ARGS` (python3 too)"


def command_problems(command: list[str]) -> list[str]:
    """Why the launcher could not run `command`; empty when it can. It runs a `.py` script or
    `-m module` in Python, as torchrun does, and refuses anything else (`--no-python`: exit 2,
    the JobSet fails at once), so that every rank's exit code is the launcher's to read
    (contract/exits.py), which a shell between them would hide."""
    if not command:
        return [
            "no command: give it after --, e.g. `-- python train.py --lr 1e-5` (it runs under "
            "torchrun, one process per GPU)"
        ]
    head = command[1:] if command[0] in INTERPRETERS else command
    if not head:
        why = f"no script or -m module after {command[0]}"
    elif head[0] == "-m":
        if len(head) > 1 and not head[1].startswith("-"):
            return []
        why = "-m needs a module"
    elif head[0].startswith("-"):
        why = (
            f"{head[0]} is an option of the interpreter or of torchrun, whose flags the job "
            "sets (for unbuffered output: --env PYTHONUNBUFFERED=1)"
        )
    elif command[0] in INTERPRETERS or head[0].endswith(".py"):
        return []
    elif head[0] == "torchrun":
        why = "the platform's launcher runs torchrun itself, with the job's rendezvous"
    else:
        why = (
            f"{head[0]} is not a Python script (.py) or -m module: the platform's launcher runs "
            "every rank in Python, so that it reads each rank's exit code, and refuses anything "
            "else (torchrun --no-python); run a shell script's steps from a Python script"
        )
    return [f"command {' '.join(command)!r}: {why}; {COMMAND_FORMS}"]


def torchrun_command(command: list[str]) -> list[str]:
    """The script or module as torchrun takes it after its flags, the interpreter stripped:
    the launcher runs it in the container's python (contract/launch.py)."""
    return list(command[1:] if command[0] in INTERPRETERS else command)


def name_prefix(image: str | None) -> str:
    """The image's repository name as a DNS label, which tells a reader whose job it is."""
    repository = (image or RENDER_ONLY_IMAGE).split("@")[0].rsplit("/", 1)[-1].split(":")[0]
    return re.sub(r"[^a-z0-9]+", "-", repository.lower())[:40].strip("-") or "job"


def plan_job(
    cfg: PlatformConfig, job: TeamJob, workers: Mapping[str, PlatformConfig] | None = None
) -> TrainingJobSpec:
    """The job, or SubmitError with every reason it cannot run. No image renders as
    RENDER_ONLY_IMAGE; `main` refuses that unless asked only to render. `workers`: the
    configs of the stack's MultiKueue workers by name, for a team whose queue bursts."""
    problems = request_problems(job)
    if size_problems(job.nodes, job.gpus_per_node):
        raise SubmitError(problems)
    try:
        where = destination(cfg, job.team, workers or {})
    except SubmitError as error:
        raise SubmitError([*problems, *error.problems]) from None
    runs_on, team = where.runs_on, where.team
    need = None
    if job.min_gpu_memory_gib is not None:
        need = GpuMemoryNeed(job.min_gpu_memory_gib, "--min-gpu-memory-gib")
    try:
        choice = choose_pool(where, "the job", job.nodes, job.gpus_per_node, job.pool, need)
    except SubmitError as error:
        raise SubmitError([*problems, *error.problems]) from None
    if problems:
        raise SubmitError(problems)
    chosen = choice.pool
    gpus = job.gpus_per_node or chosen.gpus_per_node
    env = dict(job.env)
    if job.framework == "tensorflow":
        env.setdefault(*TF_MEMORY_GROWTH)
    image = job.image or RENDER_ONLY_IMAGE
    name = job.name or job_name(
        name_prefix(job.image),
        [image, torchrun_command(job.command), env, chosen.name, job.nodes, gpus, job.output],
        job.nodes,
    )
    check_name(name, job.nodes)
    env[TRAINKIT_CHECKPOINT_DIR] = f"{SHARED_DATA_MOUNT_PATH}/{job.output}/{name}"
    scheduled = cfg.scheduling.enabled
    spec = spec_for_pool(
        runs_on,
        chosen.name,
        name=name,
        namespace=team.name,
        managed_by=where.managed_by,
        image=image,
        command=torchrun_command(job.command),
        nodes=job.nodes,
        gpus_per_node=gpus,
        # The LocalQueue the platform declares in the team's namespace; without Kueue the job
        # goes straight to the scheduler.
        queue=LOCAL_QUEUE if scheduled else None,
        priority_class=(job.priority_class or team.priority_class) if scheduled else None,
        env=env,
        labels={JOB_LABEL: name},
        annotations={POOL_CHOICE: choice.why},
        metrics_port=TRAINING_METRICS_PORT,
        termination_grace_period_seconds=job.grace_period_seconds,
    )
    # Checked on the cluster it runs on, in the self-test image that cluster pulls.
    return with_preflight(runs_on, spec)


# ------------------------------------------------------------------------------------- CLI


def env_pair(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE")
    return name, value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jobs submit",
        usage="python -m jobs submit --stack STACK --nodes N --image REF@sha256:... [options] "
        "-- COMMAND [ARG ...]",
        description="Render a team's image and command as a distributed job on a GPU pool of "
        "the stack to out/jobs/<name>/job.yaml, or apply it with kubectl. The command runs "
        "under torchrun, one process per GPU.",
    )
    add_delivery_flags(p)
    p.add_argument("--image", help="<registry>/<repository>@sha256:<64 hex>")
    p.add_argument("--gpus-per-node", type=int, help="default: every GPU of a node of the pool")
    p.add_argument("--framework", choices=FRAMEWORKS, default="pytorch")
    p.add_argument(
        "--env", type=env_pair, action="append", default=[], metavar="KEY=VALUE", help="repeat"
    )
    p.add_argument(
        "--output",
        default=DEFAULT_OUTPUT,
        help=f"checkpoints go to <output>/<name> on shared-data (default {DEFAULT_OUTPUT})",
    )
    p.add_argument("--min-gpu-memory-gib", type=int, help="refuse pools with less per GPU")
    p.add_argument(
        "--priority-class",
        choices=[p.name for p in PRIORITIES],
        help="default: the team's scheduling.teams[].priority_class",
    )
    p.add_argument("--grace-period-seconds", type=int, default=DEFAULT_GRACE_PERIOD_SECONDS)
    p.add_argument("--out", type=Path, help="default: out/jobs")
    p.add_argument(
        "--render-only", action="store_true", help="render with a placeholder image if no --image"
    )
    return p


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser().parse_args(argv[:split])
    job = TeamJob(
        image=args.image,
        command=argv[split + 1 :],
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        pool=args.pool,
        name=args.name,
        framework=args.framework,
        env=dict(args.env),
        output=args.output,
        min_gpu_memory_gib=args.min_gpu_memory_gib,
        priority_class=args.priority_class,
        grace_period_seconds=args.grace_period_seconds,
        team=args.team,
    )
    try:
        cfg = stack_config(args.stack, root)
        workers = load_workers(cfg, root)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    problems, spec = [], None
    if args.image is None and not args.render_only:
        problems.append(
            "--image is missing: push the job's image and give it by digest "
            "(<registry>/<repo>@sha256:<64 hex>), or pass --render-only to only render"
        )
    try:
        spec = plan_job(cfg, job, workers)
    except SubmitError as error:
        problems += error.problems
    out = args.out or root / "out" / "jobs"
    detail = ""
    if spec is not None:
        detail = destination(cfg, job.team, workers).detail
    return deliver(
        args, cfg, "the job", spec, lambda name: out / name / "job.yaml", problems, detail
    )
