"""The job builder's CronJob: a Job of components/scheduling/training_job.py started on a schedule,
as the periodic self-test runs on each pool (components/selftest/schedule.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.scheduling.job_spec import TrainingJobSpec
from components.scheduling.training_job import job, job_labels
from components.vocabulary import BATCH_API


@dataclass(frozen=True)
class Schedule:
    """When a CronJob starts its Job, in UTC, and how it treats runs that overlap or are late."""

    cron: str
    # A run still queued or running when the next is due: the next is skipped, so that runs of
    # one pool never pile up behind each other (Kubernetes docs, "CronJob": concurrencyPolicy).
    concurrency_policy: str = "Forbid"
    # A start missed by more than this (controller down, the previous run still going) is
    # skipped; the CronJob controller gives up on a CronJob that missed over 100 starts in the
    # window, so it stays bounded (Kubernetes docs, "CronJob limitations").
    starting_deadline_seconds: int = 600
    successful_history: int = 3
    failed_history: int = 3


def cron_job(spec: TrainingJobSpec, schedule: Schedule) -> dict[str, Any]:
    """The Job of `spec` as a CronJob's template. One node only: the controller names each Job,
    so pods cannot find their peers (components/scheduling/training_job.py's docstring). Kueue reads
    the queue from the template's labels, which every Job the CronJob creates carries (Kueue docs,
    "Run a CronJob")."""
    if spec.nodes != 1 or not spec.standalone:
        raise ValueError(f"{spec.name}: a scheduled job runs standalone on one node")
    body = job(spec)
    return {
        "apiVersion": BATCH_API,
        "kind": "CronJob",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": dict(spec.labels)},
        "spec": {
            "schedule": schedule.cron,
            # Without it the controller reads the schedule in its own local time zone.
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": schedule.concurrency_policy,
            "startingDeadlineSeconds": schedule.starting_deadline_seconds,
            "successfulJobsHistoryLimit": schedule.successful_history,
            "failedJobsHistoryLimit": schedule.failed_history,
            "jobTemplate": {"metadata": {"labels": job_labels(spec)}, "spec": body["spec"]},
        },
    }
