"""The job kinds the platform submits through Kueue (components/scheduling/kueue_frameworks.py):
batch Jobs only, and what a MultiKueue worker grants its manager for them."""

from __future__ import annotations

from components.scheduling.kueue_frameworks import FRAMEWORKS, INTEGRATIONS


def test_only_batch_jobs_are_integrated_under_kueues_own_name():
    # Kueue v0.19.2 pkg/controller/jobs/job: FrameworkName = "batch/job".
    assert INTEGRATIONS == ("batch/job",)
    (job,) = FRAMEWORKS
    assert (job.group, job.api, job.resource) == ("batch", "batch/v1/Job", "jobs")


def test_the_worker_grants_what_create_multikueue_kubeconfig_grants_for_jobs():
    # Kueue v0.19.2 site/static/examples/multikueue/create-multikueue-kubeconfig.sh: jobs
    # create, delete, get, list, watch; jobs/status get.
    (job,) = FRAMEWORKS
    assert job.worker_rules() == [
        {
            "apiGroups": ["batch"],
            "resources": ["jobs"],
            "verbs": ["create", "delete", "get", "list", "watch"],
        },
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    ]
