"""The platform ledger's timeline as the API holds it (jobs/platform_ledger.py): Kueue's Workload
conditions at v0.19.2 (apis/kueue/v1beta2/workload_types.go: QuotaReserved, Evicted with its
reason, Finished) and the pods' conditions; and the GPU-hour each stack's pool is priced at."""

from __future__ import annotations

from jobs import ledger
from jobs.platform_ledger import gpu_hour_price, seconds, timeline
from tests.conftest import stack_config
from tests.helpers.jobset_objects import T0, jobset, pod, workload


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
