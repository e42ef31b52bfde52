"""The platform ledger's timeline as the API holds it (jobs/platform_ledger.py): Kueue's Workload
conditions at v0.19.2 (apis/kueue/v1beta2/workload_types.go: QuotaReserved, Evicted with its
reason, Finished) and the pods' conditions; and the GPU-hour each stack's pool is priced at."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from jobs import ledger
from jobs.platform_ledger import gpu_hour_price, seconds, timeline
from tests.conftest import stack_config
from tests.helpers.jobset_objects import T0, jobset, pod, workload
from tests.helpers.kube_api import node


def condition(kind: str, at: str, reason: str = "") -> dict[str, str]:
    return {"type": kind, "status": "True", "lastTransitionTime": at, "reason": reason}


def test_a_preempted_and_readmitted_job_reads_as_an_eviction_then_a_restart():
    # Evicted (Preempted) at 22:00:00, quota reserved again at 22:10:00; its pods scheduled
    # 22:12:00 and ready 22:15:00; now 22:30:00. Before the eviction the API keeps no
    # admission time: T0 21:04:11 to 22:00:00 (3349 s) is unrecorded, outside the
    # allocation; 22:00 to 22:10 queueing (600 s); 22:10 to 22:15 restart (300 s); running
    # 22:15 to 22:30 (900 s). Allocation 1200 s.
    held = [
        condition("Evicted", "2026-12-01T22:00:00Z", "Preempted"),
        condition("QuotaReserved", "2026-12-01T22:10:00Z", "QuotaReserved"),
    ]
    pods = [pod(0, "2026-12-01T22:10:30Z", "2026-12-01T22:12:00Z", "2026-12-01T22:15:00Z")]
    job = jobset("running")
    events, end = timeline(job, workload(held, gpus="8"), pods, seconds("2026-12-01T22:30:00Z"))
    book = ledger.ledger(events, end, gpus=8)
    assert (book.unrecorded_outside, book.queueing) == (3349, 600)
    assert (book.allocation, book.goodput, book.badput["restart"]) == (1200, 900, 300)
    assert book.restarts == {"evicted: Preempted": 1}


def test_a_job_still_queued_has_no_allocation():
    events, end = timeline(jobset("queued"), workload([], gpus="16"), [], seconds(T0) + 90)
    book = ledger.ledger(events, end, gpus=16)
    assert (book.allocation, book.queueing) == (0, 90)


def test_an_existing_clusters_pool_is_not_priced_and_says_why():
    # stacks/Pulumi.onprem.yaml: provider existing; no AWS price applies to its own nodes.
    cfg = stack_config("onprem")
    pool = cfg.gpu_pools[0].name
    assert gpu_hour_price(cfg, pool) == (
        None,
        "provider existing: the cluster runs on your own machines; no AWS prices apply",
    )
    assert gpu_hour_price(cfg, "nope")[0] is None


def quarantined(name: str, stamp: str) -> dict:
    """A Node as the image's quarantine leaves it, annotated `<RFC 3339 UTC> <checks>`
    (contract/quarantine.py; tests/image/selftest/test_quarantine.py holds the image to it)."""
    marked = node(name, {"gpu-platform/selftest-failed": stamp.split()[1].split(",")[0]})
    marked["metadata"]["annotations"] = {"gpu-platform/quarantined": stamp}
    return marked


def test_a_quarantine_the_node_records_is_the_cause_of_the_restart_from_its_time():
    # Quota reserved 22:00:00; pods on node-a and node-b scheduled 22:01:00, ready 22:02:00;
    # the watcher quarantines node-b (hardware.xid) at 22:20:00; now
    # 22:22:00, the group not yet recreated. Provisioning 60 s, pull 60 s, running 22:02 to
    # 22:20 (1080 s), then restart 120 s: 1320 s allocated. node-a's mark, from 21:30:00,
    # before this admission, cost the job nothing.
    held = [condition("QuotaReserved", "2026-12-01T22:00:00Z", "QuotaReserved")]
    at = ("2026-12-01T22:00:10Z", "2026-12-01T22:01:00Z", "2026-12-01T22:02:00Z")
    pods = [pod(0, *at, node="node-a"), pod(1, *at, node="node-b")]
    nodes = [
        quarantined("node-a", "2026-12-01T21:30:00Z nvme.randread"),
        quarantined("node-b", "2026-12-01T22:20:00Z hardware.xid"),
    ]
    now = seconds("2026-12-01T22:22:00Z")
    events, end = timeline(jobset("running"), workload(held, gpus="16"), pods, now, nodes)
    assert ledger.Event(seconds("2026-12-01T22:20:00Z"), ledger.QUARANTINED,
                        "quarantined node-b: hardware.xid") in events  # fmt: skip
    book = ledger.ledger(events, end, gpus=16)
    assert (book.allocation, book.goodput) == (1320, 1080)
    assert (book.badput["provisioning"], book.badput["image pull / init"]) == (60, 60)
    assert book.badput["restart"] == 120
    assert book.restarts == {"quarantined node-b: hardware.xid": 1}


@pytest.mark.parametrize("known", [True, False])
def test_a_quarantine_keeps_the_allocation_and_never_raises_goodput(known):
    """The ledger's invariants through the platform's reading: whenever a node of the job is
    quarantined (before, inside or after its allocation), the allocation's seconds are the
    same and goodput is no higher than without it."""
    held = [condition("QuotaReserved", "2026-12-01T22:00:00Z", "QuotaReserved")]
    at = ("2026-12-01T22:00:10Z", "2026-12-01T22:01:00Z", "2026-12-01T22:02:00Z")
    pods = [pod(0, *at, node="node-a")]
    now = seconds("2026-12-01T23:00:00Z")
    job, admitted = jobset("running"), workload(held, gpus="8")
    plain = ledger.ledger(*timeline(job, admitted, pods, now), 8, known)
    for minute in range(-10, 70):
        at = datetime.fromisoformat("2026-12-01T22:00:00Z") + timedelta(minutes=minute)
        stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        events, end = timeline(job, admitted, pods, now, [quarantined("node-a", f"{stamp} x")])
        book = ledger.ledger(events, end, 8, known)
        assert book.allocation == plain.allocation == 3600, stamp
        assert book.goodput + sum(book.badput.values()) == book.allocation
        assert book.goodput <= plain.goodput, stamp
