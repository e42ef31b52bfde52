"""The idle reclaimer, image side (bootstrap/selftest/reclaim.py): asked by a stand-in
Prometheus which jobs are idle, it deactivates through a stand-in API server (TLS, a pod's
ServiceAccount) the Workload that the idle JobSet owns when it is admitted in a reclaimable
ClusterQueue or at a reclaimable priority class, and leaves every other one untouched: a
production-priority one, a busy job's, one already deactivated, one never admitted."""

from __future__ import annotations

from selftest import reclaim

from tests.helpers.kube_api import ApiServer
from tests.helpers.prometheus import Prometheus, sample

# Kueue v0.19.2: the Workload API a client lists and patches (kueue.x-k8s.io/v1beta2).
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads"
QUERY = "max_over_time(gpu_platform_job:gpu_utilisation:max[60m]) < 30"


def workload(name, job, queue, priority, klass, active=True, admitted=True) -> dict:
    """A Workload as Kueue makes one for a JobSet: owned by it, with its priority and class
    (spec.priority, spec.priorityClassName) and, once admitted, its ClusterQueue
    (status.admission.clusterQueue; workload_types.go)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": job,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "active": active,
            "priority": priority,
            "priorityClassName": klass,
            "queueName": "default",
        },
        "status": {"admission": {"clusterQueue": queue}} if admitted else {},
    }


LIST = {
    "items": [
        workload("jobset-scratch-1a2b3", "scratch", "research-q", 10000, "research"),
        workload("jobset-pretrain-4c5d6", "pretrain", "research-q", 100000, "production-training"),
        workload("jobset-sweep-7e8f9", "sweep", "prod-q", 1000, "preemptible"),
        workload("jobset-busy-0a1b2", "busy", "research-q", 10000, "research"),
        workload("jobset-parked-3c4d5", "parked", "research-q", 10000, "research", active=False),
        workload("jobset-waiting-6e7f8", "waiting", "research-q", 10000, "research",
                 admitted=False),
    ]
}  # fmt: skip
IDLE = [sample(12, namespace="team-a", job_name=job, team="team-a")
        for job in ("scratch", "pretrain", "sweep", "parked", "waiting")]  # fmt: skip


def env(api, prometheus, **extra) -> dict[str, str]:
    return {
        **api.env(),
        "SELFTEST_PROMETHEUS_URL": prometheus.url,
        "SELFTEST_RECLAIM_QUERY": QUERY,
        "SELFTEST_RECLAIM_NAMESPACES": "team-a",
        "SELFTEST_RECLAIM_QUEUES": "research-q",
        "SELFTEST_RECLAIM_PRIORITY_CLASSES": "preemptible",
        # The production-training WorkloadPriorityClass's value (components/scheduling/queues.py).
        "SELFTEST_RECLAIM_SPARED_PRIORITY": "100000",
        **extra,
    }


def patched(api) -> dict[str, dict]:
    return {path: body for method, path, _, body in api.received if method == "PATCH"}


def test_only_the_idle_reclaimable_workloads_are_deactivated_and_only_spec_active(tmp_path):
    answers = {("GET", WORKLOADS): (200, LIST)}
    for name in ("jobset-scratch-1a2b3", "jobset-sweep-7e8f9"):
        answers[("PATCH", f"{WORKLOADS}/{name}")] = (200, {"kind": "Workload"})
    with ApiServer(tmp_path, answers) as api, Prometheus(IDLE) as prometheus:
        api_env = env(api, prometheus)
        outcomes = reclaim.sweep(api_env, reclaim.ApiServer.in_cluster(api_env))
    assert prometheus.queries == [QUERY]
    # A merge patch of spec.active alone (Kueue workload_types.go, WorkloadSpec.Active).
    assert patched(api) == {
        f"{WORKLOADS}/jobset-scratch-1a2b3": {"spec": {"active": False}},
        f"{WORKLOADS}/jobset-sweep-7e8f9": {"spec": {"active": False}},
    }
    headers = [h for m, _, h, _ in api.received if m == "PATCH"]
    assert {h["Content-Type"] for h in headers} == {"application/merge-patch+json"}
    left = {o.job: o.why for o in outcomes if not o.deactivated}
    assert set(left) == {"pretrain", "parked", "waiting"}
    assert "production" in left["pretrain"]


def test_production_is_reclaimed_only_where_the_stack_allows_it(tmp_path):
    answers = {("GET", WORKLOADS): (200, LIST)}
    for name in ("jobset-scratch-1a2b3", "jobset-sweep-7e8f9", "jobset-pretrain-4c5d6"):
        answers[("PATCH", f"{WORKLOADS}/{name}")] = (200, {"kind": "Workload"})
    with ApiServer(tmp_path, answers) as api, Prometheus(IDLE) as prometheus:
        api_env = env(api, prometheus)
        del api_env["SELFTEST_RECLAIM_SPARED_PRIORITY"]
        reclaim.sweep(api_env, reclaim.ApiServer.in_cluster(api_env))
    assert f"{WORKLOADS}/jobset-pretrain-4c5d6" in patched(api)


def test_a_namespace_it_may_not_reclaim_in_is_never_read(tmp_path):
    idle = [sample(3, namespace="team-b", job_name="scratch", team="team-b")]
    with ApiServer(tmp_path, {}) as api, Prometheus(idle) as prometheus:
        api_env = env(api, prometheus)
        assert reclaim.sweep(api_env, reclaim.ApiServer.in_cluster(api_env)) == []
    assert api.received == []
