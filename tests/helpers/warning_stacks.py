"""Fixture stacks that give every kind of warning (model/warning_kinds.py WARNINGS), each planned
once per session through the plan cache, and the warnings of each kind as the plan or the program
gives them: `python -m plan --strict` is tested on every kind (tests/plan/test_strict.py)."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from datetime import date
from pathlib import Path

from infra.stack_warnings import drain_waits, kubernetes_support
from plan.cli import compare_with_previous
from plan.model import Plan
from plan.render import render_plan
from tests.conftest import (
    make_project,
    planned,
    project_plan,
    stack_config,
    stack_file_config,
)
from tests.helpers.bad_stacks import NS
from tests.helpers.brownfield_stacks import CLAIM_STACK, brownfield_plan
from tests.helpers.varied_stacks import waiting_window_config, window_plan

LOUD_AWS, LOUD_ONPREM = "loud-aws", "loud-onprem"


def loud_aws() -> dict:
    """The shipped dev (an example account, a documentation CIDR, an unconfirmed add-on build)
    on a minor past standard support, over a small budget, its self-test not waited for, a
    queue asking for more GPUs than its pool holds, no shared-data (its FSx taken out), and a
    pull-through cache whose NVIDIA images are not copied yet."""
    config = stack_file_config("dev")
    del config[f"{NS}:storage"]["fsx"]
    # EKS "Kubernetes version lifecycle": 1.33 left standard support on 2026-07-29.
    config[f"{NS}:cluster"]["kubernetes_version"] = "1.33"
    config[f"{NS}:cost"] = {"monthly_budget_usd": 100}
    # A digest that is not the EXAMPLE one (that kind is loud-onprem's).
    image = "registry.example.internal/selftest@sha256:" + "1" * 64
    config[f"{NS}:selftest"] = {"mode": "warn", "image": image}
    (group,) = config[f"{NS}:gpu_node_groups"]
    config[f"{NS}:scheduling"] = {"cluster_queues": [{"name": "big", "gpus": {group["name"]: 512}}]}
    images = config.get(f"{NS}:images", {})
    config[f"{NS}:images"] = {**images, "pull_through_cache": {"account_id": "210987654321"}}
    return config


def loud_onprem() -> dict:
    """The shipped onprem (unapplied topology labels, the EXAMPLE self-test image) on a minor
    older than EKS serves, with the nodes' own driver on RoCE, no node sizes for Kueue, a queue
    over its pool, a burst over its budget and KEDA taken from the cluster."""
    config = stack_file_config("onprem")
    config[f"{NS}:cluster"]["kubernetes_version"] = "1.30"
    config[f"{NS}:gpu_operator"] = {"install_driver": False}
    config[f"{NS}:existing"]["addons"] = {"keda": "existing"}
    scheduling = config[f"{NS}:scheduling"]
    del scheduling["flavors"]
    shared, burst = scheduling["cluster_queues"]
    # 4 DGX A100 nodes of 8 GPUs hold 32.
    shared["gpus"] = {"a100": 64}
    burst["burst"]["monthly_budget_usd"] = 1000
    return config


FIXTURES: dict[str, Callable[[], dict]] = {LOUD_AWS: loud_aws, LOUD_ONPREM: loud_onprem}


def project(root: Path, stack: str, config: dict) -> Path:
    """A project holding `stack` and the shipped burst worker the onprem stack refers to."""
    return make_project(root, with_worker(stack, config))


def with_worker(stack: str, config: dict) -> dict[str, dict]:
    return {stack: config, "burst": stack_file_config("burst")}


@functools.cache
def loud_plan(stack: str) -> Plan:
    return project_plan(stack, with_worker(stack, FIXTURES[stack]()))


def support_ending() -> list[str]:
    # The program reads today's date; the window is tested on a fixed one. EKS "Kubernetes
    # version lifecycle": 1.34 leaves standard support on 2026-12-02, within 30 days of 11-30.
    cfg = stack_config("dev").model_copy(deep=True)
    cluster = cfg.cluster.model_copy(update={"kubernetes_version": "1.34"})
    return kubernetes_support(cfg.model_copy(update={"cluster": cluster}), date(2026, 11, 30))


def earlier_prod_plan(folder: Path) -> Path:
    """An earlier plan of prod in `folder` whose Capacity Block group had other user data."""
    doc = json.loads(planned("prod").to_json())
    for resource in doc["resources"]:
        if resource["name"] == "prod-h100-block" and "launchTemplate" in resource["type"]:
            resource["inputs"]["userData"] = "b2xk"
    (folder / "resources.json").write_text(json.dumps(doc))
    return folder


def capacity_block_roll(tmp: Path) -> list[str]:
    """prod against an earlier plan whose Capacity Block group had other user data."""
    plan = copy.deepcopy(planned("prod"))
    plan.warnings[:] = []
    compare_with_previous(plan, earlier_prod_plan(tmp) / "resources.json")
    return plan.warnings


def mig_on_fabric() -> dict:
    """The shipped staging with MIG turned on for its one group, an EFA group of p4d.24xlarge
    (A100 40 GB, which MIG partitions): its multi-node jobs are locked out."""
    config = stack_file_config("staging")
    (group,) = config[f"{NS}:gpu_node_groups"]
    group["gpu_sharing"] = {"mode": "mig"}
    return config


def mig_on_fabric_plan() -> Plan:
    return project_plan("staging", {"staging": mig_on_fabric()})


def chart_not_cached(tmp: Path) -> list[str]:
    """dev rendered from an empty chart cache."""
    return list(render_plan(planned("dev"), (tmp,)).warnings)


def every_warning(tmp: Path) -> list[str]:
    """The warnings of every fixture, each kind at least once."""
    return [
        *loud_plan(LOUD_AWS).warnings,
        *loud_plan(LOUD_ONPREM).warnings,
        *brownfield_plan(CLAIM_STACK).warnings,
        *support_ending(),
        *capacity_block_roll(tmp),
        *chart_not_cached(tmp),
        *mig_on_fabric_plan().warnings,
        *window_plan().warnings,
        *drain_waits(waiting_window_config()),
    ]
