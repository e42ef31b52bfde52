"""Where a drained workload is admitted next, for every window that requeues on every stack that
declares one (tests/helpers/varied_stacks.window_configs: read from each stack's config). At the
drain the window's flavor has a quota of 0 and the controller reactivates the workloads Kueue
evicted from it; Kueue then admits each again like any pending workload of its ClusterQueue: the
first of the queue's own flavors, in the order the queue lists them, that fits
(tests/controllers/kueue_admission.py `assigned_flavor`, from Kueue v0.19.2 pkg/scheduler/
flavorassigner/flavorassigner.go; the ClusterQueue sets no flavorFungibility, so Kueue's defaults
apply: whenCanBorrow Borrow, whenCanPreempt TryNextFlavor, apis/kueue/v1beta2/
clusterqueue_types.go). A flavor another queue or a MultiKueue worker holds is never among them:
Kueue refuses a MultiKueue check on some flavors only (ClusterQueue condition
MultiKueueAdmissionCheckAppliedPerFlavor, apis/kueue/v1beta1/clusterqueue_types.go), so no
queue that lists a pool of this cluster bursts. Where no flavor is left the workload waits,
pending, and the plan warns
(`reservation-drain-waits`, infra/stack_warnings.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.control.namespaces import job_namespaces
from components.scheduling.kueue import manager_config, uncounted_resources
from components.scheduling.queues import kueue_objects, submitters
from infra.stack_warnings import drain_waits
from model.config import PlatformConfig
from model.config.pools import windowed
from model.stacks import ROOT
from model.warning_kinds import warning_kind
from tests.controllers.kueue_admission import Kueue, assigned_flavor, quantity
from tests.helpers.kueue_objects import gpu_job
from tests.helpers.varied_stacks import window_configs

CONFIGS = dict(window_configs())


def at_drain(cfg: PlatformConfig, group: str) -> Kueue:
    """The stack's Kueue when `group`'s window starts draining: its flavor at 0, every other
    windowed flavor open only if its own window is open then."""
    windows = {g.name: g.reservation_window.window() for g in windowed(cfg)}
    draining = windows[group].transitions()["draining"]
    closed = {n for n, w in windows.items() if n == group or w.phase(draining) != "open"}
    objects = copy.deepcopy(kueue_objects(cfg, autoscaled=True, open_windows=True))
    for obj in objects:
        if obj["kind"] != "ClusterQueue":
            continue
        for rg in obj["spec"].get("resourceGroups", []):
            for entry in rg["flavors"]:
                for resource in entry["resources"] if entry["name"] in closed else []:
                    resource["nominalQuota"] = "0"
    config = manager_config(
        uncounted_resources(cfg), job_namespaces(cfg), cfg.scheduling.fair_sharing
    )
    return Kueue.of(objects, config, windows="open")


def lists(cq: dict[str, Any], flavor: str) -> bool:
    """Whether the queue holds quota of the flavor while its window is open (it admits to it)."""
    return any(
        entry["name"] == flavor and any(quantity(r["nominalQuota"]) for r in entry["resources"])
        for rg in cq["spec"].get("resourceGroups", [])
        for entry in rg["flavors"]
    )


def destinations(stack: str) -> dict[tuple[str, str], str | None]:
    """(window's group, ClusterQueue) -> the flavor a drained one-node workload of the queue's
    first team is admitted to next; None: none, it waits."""
    cfg = CONFIGS[stack]
    opened = {
        o["metadata"]["name"]: o
        for o in kueue_objects(cfg, autoscaled=True, open_windows=True)
        if o["kind"] == "ClusterQueue"
    }
    found = {}
    for group in windowed(cfg):
        if group.reservation_window is None or group.reservation_window.on_drain != "requeue":
            continue
        (pool,) = [p for p in cfg.gpu_pools if p.name == group.name]
        kueue = at_drain(cfg, group.name)
        for name, cq in opened.items():
            teams = [t.name for t in submitters(cfg) if t.cluster_queue == name]
            if not teams or not lists(cq, group.name):
                continue
            job = gpu_job("drained", teams[0], pool.gpus_per_node)
            found[(group.name, name)] = assigned_flavor(kueue, job)
    return found


# The window stack (tests/helpers/varied_stacks.py): the block's drained work goes to p5od, the
# on-demand p5.48xlarge group listed after it (its one queue holds every pool); the waiting twin,
# without p5od, has the reservation's flavor still pending at the block's drain (it opens on
# 31 Dec), so nothing is left. The burst worker (stacks/Pulumi.burst.yaml) with a window on its
# block: its queue `burst` lists h100-spot first, and its drained work requeues there, on the
# worker.
EXPECTED = {
    "window": {("block", "shared"): "p5od"},
    "window-waiting": {("block", "shared"): None},
    "burst-window": {("h100-block", "burst"): "h100-spot"},
}


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_a_drained_workload_is_admitted_to_the_queues_next_open_flavor_or_none(stack):
    assert destinations(stack) == EXPECTED[stack]


@pytest.mark.parametrize("stack", sorted(CONFIGS))
def test_the_plan_warns_exactly_where_a_drained_workload_has_nowhere_to_go(stack):
    waiting = sorted(k for k, flavor in destinations(stack).items() if flavor is None)
    warned = drain_waits(CONFIGS[stack])
    assert {warning_kind(w) for w in warned} <= {"reservation-drain-waits"}
    said = sorted(
        (group, queue)
        for group, queue in waiting
        for w in warned
        if f"gpu_node_groups {group}:" in w and f"ClusterQueue {queue} " in w
    )
    assert said == waiting and len(warned) == len(waiting), warned


@pytest.mark.parametrize("stack", sorted(CONFIGS))
def test_a_drained_workload_never_returns_to_a_closed_window(stack):
    cfg = CONFIGS[stack]
    windows = {g.name: g.reservation_window.window() for g in windowed(cfg)}
    for (group, _), flavor in destinations(stack).items():
        if flavor in windows:
            draining = windows[group].transitions()["draining"]
            assert flavor != group and windows[flavor].phase(draining) == "open", flavor


def test_the_docs_say_a_drained_workload_requeues_to_its_queues_flavors_never_a_burst_worker():
    # docs/gpu-nodes.md, "Reservation windows": the draining row of the block's timeline.
    page = (ROOT / "docs" / "gpu-nodes.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| 16 Dec 10:30 | draining")]
    assert "Never to a burst worker" in row
    assert "`reservation-drain-waits`" in row
    # What the burst worker's own block does, as EXPECTED above has it.
    assert "(`h100-spot`)" in row
