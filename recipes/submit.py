"""`python -m recipes submit <recipe> --stack <stack> --nodes N`: one recipe as a Kueue-admitted
distributed job on a GPU pool of the stack (components/jobs.py), written to
`out/recipes/<recipe>/job.yaml` (Service, Job) and, with `--apply`, applied with kubectl.

This is the infra side of the recipes: it reads the stack's config as the offline plan does
(infra.plan.engine, then infra.config), so it needs the platform's dependencies, not the image's.
The recipe in the pod gets its settings, `infra.config.recipes.recipe_settings(cfg.recipes,
recipe)`, as JSON in the environment variable RECIPE_SETTINGS; its command stays
`python -m recipes <recipe>`, and its pods get `recipes.grace_period_seconds` to checkpoint on
eviction.

Refused before any job is written, exit 2, every problem at once, each naming its key or flag:
weights not staged (no sha256 in config), no GPU pool that can hold the job (each pool with why),
and for the training recipes a global batch that micro-batches on the job's GPUs with gradient
accumulation cannot reach exactly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from components.jobs import TrainingJobSpec, render, spec_for_pool
from components.storage import SHARED_DATA_MOUNT_PATH
from infra.config import ConfigError, GpuPool, PlatformConfig, config_from_pulumi, stack_file
from infra.config.recipes import RECIPES, WEIGHTS_NEEDED, BatchSettings, recipe_settings
from infra.plan.engine import ROOT, read_project, read_stack_config
from recipes.batch import BatchError, accumulation_steps

SETTINGS_ENV = "RECIPE_SETTINGS"
# recipes/metrics.py serves Prometheus metrics here on each pod's local rank 0.
METRICS_PORT = 8000
RECIPE_LABEL = "gpu-platform/recipe"
# What --render-only puts where recipes.image would go: a registry name that cannot resolve
# (RFC 2606 reserves .invalid), so a job rendered this way can never pull anything.
RENDER_ONLY_IMAGE = "recipes-image-unset.invalid/gpu-platform-recipes:render-only"
# Config section of each recipe (`recipes.<section>.*`).
SECTION = {"prepare": "prepare", "sd-finetune": "sd_finetune", "esrgan": "esrgan"}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class SubmitError(Exception):
    """The job cannot run as asked; `problems` each name a key or flag, the value, the fix."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(f"  - {p}" for p in problems))


# --------------------------------------------------------------------------------- checks


def weights_problems(cfg: PlatformConfig, recipe: str) -> list[str]:
    """A model the recipe reads with no checksum listed is not staged: the pod would stop at
    its first step, after waiting in the queue for its GPUs."""
    settings = cfg.recipes
    return [
        f"recipes.weights.{name}.sha256 is empty: {recipe} reads {name} from shared-data "
        f"{settings.weights_root}/{settings.weights[name].path}, which is not staged; stage it "
        f"there and paste what `python -m recipes checksums <folder>` prints (its sha256: "
        f"mapping) under recipes.weights.{name}"
        for name in WEIGHTS_NEEDED[recipe]
        if not settings.weights[name].sha256
    ]


def pool_problems(
    cfg: PlatformConfig, recipe: str, pool: GpuPool, nodes: int, gpus_per_node: int | None
) -> list[str]:
    """Why `pool` cannot hold the job; empty when it can."""
    found = []
    if pool.sharing.mode == "mig":
        found.append("its GPUs are cut into MIG slices; the recipes train on whole GPUs")
    section = SECTION[recipe]
    need = getattr(cfg.recipes.section(recipe), "min_gpu_memory_gib", None)
    if need is not None and pool.gpu_memory_gib < need:
        found.append(
            f"{pool.gpu_model} with {pool.gpu_memory_gib} GiB, below the {need} GiB "
            f"{recipe} needs (recipes.{section}.min_gpu_memory_gib)"
        )
    if nodes > pool.max_nodes:
        found.append(f"--nodes {nodes}, but it has at most {pool.max_nodes} nodes")
    if gpus_per_node is not None and gpus_per_node > pool.gpus_per_node:
        found.append(
            f"--gpus-per-node {gpus_per_node}, but its nodes have {pool.gpus_per_node} GPUs"
        )
    return found


def choose_pool(
    cfg: PlatformConfig, recipe: str, nodes: int, gpus_per_node: int | None, name: str | None
) -> GpuPool:
    """The pool asked for, or the first of the stack's pools that can hold the job."""
    pools = cfg.gpu_pools
    where = "gpu_node_groups" if cfg.provider == "aws" else "existing.gpu_pools"
    if not pools:
        raise SubmitError([f"the stack has no GPU pool ({where} is empty); {recipe} needs one"])
    if name is not None:
        known = [p.name for p in pools]
        if name not in known:
            raise SubmitError(
                [f"--pool {name!r} is not a GPU pool of this stack; its pools: {', '.join(known)}"]
            )
        pool = next(p for p in pools if p.name == name)
        problems = pool_problems(cfg, recipe, pool, nodes, gpus_per_node)
        if problems:
            raise SubmitError([f"--pool {name!r} cannot hold {recipe}: {'; '.join(problems)}"])
        return pool
    why = {p.name: pool_problems(cfg, recipe, p, nodes, gpus_per_node) for p in pools}
    fitting = [p for p in pools if not why[p.name]]
    if fitting:
        return fitting[0]
    listing = "".join(f"\n      {name}: {'; '.join(problems)}" for name, problems in why.items())
    raise SubmitError([f"no GPU pool of the stack ({where}) can hold {recipe}:{listing}"])


def accumulation(section: str, batch: BatchSettings, gpus: int) -> int:
    """Micro-steps per optimizer step (recipes.batch), or SubmitError naming the settings."""
    try:
        return accumulation_steps(
            batch.global_batch, batch.micro_batch, gpus, keys=f"recipes.{section}."
        )
    except BatchError as error:
        raise SubmitError([str(error)]) from None


def job_name(recipe: str, settings: Mapping, pool: str, nodes: int, gpus: int) -> str:
    """`<recipe>-<10 hex>` of what the job does: submitting the same job twice applies one Job,
    never two; any change of settings, pool or size names a new one."""
    what = json.dumps([settings, pool, nodes, gpus], sort_keys=True)
    return f"{recipe}-{hashlib.sha256(what.encode()).hexdigest()[:10]}"


def check_name(name: str, nodes: int) -> None:
    """A DNS label that still is one as `<name>-<index>`, each pod's hostname."""
    longest = 63 - len(f"-{nodes - 1}")
    if not DNS_LABEL.fullmatch(name) or len(name) > longest:
        raise SubmitError(
            [
                f"--name {name!r}: give a DNS label, lowercase letters, digits and '-', at "
                f"most {longest} characters with {nodes} nodes (pods are <name>-<index>)"
            ]
        )


def run_folder(recipe: str, output: str, name: str) -> list[str]:
    """A training job's checkpoints and report under `<output>/<job name>`: resubmitting the
    same job (same name) resumes it, a job with other settings (another name) starts afresh
    instead of resuming a stranger's checkpoint. prepare's output is the dataset itself, and
    its records say whether a rerun may resume."""
    if recipe == "prepare":
        return []
    return ["--out", f"{SHARED_DATA_MOUNT_PATH}/{output}/{name}"]


def plan_job(
    cfg: PlatformConfig,
    recipe: str,
    nodes: int,
    gpus_per_node: int | None = None,
    pool: str | None = None,
    *,
    name: str | None = None,
) -> tuple[TrainingJobSpec, int | None]:
    """The job and its gradient accumulation (None for prepare, which does not train), or
    SubmitError with every reason it cannot run. An unset recipes.image renders as
    RENDER_ONLY_IMAGE; `main` refuses it unless asked only to render."""
    if recipe not in RECIPES:
        raise SubmitError([f"recipe {recipe!r} is unknown; the recipes: {', '.join(RECIPES)}"])
    if nodes < 1:
        raise SubmitError([f"--nodes {nodes}: give 1 or more"])
    if gpus_per_node is not None and gpus_per_node < 1:
        raise SubmitError([f"--gpus-per-node {gpus_per_node}: give 1 or more"])
    problems = weights_problems(cfg, recipe)
    try:
        chosen = choose_pool(cfg, recipe, nodes, gpus_per_node, pool)
    except SubmitError as error:
        raise SubmitError([*problems, *error.problems]) from None
    # prepare only scores with CLIP: one GPU per node is plenty unless asked for more.
    gpus = gpus_per_node or (1 if recipe == "prepare" else chosen.gpus_per_node)
    steps = None
    section = cfg.recipes.section(recipe)
    if isinstance(section, BatchSettings):
        try:
            steps = accumulation(SECTION[recipe], section, nodes * gpus)
        except SubmitError as error:
            problems += error.problems
    if problems:
        raise SubmitError(problems)
    settings = recipe_settings(cfg.recipes, recipe)
    name = name or job_name(recipe, settings, chosen.name, nodes, gpus)
    check_name(name, nodes)
    scheduled = cfg.scheduling.enabled
    spec = spec_for_pool(
        cfg,
        chosen.name,
        name=name,
        image=cfg.recipes.image or RENDER_ONLY_IMAGE,
        command=["-m", "recipes", recipe, *run_folder(recipe, section.output, name)],
        nodes=nodes,
        gpus_per_node=gpus,
        # Without Kueue there is no queue to name: the job goes straight to the scheduler.
        queue=cfg.recipes.queue if scheduled else None,
        priority_class=cfg.recipes.priority_class if scheduled else None,
        env={SETTINGS_ENV: json.dumps(settings, sort_keys=True)},
        labels={RECIPE_LABEL: recipe},
        metrics_port=METRICS_PORT,
        # Time for an evicted or preempted pod to finish its step and save its checkpoint.
        termination_grace_period_seconds=cfg.recipes.grace_period_seconds,
    )
    return spec, steps


# ------------------------------------------------------------------------------ applying


def kubeconfig(flag: str | None, cfg: PlatformConfig, environ: Mapping[str, str]) -> Path:
    """--kubeconfig, else the stack's own (existing.kubeconfig_path), else KUBECONFIG."""
    if flag:
        path, key = flag, "--kubeconfig"
    elif cfg.existing is not None and cfg.existing.kubeconfig_path:
        path, key = cfg.existing.kubeconfig_path, "existing.kubeconfig_path"
    elif environ.get("KUBECONFIG"):
        path, key = environ["KUBECONFIG"], "KUBECONFIG"
    else:
        raise SubmitError(
            [
                "--apply needs a kubeconfig: pass --kubeconfig PATH or set KUBECONFIG (an AWS "
                "stack's: `pulumi stack output kubeconfig --show-secrets > kc`)"
            ]
        )
    found = Path(path).expanduser()
    if not found.is_file():
        raise SubmitError([f"{key} {path}: no such file; give the kubeconfig of the stack"])
    return found


def kubectl_missing(job_yaml: Path) -> str:
    return (
        "--apply runs kubectl, which is not on PATH: install it "
        f"(https://kubernetes.io/docs/tasks/tools/), or drop --apply and apply {job_yaml} yourself"
    )


def kubectl_apply(kubectl: str, job_yaml: Path, config: Path, context: str | None) -> int:
    argv = [kubectl, "apply", "--kubeconfig", str(config)]
    if context:
        argv += ["--context", context]
    return subprocess.run([*argv, "-f", str(job_yaml)], check=False).returncode


# ---------------------------------------------------------------------------------- CLI


def load_stack(stack: str, root: Path) -> PlatformConfig:
    """The stack's validated config, read as `python -m infra.plan` reads it."""
    values, _ = read_stack_config(read_project(root), stack)
    return config_from_pulumi(values, stack_file(stack))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m recipes submit",
        description="Render a training recipe's job on a GPU pool of the stack to "
        "out/recipes/<recipe>/job.yaml, or apply it with kubectl.",
    )
    p.add_argument("recipe", choices=RECIPES)
    p.add_argument("--stack", required=True, help="stacks/Pulumi.<stack>.yaml")
    p.add_argument("--nodes", type=int, required=True, help="pods, one per node")
    p.add_argument("--gpus-per-node", type=int, help="default: the pool's (prepare: 1)")
    p.add_argument("--pool", help="a GPU pool of the stack; default: the first that fits")
    p.add_argument("--name", help="the Job's name; default: <recipe>-<hash of the job>")
    p.add_argument("--out", type=Path, help="default: out/recipes")
    p.add_argument("--apply", action="store_true", help="kubectl apply the job")
    p.add_argument("--kubeconfig", help="default: existing.kubeconfig_path, else KUBECONFIG")
    p.add_argument(
        "--render-only",
        action="store_true",
        help="render with a placeholder image when recipes.image is unset",
    )
    return p


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    args = parser().parse_args(argv)
    try:
        cfg = load_stack(args.stack, root)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    out = (args.out or root / "out" / "recipes") / args.recipe / "job.yaml"
    problems, steps = [], None
    if args.apply and args.render_only:
        problems.append("--render-only with --apply: a placeholder image cannot run")
    if cfg.recipes.image is None and not args.render_only:
        problems.append(
            "recipes.image is unset: build recipes/Dockerfile, push it and set its digest "
            "(<registry>/<repo>@sha256:<64 hex>), or pass --render-only to only render"
        )
    try:
        spec, steps = plan_job(
            cfg,
            args.recipe,
            args.nodes,
            args.gpus_per_node,
            args.pool,
            name=args.name,
        )
    except SubmitError as error:
        problems += error.problems
    config, kubectl = None, shutil.which("kubectl")
    if args.apply:
        try:
            config = kubeconfig(args.kubeconfig, cfg, os.environ)
        except SubmitError as error:
            problems += error.problems
        if kubectl is None:
            problems.append(kubectl_missing(out))
    if problems:
        print(f"error: {args.recipe} cannot be submitted to {args.stack}:", file=sys.stderr)
        print(SubmitError(problems), file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump_all(render(spec), sort_keys=False))
    size = f"{spec.nodes} node(s) x {spec.gpus} GPU(s) of pool {spec.pool.name}"
    batch = "" if steps is None else f", gradient accumulation {steps}"
    print(f"Wrote {out}: Job {spec.namespace}/{spec.name}, {size}{batch}")
    sharing = spec.pool.sharing
    if sharing.mode in ("time-slicing", "mps"):
        # Not refused (a dev pool is often shared), but the GPU memory the recipe needs is not
        # the job's alone there.
        print(
            f"warning: pool {spec.pool.name} shares each GPU among {sharing.replicas} pods "
            f"({sharing.mode}); the job's GPU memory is not its own",
            file=sys.stderr,
        )
    if config is None or kubectl is None:
        return 0
    context = cfg.existing.context if cfg.existing else None
    return 0 if kubectl_apply(kubectl, out, config, context) == 0 else 1
