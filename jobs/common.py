"""What every `python -m jobs` submission shares: reading the stack, choosing a pool that can hold
the job (or saying why none can), naming the job, writing the rendered objects and submitting
them (jobs/submission.py).
A recipe's job and a team's own job are refused with the same messages, since both come from
here."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from components.scheduling.job_claims import applied_beside
from components.scheduling.job_names import longest_name, name_problem
from components.scheduling.job_spec import TrainingJobSpec
from components.scheduling.multikueue import MANAGED_BY
from components.scheduling.training_job import render
from jobs.kubectl import Kubectl
from jobs.submission import submit_to, workload
from model.config import GpuPool, PlatformConfig, stack_file
from model.config.multikueue import NOT_COPIED
from model.config.pools import MIG_TAKES_NO_DISTRIBUTED_JOB
from model.config.scheduling import MULTI_NODE_FABRICS, TeamSettings
from model.cost import node_hourly
from model.dra import nvlink_problem
from model.stacks import stack_config

# What --render-only puts where the image would go: a registry name that cannot resolve
# (RFC 2606 reserves .invalid), so a job rendered this way can never pull anything.
RENDER_ONLY_IMAGE = "image-unset.invalid/gpu-platform-job:render-only"


class SubmitError(Exception):
    """The job cannot run as asked; `problems` each name a key or flag, the value, the fix."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class GpuMemoryNeed:
    """The GPU memory a job needs, and the key or flag that says so (for the message)."""

    gib: int
    key: str


# ---------------------------------------------------------------------------------- checks


def size_problems(nodes: int, gpus_per_node: int | None) -> list[str]:
    found = []
    if nodes < 1:
        found.append(f"--nodes {nodes}: give 1 or more")
    if gpus_per_node is not None and gpus_per_node < 1:
        found.append(f"--gpus-per-node {gpus_per_node}: give 1 or more")
    return found


def pool_problems(
    pool: GpuPool,
    what: str,
    nodes: int,
    gpus_per_node: int | None,
    need: GpuMemoryNeed | None,
    dest: Destination | None = None,
) -> list[str]:
    """Why `pool` cannot hold the job; empty when it can. `dest`: the team's destination, for
    a job MultiKueue would dispatch to a worker's pool."""
    found = []
    if dest is not None and dest.instance_type and dest.instance_type not in pool.instance_types:
        found.append(
            f"its nodes are {', '.join(pool.instance_types)} in {dest.worker_file}, but team "
            f"{dest.team.name}'s queue bursts to nodes of {dest.instance_type} "
            f"({dest.queue_key}.instance_type, the only nodes its flavor selects)"
        )
    beside = applied_beside(pool, nodes)
    if dest is not None and dest.worker is not None and beside:
        found.append(
            f"its job is applied with a {' and a '.join(beside)} beside the JobSet "
            f"({beside_reason(pool, beside)} in {dest.worker_file}), and {NOT_COPIED}, so on "
            f"worker {dest.worker} its pods would wait for {'it' if len(beside) == 1 else 'them'}; "
            f"team {dest.team.name}'s queue bursts there ({dest.queue_key}): give another "
            "pool of the worker, or a team whose queue does not burst"
        )
    if pool.sharing.mode == "mig":
        found.append(MIG_TAKES_NO_DISTRIBUTED_JOB)
    if need is not None and pool.gpu_memory_gib < need.gib:
        found.append(
            f"{pool.gpu_model} with {pool.gpu_memory_gib} GiB, below the {need.gib} GiB "
            f"{what} needs ({need.key})"
        )
    if nodes > pool.max_nodes:
        found.append(f"--nodes {nodes}, but it has at most {pool.max_nodes} nodes")
    if gpus_per_node is not None and gpus_per_node > pool.gpus_per_node:
        found.append(
            f"--gpus-per-node {gpus_per_node}, but its nodes have {pool.gpus_per_node} GPUs"
        )
    elif nvlink := nvlink_problem(pool, nodes, gpus_per_node):
        found.append(f"--{nvlink[0].replace('_', '-')} {nvlink[1]}")
    return found


def beside_reason(pool: GpuPool, beside: list[str]) -> str:
    """Why a job on `pool` is applied with the kinds `beside` (job_claims.applied_beside), as
    the worker's stack file says it."""
    why = {
        "ResourceClaimTemplate": "gpu_allocation dra",
        "ComputeDomain": (
            f"{'/'.join(pool.instance_types)}, an NVLink domain of {pool.nvlink_domain_nodes} nodes"
        ),
    }
    return "; ".join(f"pool {pool.name}: {why[kind]}" for kind in beside)


# The annotation a submitted job carries with why its pool was chosen (also said on stderr).
POOL_CHOICE = "gpu-platform/pool-choice"


@dataclass(frozen=True)
class PoolChoice:
    pool: GpuPool
    # Why this pool: asked for, the only one that fits, or the cheapest, with the prices read.
    why: str


def job_hourly(
    cfg: PlatformConfig, pool: GpuPool, nodes: int, gpus_per_node: int | None
) -> tuple[float | None, str]:
    """What the job's share of the pool's nodes costs an hour (USD), and on what basis: the
    estimate's price of one node (model/cost.node_hourly: the group's dearest type, spot at the
    assumed discount, in the stack's region) times the nodes and the share of their GPUs it
    takes. None where no price is known: an existing cluster's nodes, a type not sold on
    demand."""
    if cfg.provider != "aws":
        return None, "an existing cluster's nodes carry no AWS price"
    group = next(g for g in cfg.gpu_node_groups if g.name == pool.name)
    line = node_hourly(cfg, group)
    if line.hourly_max is None:
        return None, line.basis
    gpus = gpus_per_node or pool.gpus_per_node
    return line.hourly_max * nodes * gpus / pool.gpus_per_node, line.basis


def choose_pool(
    dest: Destination,
    what: str,
    nodes: int,
    gpus_per_node: int | None,
    name: str | None,
    need: GpuMemoryNeed | None = None,
) -> PoolChoice:
    """The pool asked for, or else the cheapest of the destination's pools (this stack's, or a
    worker's for a team that bursts) that can hold the job, a multi-node job preferring a pool
    whose nodes share a fabric (EFA, InfiniBand, RoCE) over one that talks TCP, and saying why;
    an existing cluster's pools, which carry no price, in config order."""
    cfg = dest.runs_on
    pools = cfg.gpu_pools
    where = "gpu_node_groups" if cfg.provider == "aws" else "existing.gpu_pools"
    if not pools:
        raise SubmitError([f"the stack has no GPU pool ({where} is empty); {what} needs one"])
    if name is not None:
        known = [p.name for p in pools]
        if name not in known:
            raise SubmitError(
                [f"--pool {name!r} is not a GPU pool of this stack; its pools: {', '.join(known)}"]
            )
        pool = next(p for p in pools if p.name == name)
        problems = pool_problems(pool, what, nodes, gpus_per_node, need, dest)
        if problems:
            raise SubmitError([f"--pool {name!r} cannot hold {what}: {'; '.join(problems)}"])
        return PoolChoice(pool, "asked for with --pool")
    why = {p.name: pool_problems(p, what, nodes, gpus_per_node, need, dest) for p in pools}
    fitting = [p for p in pools if not why[p.name]]
    if not fitting:
        listing = "".join(f"\n      {name}: {'; '.join(found)}" for name, found in why.items())
        raise SubmitError([f"no GPU pool of the stack ({where}) can hold {what}:{listing}"])
    prices = {p.name: job_hourly(cfg, p, nodes, gpus_per_node) for p in fitting}

    def rank(pool: GpuPool) -> tuple[bool, bool, float]:
        hourly = prices[pool.name][0]
        slow = nodes > 1 and pool.fabric not in MULTI_NODE_FABRICS
        return slow, hourly is None, hourly or 0.0

    # sorted() is stable: pools that tie stay in config order.
    chosen, *others = sorted(fitting, key=rank)
    return PoolChoice(chosen, choice_reason(chosen, others, prices, why, nodes))


def choice_reason(
    chosen: GpuPool,
    others: list[GpuPool],
    prices: dict[str, tuple[float | None, str]],
    why: dict[str, list[str]],
    nodes: int,
) -> str:
    def price(pool: GpuPool) -> str:
        hourly, basis = prices[pool.name]
        return f"${hourly:,.2f}/h" if hourly is not None else f"no price ({basis})"

    hourly, basis = prices[chosen.name]
    if hourly is None:
        said = f"the first of the stack's pools that fits, in config order ({basis})"
    elif not others:
        said = f"the only pool that fits: {price(chosen)} ({basis})"
    else:
        said = f"the cheapest pool that fits: {price(chosen)} ({basis})"
    if nodes > 1 and chosen.fabric in MULTI_NODE_FABRICS:
        said += f"; its nodes talk over {chosen.fabric}, as a multi-node job needs"
    if others:
        said += "; also fit: " + ", ".join(f"{p.name} {price(p)}" for p in others)
    unfit = {name: found for name, found in why.items() if found}
    if unfit:
        said += "; cannot hold it: " + ", ".join(
            f"{name} ({'; '.join(found)})" for name, found in unfit.items()
        )
    return said


@dataclass(frozen=True)
class Destination:
    """Where a team's job goes: the team, and the stack whose pools it runs on, this one or,
    for a team whose ClusterQueue bursts, the MultiKueue worker's."""

    team: TeamSettings
    runs_on: PlatformConfig
    worker: str | None = None
    # The worker's stack file, and the key of the team's queue's burst, for messages.
    worker_file: str | None = None
    queue_key: str | None = None
    # The nodes the manager's burst flavor selects (burst.instance_type): a job rendered for
    # another of the worker's pools would ask nodes the flavor it is admitted to never has.
    instance_type: str | None = None

    @property
    def managed_by(self) -> str | None:
        """MultiKueue's on a job it dispatches: the Job never starts here."""
        return MANAGED_BY if self.worker is not None else None

    @property
    def detail(self) -> str:
        return f", dispatched by MultiKueue to worker {self.worker}" if self.worker else ""


def destination(
    cfg: PlatformConfig, team: str | None, workers: Mapping[str, PlatformConfig]
) -> Destination:
    """The team asked for (the training namespace's when none), or SubmitError naming the
    stack's teams. A bursting team's job is rendered for the first of its queue's workers
    (burst.workers, most preferred first): its pools, its nodes' NCCL settings and cache."""
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    wanted = team or cfg.namespaces.training
    found = next((t for t in teams if t.name == wanted), None)
    if found is None:
        raise SubmitError(
            [
                f"--team {wanted!r} is not a team of this stack; its teams (scheduling.teams, "
                f"and the training namespace): {', '.join(t.name for t in teams)}"
            ]
        )
    index, queue = next(
        (i, q) for i, q in enumerate(cfg.scheduling.cluster_queues) if q.name == found.cluster_queue
    )
    if queue.burst is None:
        return Destination(found, cfg)
    worker = queue.burst.workers[0]
    if worker not in workers:
        raise SubmitError(
            [f"--team {found.name}: its queue bursts to worker {worker}, whose stack was not read"]
        )
    stack = next(w.local_stack for w in cfg.multikueue.workers if w.name == worker)
    return Destination(
        found,
        workers[worker],
        worker,
        stack_file(stack),
        f"scheduling.cluster_queues[{index}].burst",
        queue.burst.instance_type,
    )


def job_name(prefix: str, what: object, nodes: int) -> str:
    """`<prefix>-<10 hex>` of what the job does: submitting the same job twice applies one Job
    and resumes its checkpoints, never two; any change names a new one. The prefix is cut to
    what JobSet's webhook admits with `nodes` pods, and starts with a letter ("job-" before
    one that does not): the hash keeps two cut names apart."""
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:10]
    lettered = prefix if prefix[:1].isalpha() else f"job-{prefix}"
    room = longest_name(nodes) - len(f"-{digest}")
    return f"{lettered[:room].rstrip('-')}-{digest}"


def check_name(name: str, nodes: int) -> None:
    """A name JobSet's webhook admits for `nodes` pods (job_names.name_problem)."""
    problem = name_problem(name, nodes)
    if problem is not None:
        raise SubmitError([f"--name {name!r}: {problem}"])


# -------------------------------------------------------------------------------- applying


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


# ------------------------------------------------------------------------------------- CLI


def load_workers(cfg: PlatformConfig, root: Path) -> dict[str, PlatformConfig]:
    """The stack's MultiKueue workers' configs by name, from this project's stack files (the
    last part of multikueue.workers[].stack), as the offline plan reads them."""
    return {w.name: stack_config(w.local_stack, root) for w in cfg.multikueue.workers}


def add_delivery_flags(p: argparse.ArgumentParser) -> None:
    """Where the job goes and how, the same for every kind of job."""
    p.add_argument("--stack", required=True, help="stacks/Pulumi.<stack>.yaml")
    p.add_argument(
        "--team",
        help="a scheduling.teams name: its namespace, queue and priority (default: the "
        "training namespace)",
    )
    p.add_argument("--nodes", type=int, required=True, help="pods, one per node")
    p.add_argument(
        "--pool", help="a GPU pool of the stack; default: the cheapest that fits (said on stderr)"
    )
    p.add_argument("--name", help="the job's name; default: <prefix>-<hash of the job>")
    p.add_argument("--apply", action="store_true", help="kubectl apply the job")
    p.add_argument("--kubeconfig", help="default: existing.kubeconfig_path, else KUBECONFIG")
    p.add_argument(
        "--resume",
        action="store_true",
        help="with --apply: replace a failed or finished job of the same name, which resumes "
        "from its checkpoint (a running one is never replaced)",
    )


def deliver(
    args: argparse.Namespace,
    cfg: PlatformConfig,
    what: str,
    spec: TrainingJobSpec | None,
    out: Callable[[str], Path],
    problems: list[str],
    detail: str = "",
) -> int:
    """Refuse (exit 2, every problem at once, nothing written), or write `out(job name)` and,
    with --apply, submit it (`submit_to`). `problems` are what planning the job found already."""
    problems = list(problems)
    if args.apply and args.render_only:
        problems.append("--render-only with --apply: a placeholder image cannot run")
    if args.resume and not args.apply:
        problems.append("--resume without --apply: it replaces a job on the cluster; add --apply")
    config, kubectl = None, shutil.which("kubectl")
    if args.apply:
        try:
            config = kubeconfig(args.kubeconfig, cfg, os.environ)
        except SubmitError as error:
            problems += error.problems
        if kubectl is None:
            problems.append(
                "--apply runs kubectl, which is not on PATH: install it "
                "(https://kubernetes.io/docs/tasks/tools/), or drop --apply and apply "
                f"{out(spec.name if spec else '<name>')} yourself"
            )
    if problems or spec is None:
        print(f"error: {what} cannot be submitted to {args.stack}:", file=sys.stderr)
        print(SubmitError(problems), file=sys.stderr)
        return 2
    path = out(spec.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    objects = render(spec)
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    job = workload(objects, spec)
    size = f"{spec.nodes} node(s) x {spec.gpus} GPU(s) of pool {spec.pool.name}"
    print(f"Wrote {path}: {job['kind']} {spec.namespace}/{spec.name}, {size}{detail}")
    if POOL_CHOICE in spec.annotations:
        print(f"pool {spec.pool.name}: {spec.annotations[POOL_CHOICE]}", file=sys.stderr)
    sharing = spec.pool.sharing
    if sharing.mode in ("time-slicing", "mps"):
        # Not refused (a dev pool is often shared), but the GPU memory the job needs is not
        # the job's alone there.
        print(
            f"warning: pool {spec.pool.name} shares each GPU among {sharing.replicas} pods "
            f"({sharing.mode}); the job's GPU memory is not its own",
            file=sys.stderr,
        )
    if config is None or kubectl is None:
        return 0
    return submit_to(Kubectl.of_stack(kubectl, config, cfg), objects, job, path, args.resume)
