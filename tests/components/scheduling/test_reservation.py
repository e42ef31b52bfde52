"""Every reserved pool with a window, in every AWS stack and the window stack
(tests/helpers/varied_stacks.py), planned: its transitions' CronJobs in the platform's namespace,
in UTC, valid for the cluster's Kubernetes version; its flavor declared closed; an account that
may touch only the ClusterQueues holding it; none of it where no pool has a window."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from croniter import croniter

from components.scheduling.reservation import cron_at, during
from components.selftest.schedule import IDLE_QUEUE
from model.config.pools import windowed
from tests.conftest import AWS_STACKS, planned, stack_config, validate_kubernetes
from tests.controllers.pod_security import pod_templates, violations
from tests.helpers.plan_objects import kinds
from tests.helpers.varied_stacks import WINDOW_STACK, window_config, window_plan

PHASES = ("warming", "open", "draining", "closed", "reconcile")


def plan_and_config(stack: str):
    if stack == WINDOW_STACK:
        return window_plan(), window_config()
    return planned(stack), stack_config(stack)


@pytest.mark.parametrize("stack", [*AWS_STACKS, WINDOW_STACK])
def test_each_window_is_declared_with_its_cron_jobs_and_closed_flavor(stack):
    plan, cfg = plan_and_config(stack)
    names = [g.name for g in windowed(cfg)]
    jobs = {
        o["metadata"]["name"]: o
        for o in kinds(plan, "CronJob")
        if o["metadata"]["name"].startswith("reservation-")
    }
    assert sorted(jobs) == sorted(f"reservation-{g}-{p}" for g in names for p in PHASES)
    for job in jobs.values():
        assert job["metadata"]["namespace"] == cfg.namespaces.selftest
        assert job["spec"]["timeZone"] == "Etc/UTC"
        assert croniter.is_valid(job["spec"]["schedule"]), job["spec"]["schedule"]
        validate_kubernetes(job, cfg.cluster.kubernetes_version)
    queues = {o["metadata"]["name"]: o for o in kinds(plan, "ClusterQueue")}
    holding = sorted(
        name
        for name, cq in queues.items()
        for group in cq["spec"].get("resourceGroups", [])
        for flavor in group["flavors"]
        if flavor["name"] in names
    )
    for name in holding:
        for group in queues[name]["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                if flavor["name"] in names:
                    # Zero of each resource, in its own unit (memory's `0Gi`).
                    quotas = {r["nominalQuota"] for r in flavor["resources"]}
                    assert all(re.fullmatch(r"0(?:[KMGTPE]i?)?", q) for q in quotas), quotas
    roles = {o["metadata"]["name"]: o for o in kinds(plan, "ClusterRole")}
    if not names:
        assert "reservation-controller" not in roles
        return
    # Only the queues that hold a windowed flavor, by name; only get and patch. The self-test's
    # idle-nodes queue holds every scheduled pool's flavor at 0 and only borrows what the cohort
    # lends (components/selftest/schedule.py): a closed window lends nothing, so it is left as
    # declared.
    opened = set(holding) - {IDLE_QUEUE}
    assert roles["reservation-controller"]["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues"],
            "resourceNames": sorted(opened),
            "verbs": ["get", "patch"],
        }
    ]
    bindings = [
        o
        for o in kinds(plan, "RoleBinding")
        if o["metadata"]["name"] == "reservation-controller-workloads"
    ]
    # The namespaces whose LocalQueues submit to those queues (the self-test's own among them:
    # its runs land on the block's nodes too), read from the plan's LocalQueues.
    submitting = {
        q["metadata"]["namespace"]
        for q in kinds(plan, "LocalQueue")
        if q["spec"]["clusterQueue"] in opened
    }
    assert "training" in submitting
    assert {b["metadata"]["namespace"] for b in bindings} == submitting


def test_the_window_stack_holds_both_capacity_kinds_with_windows():
    """The class covered: a Capacity Block and a capacity reservation, each with a window."""
    _, cfg = plan_and_config(WINDOW_STACK)
    assert sorted(g.capacity for g in windowed(cfg)) == ["capacity_block", "reservation"]


def test_a_transition_fires_at_its_minute_and_the_reconcile_on_every_day_of_the_window():
    # Standard cron fields: minute hour day-of-month month day-of-week.
    assert cron_at(datetime(2027, 1, 1, 3, 40, tzinfo=UTC)) == "40 3 1 1 *"
    # The reservation's window of the window stack, over a year's end: 31 December and 1 January.
    odcr = window_config().gpu_node_groups[0].reservation_window
    assert odcr is not None
    assert during(odcr.window()) == "*/10 * 1,31 1,12 *"


def test_the_controllers_objects_are_valid_and_its_pods_pass_restricted():
    plan, cfg = plan_and_config(WINDOW_STACK)
    mine = [
        o for o in plan.kubernetes_objects() if o["metadata"]["name"].startswith("reservation-")
    ]
    assert {o["kind"] for o in mine} == {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "RoleBinding", "CronJob"
    }  # fmt: skip
    for obj in mine:
        validate_kubernetes(obj, cfg.cluster.kubernetes_version)
        # Pod Security "restricted", the strictest level, whatever the namespace enforces.
        pods = pod_templates(obj)
        assert len(pods) == (obj["kind"] == "CronJob")
        for pod in pods:
            assert violations(pod, "restricted") == [], obj["metadata"]["name"]
