"""What the Pod Security tests run over: the shipped stacks and two of every setting, every
namespace the program declares, every pod it declares or its charts render, and every job the
job builder renders (recipes, `jobs submit` in each team namespace on each pool, the self-test
and its schedule, burst jobs)."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from components.selftest.job import pool_env, selftest_spec
from components.selftest.schedule import cron_jobs
from jobs.common import SubmitError
from jobs.recipe import plan_job as plan_recipe
from model.config import PlatformConfig
from model.config.recipes import RECIPES
from plan.model import Plan
from plan.render import Rendering, render_plan
from tests.conftest import (
    SHARED_HELM,
    STACKS,
    make_project,
    planned,
    project_plan,
    rendered,
    stack_config,
    stack_file_config,
)
from tests.controllers.pod_security import Pod, pod_templates
from tests.helpers.bad_stacks import ADMIN, NS

IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/team/trainer@sha256:" + "e" * 64
SELFTEST = "111122223333.dkr.ecr.us-east-1.amazonaws.com/selftest@sha256:" + "f" * 64
TEAMS = [
    {"name": "training"},
    # Baseline, with the reason a team must give for it.
    {"name": "eval", "pod_security": "baseline",
     "pod_security_reason": "runs a vendor's evaluation image that needs root"},
    {"name": "vision"},
]  # fmt: skip
# Every GPU sharing mode, EFA and TCP pools, the self-test scheduled and cordoning.
EVERY_AWS = {
    f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
    f"{NS}:cluster": {"admin_principal_arns": [ADMIN]},
    f"{NS}:gpu_node_groups": [
        {"name": "h100-efa", "instance_types": ["p5.48xlarge"], "efa": True,
         "zone": "us-east-1a", "scaling": {"max_size": 2}},
        {"name": "a10g-shared", "instance_types": ["g5.12xlarge"], "scaling": {"max_size": 2},
         "gpu_sharing": {"mode": "time-slicing", "replicas": 4}},
        {"name": "l40s-mps", "instance_types": ["g6e.12xlarge"], "scaling": {"max_size": 2},
         "gpu_sharing": {"mode": "mps", "replicas": 2}},
        {"name": "a100-mig", "instance_types": ["p4d.24xlarge"], "zone": "us-east-1b",
         "scaling": {"max_size": 2}, "gpu_sharing": {"mode": "mig"}},
    ],
    f"{NS}:storage": {"fsx": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 1200}},
    f"{NS}:scheduling": {"teams": TEAMS},
    # Pre-pulled on every pool (components/selftest/prepull.py).
    f"{NS}:images": {"prepull": [IMAGE]},
    f"{NS}:selftest": {"image": SELFTEST, "cordon_on_fail": True,
                       "schedule": {"cron": "0 */4 * * *"}},
}  # fmt: skip


def _every_onprem() -> dict[str, Any]:
    """The shipped onprem stack on InfiniBand, with a time-slicing TCP pool and an MPS pool
    beside it, the teams above and the self-test cordoning; no MultiKueue worker to plan."""
    config = stack_file_config("onprem")
    existing = config[f"{NS}:existing"]
    (a100,) = existing["gpu_pools"]
    existing["gpu_pools"] = [
        {**a100, "fabric": "infiniband"},
        {**a100, "name": "a100-shared", "fabric": "tcp", "nodes": 1,
         "node_selector": {"example.internal/pool": "shared"},
         "gpu_sharing": {"mode": "time-slicing", "replicas": 2}},
        {**a100, "name": "a100-mps", "fabric": "tcp", "nodes": 1,
         "node_selector": {"example.internal/pool": "mps"},
         "gpu_sharing": {"mode": "mps", "replicas": 2}},
    ]  # fmt: skip
    config[f"{NS}:fabric"].pop("gid_index")  # a RoCE setting
    scheduling = config[f"{NS}:scheduling"]
    scheduling["cluster_queues"] = [{"name": "shared"}]
    scheduling["teams"] = TEAMS
    scheduling["flavors"] = [
        {**scheduling["flavors"][0], "pool": p["name"]} for p in existing["gpu_pools"]
    ]
    del config[f"{NS}:multikueue"]
    config[f"{NS}:selftest"]["cordon_on_fail"] = True
    config[f"{NS}:images"] = {"prepull": [IMAGE]}
    return config


SYNTHETIC = {"every-aws": EVERY_AWS, "every-onprem": _every_onprem()}
ALL_STACKS = [*STACKS, *SYNTHETIC]


@functools.cache
def _root() -> Path:
    return make_project(Path(tempfile.mkdtemp(prefix="pod-security-")), SYNTHETIC)


@functools.cache
def plan_of(stack: str) -> Plan:
    return project_plan(stack, SYNTHETIC) if stack in SYNTHETIC else planned(stack)


@functools.cache
def config_of(stack: str) -> PlatformConfig:
    if stack not in SYNTHETIC:
        return stack_config(stack)
    return stack_config(stack, _root())


@functools.cache
def rendering_of(stack: str) -> Rendering:
    return render_plan(plan_of(stack), (SHARED_HELM,)) if stack in SYNTHETIC else rendered(stack)


def namespaces(stack: str) -> dict[str, dict[str, Any]]:
    """Every Namespace object the stack declares, by name."""
    return {
        o["metadata"]["name"]: o
        for o in plan_of(stack).kubernetes_objects()
        if o["kind"] == "Namespace"
    }


def team_namespaces(stack: str) -> list[str]:
    cfg = config_of(stack)
    return [t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)]


def declared_pods(stack: str) -> Iterator[tuple[str, str, Pod]]:
    """(where, namespace, pod) of every pod template the program declares or its releases
    render."""
    for obj in plan_of(stack).kubernetes_objects():
        for pod in pod_templates(obj):
            yield f"{obj['kind']} {obj['metadata']['name']}", obj["metadata"]["namespace"], pod
    for release, obj in rendering_of(stack).objects():
        for pod in pod_templates(obj):
            namespace = obj["metadata"].get("namespace") or release.namespace
            yield f"{release.release}: {obj['kind']} {obj['metadata']['name']}", namespace, pod


def whole_gpu_pools(cfg: PlatformConfig) -> list[str]:
    """Pools a distributed job can take: MIG slices are refused by the builder's callers."""
    return [p.name for p in cfg.gpu_pools if p.sharing.mode != "mig"]


def builder_jobs(stack: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(what, object) of every job the job builder renders for the stack."""
    cfg = config_of(stack)
    for recipe in RECIPES:
        for pool in whole_gpu_pools(cfg):
            try:
                spec, _ = plan_recipe(cfg, recipe, nodes=1, pool=pool, render_only=True)
            except SubmitError:
                continue  # a pool too small for the recipe: refused, nothing rendered
            yield from _named(f"recipe {recipe} on {pool}", render(spec))
    for team in team_namespaces(stack):
        for pool in whole_gpu_pools(cfg):
            # What `jobs submit` renders for a team (spec_for_pool also marks a bursting
            # team's job for MultiKueue).
            spec = spec_for_pool(cfg, pool, name="job", image=IMAGE, command=["train.py"],
                                 namespace=team)  # fmt: skip
            yield from _named(f"jobs submit in {team} on {pool}", render(spec))
    if cfg.selftest.resolved_mode(cfg.production) != "off":
        yield from _named("self-test", render(selftest_spec(cfg)))
    for obj in cron_jobs(cfg, lambda pool: pool_env(cfg, pool)):
        yield f"scheduled self-test {obj['metadata']['name']}", obj


def _named(what: str, objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in objects:
        if pod_templates(obj):
            yield what, obj
