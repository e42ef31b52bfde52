"""The reservation controller (bootstrap/selftest/reservation.py) against a stand-in API server
over TLS: what it asks the API for in each phase of a window, with the settings the program puts
in its CronJobs (tests/components/scheduling/test_reservation_clock.py runs those CronJobs on a
simulated clock)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from selftest import reservation
from selftest.kube import ApiServer as Client

from tests.helpers.kube_api import ApiServer

CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/shared"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/workloads"
OPEN = {"cpu": "384", "memory": "4096Gi", "nvidia.com/gpu": "16"}
ENV = {
    "RESERVATION_FLAVOR": "block",
    "RESERVATION_START": "2026-12-14T11:30:00+00:00",
    "RESERVATION_END": "2026-12-16T11:30:00+00:00",
    "RESERVATION_WARMUP_MINUTES": "30",
    "RESERVATION_DRAIN_MINUTES": "60",
    "RESERVATION_ON_DRAIN": "requeue",
    "RESERVATION_QUOTAS": json.dumps({"shared": OPEN}),
    "RESERVATION_NAMESPACES": "training",
}


def queue(gpus: str) -> dict:
    resources = [{"name": r, "nominalQuota": "0"} for r in OPEN]
    resources[-1]["nominalQuota"] = gpus
    other = [{"name": r, "nominalQuota": q} for r, q in OPEN.items()]
    return {
        "metadata": {"name": "shared"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": list(OPEN),
                    "flavors": [
                        {"name": "block", "resources": resources},
                        {"name": "p5od", "resources": other},
                    ],
                }
            ]
        },
    }


def workload(name: str, flavor: str, holds: bool) -> dict:
    return {
        "metadata": {"name": name, "namespace": "training"},
        "spec": {"active": True},
        "status": {
            "admission": {
                "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": flavor}}]
            },
            "conditions": [{"type": "QuotaReserved", "status": "True" if holds else "False"}],
        },
    }


def answers() -> dict:
    on_block, elsewhere = workload("a", "block", True), workload("b", "p5od", True)
    return {
        ("GET", CQ): (200, queue("0")),
        ("PATCH", CQ): (200, {}),
        ("GET", WORKLOADS): (200, {"items": [on_block, elsewhere]}),
        ("PATCH", f"{WORKLOADS}/a"): (200, {}),
        ("GET", f"{WORKLOADS}/a"): (200, on_block),
    }


def patches(api: ApiServer) -> list[tuple[str, dict]]:
    return [(path, body) for method, path, _, body in api.received if method == "PATCH"]


def block_quota(body: dict) -> dict[str, str]:
    (group,) = body["spec"]["resourceGroups"]
    (block,) = [f for f in group["flavors"] if f["name"] == "block"]
    return {r["name"]: r["nominalQuota"] for r in block["resources"]}


def test_open_sets_the_flavors_quota_and_touches_no_workload(tmp_path):
    with ApiServer(tmp_path, answers()) as api:
        client = Client.in_cluster(api.env())
        reservation.reconcile(client, ENV, datetime(2026, 12, 14, 12, 0, tzinfo=UTC))
    ((path, body),) = patches(api)
    assert path == CQ and block_quota(body) == OPEN
    # The other flavor's quota goes back as it was: a merge patch replaces the list whole.
    assert (
        body["spec"]["resourceGroups"][0]["flavors"][1]
        == queue("0")["spec"]["resourceGroups"][0]["flavors"][1]
    )
    assert not any(path.startswith(WORKLOADS) for _, path, _, _ in api.received)


def test_warming_keeps_the_flavor_at_zero(tmp_path):
    with ApiServer(tmp_path, answers()) as api:
        client = Client.in_cluster(api.env())
        reservation.reconcile(client, ENV, datetime(2026, 12, 14, 11, 30, tzinfo=UTC))
    ((path, body),) = patches(api)
    assert path == CQ
    assert block_quota(body) == {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}


def test_the_drain_deactivates_what_is_on_the_flavor_and_requeues_it_once_released(tmp_path):
    table = answers()
    released = workload("a", "block", False)

    def sleep(_seconds):
        # Kueue has evicted it meanwhile: its pods had their grace, the quota is released.
        table[("GET", f"{WORKLOADS}/a")] = (200, released)

    with ApiServer(tmp_path, table) as api:
        client = Client.in_cluster(api.env())
        did = reservation.reconcile(client, ENV, datetime(2026, 12, 16, 10, 30, tzinfo=UTC), sleep)
    cq, off, on = patches(api)
    assert block_quota(cq[1]) == {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}
    # Only the workload admitted to the block; b runs on p5od and is left alone.
    assert off == (f"{WORKLOADS}/a", {"spec": {"active": False}})
    assert on == (f"{WORKLOADS}/a", {"spec": {"active": True}})
    assert did[-1] == "requeued training/a"


def test_hold_leaves_the_drained_workload_inactive(tmp_path):
    with ApiServer(tmp_path, answers()) as api:
        client = Client.in_cluster(api.env())
        env = {**ENV, "RESERVATION_ON_DRAIN": "hold"}
        reservation.reconcile(client, env, datetime(2026, 12, 16, 11, 45, tzinfo=UTC))
    _, off = patches(api)
    assert off == (f"{WORKLOADS}/a", {"spec": {"active": False}})
