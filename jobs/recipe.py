"""`python -m jobs recipe <recipe> --stack <stack> --nodes N`: one training recipe (recipes/, the
image side) as a Kueue-admitted distributed job on a GPU pool of the stack
(components/scheduling/training_job.py), written to `out/recipes/<recipe>/job.yaml` (the Job) and,
with `--apply`, applied with kubectl.

The recipe in the pod gets its settings, `model.config.recipes.recipe_settings(cfg.recipes,
recipe)`, as JSON in the environment variable RECIPE_SETTINGS; its command is
`python -m recipes <recipe>`, and its pods get `recipes.grace_period_seconds` to checkpoint on
eviction. `--team <name>` puts the job in that team's namespace through its LocalQueue
`default` (else the training namespace, through `recipes.queue`), rendered for the worker's pools
when the team's queue bursts, as `python -m jobs submit --team` does (jobs/common.destination).

Refused before any job is written, exit 2, every problem at once, each naming its key or flag:
weights not staged (no sha256 in config), no GPU pool that can hold the job (each pool with why),
and for the training recipes a global batch that micro-batches on the job's GPUs with gradient
accumulation cannot reach exactly.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from components.scheduling.job_spec import TrainingJobSpec, spec_for_pool
from components.scheduling.training_job import TRAINING_METRICS_PORT
from components.selftest.preflight import with_preflight

# The one module both sides share: torch-free arithmetic, so the image checks the same rule
# once torchrun has started the ranks (tests/repo/test_import_boundary.py).
from contract.batch import BatchError, accumulation_steps
from contract.env import RECIPE_SETTINGS
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
from model.config.recipe_training import BatchSettings
from model.config.recipes import RECIPES, recipe_settings, weights_needed
from model.config.scheduling import LOCAL_QUEUE
from model.dra import nvlink_problem
from model.stacks import ROOT, stack_config

RECIPE_LABEL = "gpu-platform/recipe"
# Config section of each recipe (`recipes.<section>.*`).
SECTION = {"prepare": "prepare", "sd-finetune": "sd_finetune", "esrgan": "esrgan"}


def weights_problems(cfg: PlatformConfig, recipe: str) -> list[str]:
    """A model the recipe reads with no checksum listed is not staged: the pod would stop at
    its first step, after waiting in the queue for its GPUs."""
    settings = cfg.recipes
    return [
        f"recipes.weights.{name}.sha256 is empty: {recipe} reads {name} from shared-data "
        f"{settings.weights_root}/{settings.weights[name].path}, which is not staged; stage it "
        f"there and paste what `python -m recipes checksums <folder>` prints (its sha256: "
        f"mapping) under recipes.weights.{name}"
        for name in weights_needed(settings, recipe)
        if not settings.weights[name].sha256
    ]


def memory_need(cfg: PlatformConfig, recipe: str) -> GpuMemoryNeed | None:
    need = getattr(cfg.recipes.section(recipe), "min_gpu_memory_gib", None)
    if need is None:
        return None
    return GpuMemoryNeed(need, f"recipes.{SECTION[recipe]}.min_gpu_memory_gib")


def accumulation(section: str, batch: BatchSettings, gpus: int) -> int:
    """Micro-steps per optimizer step (contract.batch), or SubmitError naming the settings."""
    try:
        return accumulation_steps(
            batch.global_batch, batch.micro_batch, gpus, keys=f"recipes.{section}."
        )
    except BatchError as error:
        raise SubmitError([str(error)]) from None


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
    render_only: bool = False,
    team: str | None = None,
    workers: Mapping[str, PlatformConfig] | None = None,
) -> tuple[TrainingJobSpec, int | None]:
    """The job and its gradient accumulation (None for prepare, which does not train), or
    SubmitError with every reason it cannot run. An unset recipes.image renders as
    RENDER_ONLY_IMAGE; `main` refuses it unless asked only to render. A job only rendered,
    never applied, may be rendered before its weights are staged. `team` and `workers` as for
    a team's own job (jobs/common.destination): with a team, its namespace and LocalQueue."""
    if recipe not in RECIPES:
        raise SubmitError([f"recipe {recipe!r} is unknown; the recipes: {', '.join(RECIPES)}"])
    if size_problems(nodes, gpus_per_node):
        raise SubmitError(size_problems(nodes, gpus_per_node))
    problems = [] if render_only else weights_problems(cfg, recipe)
    try:
        where = destination(cfg, team, workers or {})
        need = memory_need(cfg, recipe)
        choice = choose_pool(where, recipe, nodes, gpus_per_node, pool, need)
    except SubmitError as error:
        raise SubmitError([*problems, *error.problems]) from None
    chosen = choice.pool
    section = cfg.recipes.section(recipe)
    # prepare only scores with CLIP: one GPU per node is plenty unless asked for more; a
    # recipe's own size (esrgan: 2) where its node has as many, else the whole node.
    wanted = 1 if recipe == "prepare" else getattr(section, "gpus_per_node", None)
    gpus = gpus_per_node or min(wanted or chosen.gpus_per_node, chosen.gpus_per_node)
    if gpus_per_node is None and nvlink_problem(chosen, nodes, gpus):
        # Several nodes of an NVLink domain share a ComputeDomain, which holds whole nodes: the
        # recipe's own size gives way there, as an asked-for size is refused (pool_problems).
        gpus = chosen.gpus_per_node
    steps = None
    if isinstance(section, BatchSettings):
        try:
            steps = accumulation(SECTION[recipe], section, nodes * gpus)
        except SubmitError as error:
            problems += error.problems
    if problems:
        raise SubmitError(problems)
    settings = recipe_settings(cfg.recipes, recipe)
    name = name or job_name(recipe, [settings, chosen.name, nodes, gpus], nodes)
    check_name(name, nodes)
    scheduled = cfg.scheduling.enabled
    spec = spec_for_pool(
        where.runs_on,
        chosen.name,
        name=name,
        namespace=where.team.name,
        managed_by=where.managed_by,
        image=cfg.recipes.image or RENDER_ONLY_IMAGE,
        command=["-m", "recipes", recipe, *run_folder(recipe, section.output, name)],
        nodes=nodes,
        gpus_per_node=gpus,
        # Without Kueue there is no queue to name: the job goes straight to the scheduler. A
        # team's job goes through the LocalQueue the platform declares in its namespace.
        queue=(LOCAL_QUEUE if team else cfg.recipes.queue) if scheduled else None,
        priority_class=cfg.recipes.priority_class if scheduled else None,
        env={RECIPE_SETTINGS: json.dumps(settings, sort_keys=True)},
        labels={RECIPE_LABEL: recipe},
        annotations={POOL_CHOICE: choice.why},
        metrics_port=TRAINING_METRICS_PORT,
        # Time for an evicted or preempted pod to finish its step and save its checkpoint.
        termination_grace_period_seconds=cfg.recipes.grace_period_seconds,
    )
    return with_preflight(where.runs_on, spec), steps


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jobs recipe",
        description="Render a training recipe's job on a GPU pool of the stack to "
        "out/recipes/<recipe>/job.yaml, or apply it with kubectl.",
    )
    p.add_argument("recipe", choices=RECIPES)
    add_delivery_flags(p)
    p.add_argument(
        "--gpus-per-node",
        type=int,
        help="default: the recipe's gpus_per_node (esrgan: 2; prepare: 1), else the pool's; "
        "the whole node for several nodes of an NVLink domain (GB200)",
    )
    p.add_argument("--out", type=Path, help="default: out/recipes")
    p.add_argument(
        "--render-only",
        action="store_true",
        help="render with a placeholder image when recipes.image is unset",
    )
    return p


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    args = parser().parse_args(argv)
    try:
        cfg = stack_config(args.stack, root)
        workers = load_workers(cfg, root)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    problems, spec, steps = [], None, None
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
            render_only=args.render_only,
            team=args.team,
            workers=workers,
        )
    except SubmitError as error:
        problems += error.problems
    if args.render_only and not problems:
        for unstaged in weights_problems(cfg, args.recipe):
            print(f"warning: rendered only: {unstaged}", file=sys.stderr)
    job_yaml = (args.out or root / "out" / "recipes") / args.recipe / "job.yaml"
    batch = "" if steps is None else f", gradient accumulation {steps}"
    if spec is not None:
        batch += destination(cfg, args.team, workers).detail
    return deliver(args, cfg, args.recipe, spec, lambda _: job_yaml, problems, batch)
