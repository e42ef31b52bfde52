"""Idle GPUs given back (issue 40 §3), modelled over every stack and ClusterQueue: with
scheduling.idle_reclaim naming a queue, the reclaimer the plan renders runs as its pod would (its
command and env exactly as rendered, the image's path; bootstrap/selftest/reclaim.py) against a
stand-in Prometheus that reports two idle jobs in every team namespace and a stand-in API server
that holds their Workloads: it deactivates the idle workload of that queue in every team
namespace that submits to it, never the one at the production-training priority, and its RBAC
(tests/controllers/rbac.py) lets it patch Workloads there and nowhere else.

Kueue's side, from v0.19.2 apis/kueue/v1beta2/workload_types.go (WorkloadSpec.Active): "Changing
active from true to false will evict any running workloads"; a workload with active false "should
never be admitted". So a deactivated workload's quota returns to the cohort and stays free until
its team sets active back to true."""

from __future__ import annotations

import pytest

from components.selftest.reclaim import reclaimer_objects
from model.config.idle_reclaim import IdleReclaimSettings
from tests.conftest import STACKS, stack_config
from tests.controllers.kueue_admission import Kueue, available, manager_config_from_rendered
from tests.controllers.rbac import account_grants, allowed
from tests.helpers import jobsets
from tests.helpers.alert_stacks import IMAGE
from tests.helpers.kube_api import ApiServer
from tests.helpers.plan_out import fixture_out, manifests
from tests.helpers.prometheus import Prometheus, sample
from tests.helpers.selftest_process import run
from tests.helpers.sharing_stacks import stack_file

# components/scheduling/queues.py PRIORITIES: the WorkloadPriorityClasses' values, as Kueue
# copies them into a Workload's spec.priority.
PRODUCTION, RESEARCH = 100000, 10000
ACCOUNT = "idle-reclaimer"
# Kueue 0.19.2 serves kueue.x-k8s.io/v1beta2.
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{}/workloads"


def reclaiming(stack: str, queue: str):
    cfg = stack_config(stack)
    sched = cfg.scheduling.model_copy(
        update={"idle_reclaim": IdleReclaimSettings(cluster_queues=[queue])}
    )
    selftest = cfg.selftest.model_copy(update={"image": cfg.selftest.image or IMAGE})
    return cfg.model_copy(update={"scheduling": sched, "selftest": selftest})


def cases():
    return [
        pytest.param(stack, q.name, id=f"{stack}-{q.name}")
        for stack in STACKS
        if stack_config(stack).scheduling.enabled and stack_config(stack).gpu_pools
        for q in stack_config(stack).scheduling.cluster_queues
    ]


def workload(name: str, job: str, queue: str, priority: int, klass: str) -> dict:
    """An admitted Workload as Kueue makes one for a JobSet: owned by it, its priority and class
    in spec, its ClusterQueue in status.admission."""
    return {
        "metadata": {"name": name, "ownerReferences": [{"kind": "JobSet", "name": job}]},
        "spec": {"active": True, "priority": priority, "priorityClassName": klass},
        "status": {"admission": {"clusterQueue": queue}},
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    with ApiServer(tmp_path_factory.mktemp("api"), {}) as server:
        yield server


@pytest.mark.parametrize(("stack", "queue"), cases())
def test_an_idle_workload_of_a_reclaimable_queue_is_deactivated_and_production_never(
    stack, queue, api
):
    cfg = reclaiming(stack, queue)
    objects = reclaimer_objects(cfg)
    for obj in objects:
        jobsets.validate_object(obj, cfg.cluster.kubernetes_version)
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    submitting = {t.name for t in teams if t.cluster_queue == queue}
    held = account_grants(objects, ACCOUNT, cfg.namespaces.selftest)
    for team in teams:
        assert allowed(held, "patch", "kueue.x-k8s.io", "workloads", team.name) == (
            team.name in submitting
        ), team.name
    # Nothing but Workloads: no pods, no JobSets, no nodes.
    for group, resource in (("", "pods"), ("jobset.x-k8s.io", "jobsets"), ("", "nodes")):
        assert not any(allowed(held, "patch", group, resource, t.name) for t in teams)

    api.received.clear()
    api.answers.clear()
    for team in teams:
        path = WORKLOADS.format(team.name)
        api.answers[("GET", path)] = (200, {"items": [
            workload("jobset-scratch-1a2b3", "scratch", queue, RESEARCH, "research"),
            workload("jobset-pretrain-4c5d6", "pretrain", queue, PRODUCTION,
                     "production-training"),
        ]})  # fmt: skip
        api.answers[("PATCH", f"{path}/jobset-scratch-1a2b3")] = (200, {"kind": "Workload"})
    idle = [sample(5, namespace=t.name, job_name=j, team=t.name)
            for t in teams for j in ("scratch", "pretrain")]  # fmt: skip
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    with Prometheus(idle) as prometheus:
        env["SELFTEST_PROMETHEUS_URL"] = prometheus.url
        done = run([*container["command"], "--once"], **env, **api.env())
    assert done.returncode == 0, done.stdout + done.stderr
    patched = {(path, str(body)) for method, path, _, body in api.received if method == "PATCH"}
    assert patched == {
        (f"{WORKLOADS.format(t)}/jobset-scratch-1a2b3", str({"spec": {"active": False}}))
        for t in submitting
    }


@pytest.mark.parametrize("stack", STACKS)
def test_no_reclaimer_where_the_stack_does_not_ask(stack):
    assert reclaimer_objects(stack_config(stack)) == []


def test_a_deactivated_workloads_quota_returns_to_the_cohort():
    """Kueue releases an evicted workload's quota (its usage leaves the ClusterQueue's), and a
    deactivated one is never admitted again, so the cohort gets it back. In the teams stack as
    rendered (tests/helpers/sharing_stacks.py: vision 8 A100s, may borrow 4; nlp 8, lends 2;
    batch 4, lends all), an idle nlp job holding 16 leaves batch 4 of the 14 it reaches
    (14 pooled: vision's 8, nlp's 2, batch's 4; 10 of it borrowed by nlp); deactivated, batch
    reaches 14 again."""
    out = fixture_out("teams", stack_file())
    kueue = Kueue.of(manifests(out), manager_config_from_rendered(out), windows="open")
    gpus = ("a100", "nvidia.com/gpu")
    batch = kueue.get("ClusterQueue", "batch")
    assert available(kueue, batch, *gpus, {"nlp": {gpus: 16}}) == 4
    assert available(kueue, batch, *gpus, {}) == 14
