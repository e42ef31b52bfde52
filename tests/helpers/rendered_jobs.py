"""Every job the platform and `python -m jobs` render, per stack: the self-test's run and its
schedule's, every recipe and a team's own job on every pool, and a bursting team's job on its
worker's pools. The controller models (tests/controllers/) sweep them all (STYLE.md §17)."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from typing import Any

from components.control.namespaces import job_namespaces
from components.scheduling.job_claims import claim_templates
from components.scheduling.job_spec import TrainingJobSpec, spec_for_pool
from components.scheduling.multikueue import MANAGED_BY
from components.scheduling.training_job import job, render
from components.selftest.job import selftest_spec
from components.selftest.schedule import schedule_spec
from jobs.common import SubmitError
from jobs.recipe import RECIPES
from jobs.recipe import plan_job as plan_recipe
from jobs.team import TeamJob
from jobs.team import plan_job as plan_team_job
from model.config import GpuPool, PlatformConfig
from model.config.pools import always_up_pools
from plan.model import Plan
from tests.conftest import STACKS, planned, stack_config
from tests.helpers.varied_stacks import DRA_CONFIGS, dra_config, dra_plan

# The labels of the platform's own Jobs and CronJobs that no queue admits.
OUTSIDE_KUEUE = {"gpu-platform/canary", "gpu-platform/reservation-phase"}


def platform_jobs(stack: str) -> list[dict[str, Any]]:
    """The self-test's JobSet and its schedule's Job (the CronJob's template), as planned, and
    as the builders render them on every pool whether or not the stack turns them on. Only the
    namespaces jobs run in, which Kueue manages: the platform's housekeeping beside its add-ons
    (the Pushgateway sweep in the monitoring namespace) is no queue's job."""
    return platform_jobs_of(stack_config(stack), planned(stack))


def platform_jobs_of(cfg: PlatformConfig, plan: Plan) -> list[dict[str, Any]]:
    """platform_jobs of a stack of any project, from its config and plan."""
    found = [job_of(render(selftest_spec(cfg)))] if cfg.gpu_pools else []
    # Not on a windowed or a MIG pool: no scheduled run goes there.
    found += [job(schedule_spec(cfg, p.name, {})) for p in schedulable_pools(cfg)]
    for obj in plan.kubernetes_objects():
        if obj["metadata"].get("namespace") not in job_namespaces(cfg):
            continue
        # Outside Kueue by design: a canary Job has its node to itself and starts at once
        # (components/selftest/canary.py), the reservation controller patches Kueue's objects.
        if OUTSIDE_KUEUE & set(obj["metadata"].get("labels") or {}):
            continue
        if obj["kind"] in ("Job", "JobSet"):
            found.append(obj)
        elif obj["kind"] == "CronJob":
            template = obj["spec"]["jobTemplate"]
            meta = {**template.get("metadata", {}), "name": obj["metadata"]["name"]}
            meta["namespace"] = obj["metadata"]["namespace"]
            found.append(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": meta,
                    "spec": template["spec"],
                }
            )
    return found


def schedulable_pools(cfg: PlatformConfig) -> list[GpuPool]:
    """Where a scheduled run may go by default (model/config/selftest_schedule.scheduled_pools):
    not on a windowed pool, nor on a MIG pool, whose slices no whole-node run can take."""
    return [p for p in always_up_pools(cfg) if p.sharing.mode != "mig"]


def platform_claim_templates_of(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The claim templates of the jobs platform_jobs_of renders itself (on DRA pools), which a
    stack that does not turn them on does not declare."""
    specs = [selftest_spec(cfg)] if cfg.gpu_pools else []
    specs += [schedule_spec(cfg, p.name, {}) for p in schedulable_pools(cfg)]
    return [t for spec in specs for t in claim_templates(spec)]


def workers_of(stack: str) -> list[str]:
    return [w.stack.rsplit("/", 1)[-1] for w in stack_config(stack).multikueue.workers]


def bursting_teams(stack: str) -> set[str]:
    return bursting_teams_of(stack_config(stack))


def bursting_teams_of(cfg: PlatformConfig) -> set[str]:
    bursts = {q.name for q in cfg.scheduling.cluster_queues if q.burst is not None}
    return {
        t.name
        for t in cfg.scheduling.all_teams(cfg.namespaces.training)
        if t.cluster_queue in bursts
    }


def submitted_jobs(stack: str) -> list[tuple[str, dict[str, Any]]]:
    """What `python -m jobs` renders on the stack: every recipe and a team's own job on every
    pool that can hold it, on one node and on all of them."""
    return submitted_jobs_of(stack_config(stack))


def submitted_jobs_of(cfg: PlatformConfig) -> list[tuple[str, dict[str, Any]]]:
    """submitted_jobs of a stack of any project, from its config."""
    return [(what, job_of(objects)) for what, objects in submitted_renders_of(cfg)]


def submitted_renders_of(cfg: PlatformConfig) -> list[tuple[str, list[dict[str, Any]]]]:
    """What `python -m jobs` writes for each job of submitted_jobs_of: the job after what it
    needs of its own (a DRA pool's claim template)."""
    found = []
    for what, spec in planned_jobs(cfg, cfg.gpu_pools):
        found.append((what, render(spec)))
        if not what.startswith("team job"):
            continue
        # The same job in every other team's namespace, through that team's LocalQueue.
        for team in cfg.scheduling.all_teams(cfg.namespaces.training):
            if team.name != spec.namespace and team.name not in bursting_teams_of(cfg):
                other = dataclasses.replace(spec, namespace=team.name)
                pool, nodes = spec.pool.name, spec.nodes
                found.append((f"team {team.name} on {pool} x{nodes}", render(other)))
    return found


def planned_jobs(
    cfg: PlatformConfig,
    pools: list[GpuPool],
    team: str | None = None,
    workers: Mapping[str, PlatformConfig] | None = None,
) -> list[tuple[str, TrainingJobSpec]]:
    """Every recipe and a team's own job that `python -m jobs` plans on each of `pools`, on one
    node and on all of them, for `team` (`workers`: the stack's MultiKueue workers' configs,
    for a team whose queue bursts); what it refuses is never applied, and left out."""
    found = []
    for pool in pools:
        for nodes in sorted({1, pool.max_nodes}):
            for recipe in RECIPES:
                try:
                    spec, _ = plan_recipe(
                        cfg, recipe, nodes, pool=pool.name, render_only=True, team=team,
                        workers=workers,
                    )  # fmt: skip
                except SubmitError:
                    continue
                found.append((f"{recipe} on {pool.name} x{nodes}", spec))
            job = TeamJob(image=None, command=["train.py"], nodes=nodes, pool=pool.name, team=team)
            try:
                spec = plan_team_job(cfg, job, workers)
            except SubmitError:
                continue
            found.append((f"team job on {pool.name} x{nodes}", spec))
    return found


def dispatched_renders_of(
    cfg: PlatformConfig, workers: Mapping[str, PlatformConfig]
) -> list[tuple[str, list[dict[str, Any]]]]:
    """What `python -m jobs` writes for each team whose queue bursts, on every pool of each
    worker its queue names (`workers`: the MultiKueueCluster names' configs): the job is
    rendered for the first, and MultiKueue may place it on any."""
    bursts = {q.name: q.burst for q in cfg.scheduling.cluster_queues if q.burst is not None}
    found = []
    for team in cfg.scheduling.all_teams(cfg.namespaces.training):
        burst = bursts.get(team.cluster_queue)
        if burst is None:
            continue
        pools = workers[burst.workers[0]].gpu_pools
        for what, spec in planned_jobs(cfg, pools, team.name, workers):
            found.append((f"team {team.name}: {what}", render(spec)))
    return found


def job_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The job among what the builder renders (training_job.render: it comes last)."""
    (job_,) = [o for o in objects if o["kind"] in ("Job", "JobSet")]
    return job_


def burst_jobs(manager: str, worker: str) -> list[tuple[str, dict[str, Any]]]:
    """A bursting team's job, rendered against the worker's pools (docs/scheduling.md,
    MultiKueue: the worker's node selector, GPUs and EFA devices)."""
    cfg = stack_config(worker)
    found = []
    for team in sorted(bursting_teams(manager)):
        for pool in cfg.gpu_pools:
            for nodes in sorted({1, pool.max_nodes}):
                spec = spec_for_pool(
                    cfg,
                    pool.name,
                    name="burst",
                    image="registry.example/t:1",
                    command=["t.py"],
                    nodes=nodes,
                    namespace=team,
                    managed_by=MANAGED_BY,
                )
                found.append((f"{team} on {worker}'s {pool.name} x{nodes}", job_of(render(spec))))
    return found


# The stacks the sweeps of every job run over: the shipped ones and the DRA fixtures, whose
# pools allocate GPUs through DRA (tests/helpers/varied_stacks.py).
SWEPT_STACKS = [*STACKS, *DRA_CONFIGS]


def config_of(stack: str) -> PlatformConfig:
    return dra_config(stack) if stack in DRA_CONFIGS else stack_config(stack)


def every_job(stack: str) -> list[tuple[str, dict[str, Any]]]:
    """(what, object) of every job above the stack (one of SWEPT_STACKS) renders: the
    platform's, what `python -m jobs` submits, and its bursting teams' on each worker's pools."""
    if stack in DRA_CONFIGS:
        cfg = config_of(stack)
        platform = platform_jobs_of(cfg, dra_plan(stack))
        found = [(f"platform {j['kind']} {j['metadata']['name']}", j) for j in platform]
        # The fixtures burst nowhere.
        return found + submitted_jobs_of(cfg)
    found = [(f"platform {j['kind']} {j['metadata']['name']}", j) for j in platform_jobs(stack)]
    found += submitted_jobs(stack)
    for worker in workers_of(stack):
        found += burst_jobs(stack, worker)
    return found


if __name__ == "__main__":
    # For the image side's tests, which import nothing of the program (tests/helpers/
    # program_cli.every_rendered_job): (stack, what, object) on every stack.
    json.dump([(s, what, j) for s in STACKS for what, j in every_job(s)], sys.stdout)
