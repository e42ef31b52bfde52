"""The job kinds the platform submits through Kueue (components/scheduling/kueue_frameworks.py):
JobSets (every job the builder renders) and batch Jobs (the self-test schedule's CronJob), and
what a MultiKueue worker grants its manager for them."""

from __future__ import annotations

from components.scheduling.kueue_frameworks import FRAMEWORKS, INTEGRATIONS


def test_jobsets_and_batch_jobs_are_integrated_under_kueues_own_names():
    # Kueue v0.19.2 pkg/controller/jobs/job: FrameworkName = "batch/job"; pkg/controller/jobs/
    # jobset: FrameworkName = "jobset.x-k8s.io/jobset". JobSet v0.12.0 serves only v1alpha2
    # (shared/crds/jobset.x-k8s.io/JobSet.v1alpha2.json).
    assert INTEGRATIONS == ("batch/job", "jobset.x-k8s.io/jobset")
    job, jobset = FRAMEWORKS
    assert (job.group, job.api, job.resource) == ("batch", "batch/v1/Job", "jobs")
    assert (jobset.group, jobset.api, jobset.resource) == (
        "jobset.x-k8s.io",
        "jobset.x-k8s.io/v1alpha2/JobSet",
        "jobsets",
    )


def test_the_worker_grants_what_create_multikueue_kubeconfig_grants_for_each_kind():
    # Kueue v0.19.2 site/static/examples/multikueue/create-multikueue-kubeconfig.sh: jobs and
    # jobsets create, delete, get, list, watch; jobs/status and jobsets/status get
    # (shared/PINS.md, "JobSet (0.12.0)", MultiKueue worker RBAC).
    job, jobset = FRAMEWORKS
    assert job.worker_rules() == [
        {
            "apiGroups": ["batch"],
            "resources": ["jobs"],
            "verbs": ["create", "delete", "get", "list", "watch"],
        },
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    ]
    assert jobset.worker_rules() == [
        {
            "apiGroups": ["jobset.x-k8s.io"],
            "resources": ["jobsets"],
            "verbs": ["create", "delete", "get", "list", "watch"],
        },
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    ]
