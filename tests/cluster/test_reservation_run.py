"""A reserved pool's window run whole (issue 40 §1): each CronJob the plan writes for the window
stack (tests/helpers/varied_stacks.WINDOW_STACK: a Capacity Block that requeues, a capacity
reservation that holds) read from out/<stack>/manifests/, its Job made as the CronJob controller
makes it at the minute its schedule fires, left alone by Kueue as the rendered
kueue-manager-config configures it, and its pod run on the platform's system node by the box's
kubelet in the self-test image's layout (tests/helpers/box_cluster.py), against an API server
stand-in holding the rendered ClusterQueues and, in every namespace whose LocalQueue submits to
them, one Workload admitted to the pool's flavor and one to the on-demand flavor.

The controller reads the time itself (bootstrap/selftest/reservation.py: datetime.now(UTC)); the
pod's clock is the minute the CronJob fired, set by a `sitecustomize` first on the pod's
PYTHONPATH that only these tests put there (CLOCK).

Asserted: what the process asked the API server: the flavor's quota in the ClusterQueue patched
to the phase's value; in draining and closed, the pool's Workloads deactivated (spec.active
false) and, where the window requeues, reactivated once Kueue released them; the on-demand
flavor's Workload never touched; and every request one the rendered RBAC grants the pod's
ServiceAccount (tests/controllers/rbac.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from croniter import croniter

from plan.render import render_plan
from tests.conftest import SHARED_HELM
from tests.controllers.rbac import account_grants, permits, request_of
from tests.helpers.box_cluster import SYSTEM_NODE, Cluster, Wrap, outcome_text, write_plan
from tests.helpers.box_stacks import box_of
from tests.helpers.kube_api import ApiServer, merge_patched
from tests.helpers.varied_stacks import WINDOW_STACK, window_config, window_plan

# Kueue v0.19.2 serves kueue.x-k8s.io/v1beta2.
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
# The CronJob controller's name for the Job of a scheduled time: <cronjob>-<minutes since the
# epoch> (kubernetes pkg/controller/cronjob/utils.go, getJobFromTemplate2, getTimeHashInMinutes).
SCHEDULED_AT = "batch.kubernetes.io/cronjob-scheduled-timestamp"
# The window stack's one queue, and its on-demand flavor that takes drained work.
QUEUE, ON_DEMAND = "shared", "p5od"
# Each windowed pool of the window stack (tests/helpers/varied_stacks.py: ODCR_WINDOW holds,
# BLOCK_WINDOW takes the default, requeue). Both are 2 p5.48xlarge (gpu_node_groups' default
# scaling.max_size, model/config/nodes.py); a p5.48xlarge has 8 H100 GPUs, 192 vCPUs and
# 2,048 GiB of memory (AWS, "Amazon EC2 P5 instances"): the flavor's open quota.
OPEN = {"cpu": "384", "memory": "4096Gi", "nvidia.com/gpu": "16"}
CLOSED = {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}
ON_DRAIN = {"block": "requeue", "odcr": "hold"}
# What each phase's run does to the flavor and to its Workloads (bootstrap/selftest/
# reservation.py's docstring; contract/reservation.py): the quota, deactivated, reactivated.
PHASES = {
    "warming": (CLOSED, False),
    "open": (OPEN, False),
    "reconcile": (OPEN, False),  # its first run after the open one: inside the window
    "draining": (CLOSED, True),
    "closed": (CLOSED, True),
}
# The pod's clock: datetime.now() (and datetime.now(tz)) is the instant the CronJob fired.
CLOCK = """import datetime as _datetime

_Base = _datetime.datetime
_AT = _Base.fromisoformat({at!r})


class _Fired(_Base):
    @classmethod
    def now(cls, tz=None):
        return _AT.astimezone(tz) if tz is not None else _AT.replace(tzinfo=None)


_datetime.datetime = _Fired
"""
# Where the stack's plan is made (tests/helpers/prometheus.ANSWERED_AT's day): every schedule
# fires next within the year after it.
PLANNED = datetime(2026, 12, 5, tzinfo=UTC)


def clock_at(at: datetime, folder: Path) -> Wrap:
    """The pod's argv and env, with CLOCK first on its PYTHONPATH."""
    folder.mkdir(parents=True)
    (folder / "sitecustomize.py").write_text(CLOCK.format(at=at.isoformat()))

    def wrap(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        path = ":".join(filter(None, [str(folder), env.get("PYTHONPATH", "")]))
        return argv, {**env, "PYTHONPATH": path}

    return wrap


def fires(cronjob: dict[str, Any], after: datetime) -> datetime:
    """When the CronJob's schedule next fires after `after`, in its timeZone (Etc/UTC)."""
    assert cronjob["spec"]["timeZone"] == "Etc/UTC", cronjob["spec"].get("timeZone")
    return croniter(cronjob["spec"]["schedule"], after).get_next(datetime)


def job_of(cronjob: dict[str, Any], at: datetime) -> dict[str, Any]:
    """The Job the CronJob controller creates for the run scheduled at `at`."""
    template, meta = cronjob["spec"]["jobTemplate"], cronjob["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{meta['name']}-{int(at.timestamp()) // 60}",
            "namespace": meta["namespace"],
            "labels": dict(template.get("metadata", {}).get("labels", {})),
            "annotations": {SCHEDULED_AT: at.isoformat()},
        },
        "spec": json.loads(json.dumps(template["spec"])),
    }


def workload(name: str, flavor: str) -> dict[str, Any]:
    """A Workload Kueue admitted to `flavor` in the queue (v1beta2: status.admission's
    podSetAssignments map each resource to a flavor), holding its quota."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"active": True},
        "status": {
            "admission": {
                "clusterQueue": QUEUE,
                "podSetAssignments": [
                    {"name": "trainer", "flavors": {r: flavor for r in OPEN}, "count": 1}
                ],
            },
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
        },
    }


def released(doc: dict[str, Any]) -> dict[str, Any]:
    """The Workload once Kueue has evicted it and released its quota."""
    return {**doc, "status": {"conditions": [{"type": "Evicted", "status": "True"}]}}


def serve(api: ApiServer, cluster: Cluster, pool: str) -> list[str]:
    """The rendered ClusterQueues and, in each namespace whose LocalQueue submits to QUEUE, a
    Workload on the pool's flavor and one on ON_DEMAND; those namespaces."""
    api.answers.clear()
    for cq in (o for o in cluster.manifests if o["kind"] == "ClusterQueue"):
        path = f"{KUEUE}/clusterqueues/{cq['metadata']['name']}"
        api.answers[("GET", path)] = api.answers[("PATCH", path)] = (200, cq)
    namespaces = sorted(
        o["metadata"]["namespace"]
        for o in cluster.manifests
        if o["kind"] == "LocalQueue" and o["spec"]["clusterQueue"] == QUEUE
    )
    for namespace in namespaces:
        path = f"{KUEUE}/namespaces/{namespace}/workloads"
        docs = [workload(f"jobset-{pool}-run", pool), workload("jobset-od-run", ON_DEMAND)]
        api.answers[("GET", path)] = (200, {"kind": "WorkloadList", "items": docs})
        for doc in docs:
            one = f"{path}/{doc['metadata']['name']}"
            api.answers[("GET", one)] = (200, released(doc))
            api.answers[("PATCH", one)] = (200, doc)
    return namespaces


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(pool, phase) -> (the run's outcome, the requests it made, the namespaces served), and
    the ClusterQueues and grants as rendered."""
    cfg, plan = window_config(), window_plan()
    folder = tmp_path_factory.mktemp("reservation")
    out = write_plan(plan, render_plan(plan, (SHARED_HELM,)), folder / "out" / WINDOW_STACK)
    found = {}
    with box_of(cfg, out, folder) as (cluster, _), ApiServer(folder / "api", {}) as api:
        cluster.api = api
        cronjobs = {
            (o["metadata"]["labels"]["gpu-platform/pool"], o["metadata"]["name"].rsplit("-", 1)[1]):
            o
            for o in cluster.manifests
            if o["kind"] == "CronJob"
            and o["metadata"]["labels"].get("app.kubernetes.io/name") == "reservation-controller"
        }  # fmt: skip
        for pool in ON_DRAIN:
            for phase in PHASES:
                cronjob = cronjobs[pool, phase]
                after = fires(cronjobs[pool, "open"], PLANNED) if phase == "reconcile" else PLANNED
                at = fires(cronjob, after)
                namespaces = serve(api, cluster, pool)
                mark = len(api.received)
                wrap = clock_at(at, folder / "clocks" / f"{pool}-{phase}")
                outcome = cluster.run_job(job_of(cronjob, at), node=SYSTEM_NODE, wrap=wrap)
                found[pool, phase] = outcome, api.received[mark:], namespaces
        cluster.api = None
        queues = {
            o["metadata"]["name"]: o for o in cluster.manifests if o["kind"] == "ClusterQueue"
        }
        (job,) = {c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"]
                  for c in cronjobs.values()}  # fmt: skip
        grants = account_grants(cluster.objects(), job, cfg.namespaces.selftest)
        yield found, queues, grants


CASES = [pytest.param(pool, phase, id=f"{pool}-{phase}") for pool in ON_DRAIN for phase in PHASES]


@pytest.mark.parametrize(("pool", "phase"), CASES)
def test_each_run_sets_its_flavors_quota_to_its_phases_value(runs, pool, phase):
    found, queues, _ = runs
    outcome, requests, _ = found[pool, phase]
    assert outcome.state == "Completed", outcome_text(outcome)
    path = f"{KUEUE}/clusterqueues/{QUEUE}"
    (patch,) = [body for method, p, _, body in requests if method == "PATCH" and p == path]
    after = merge_patched(queues[QUEUE], patch)
    quotas = {
        entry["name"]: {r["name"]: r["nominalQuota"] for r in entry["resources"]}
        for group in after["spec"]["resourceGroups"]
        for entry in group["flavors"]
    }
    wanted, _ = PHASES[phase]
    assert quotas[pool] == wanted, (phase, quotas)
    # The on-demand flavor, which takes the drained work, is left as rendered.
    assert quotas[ON_DEMAND] == OPEN, quotas


@pytest.mark.parametrize(("pool", "phase"), CASES)
def test_draining_and_closed_runs_deactivate_the_pools_workloads_and_requeue_as_asked(
    runs, pool, phase
):
    found, _, _ = runs
    outcome, requests, namespaces = found[pool, phase]
    assert outcome.state == "Completed", outcome_text(outcome)
    _, evicts = PHASES[phase]
    wanted = []
    if evicts:
        ours = [f"{KUEUE}/namespaces/{ns}/workloads/jobset-{pool}-run" for ns in namespaces]
        wanted += [(p, {"spec": {"active": False}}) for p in ours]
        if ON_DRAIN[pool] == "requeue":
            wanted += [(p, {"spec": {"active": True}}) for p in ours]
    patched = [
        (p, body) for method, p, _, body in requests if method == "PATCH" and "/workloads/" in p
    ]
    assert sorted(patched, key=str) == sorted(wanted, key=str), outcome_text(outcome)


@pytest.mark.parametrize(("pool", "phase"), CASES)
def test_every_request_of_a_run_is_one_its_service_account_is_granted(runs, pool, phase):
    found, _, grants = runs
    _, requests, _ = found[pool, phase]
    refused = [(m, p) for m, p, _, _ in requests if not permits(grants, request_of(m, p))]
    assert requests, "the run made no request"
    assert not refused, f"not granted to its ServiceAccount: {refused}"
