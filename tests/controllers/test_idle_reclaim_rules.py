"""Idle GPUs given back (issue 40 §3), modelled over every stack and ClusterQueue: with
scheduling.idle_reclaim naming a queue, the reclaimer the plan renders (its Deployment's env,
its RBAC) deactivates an idle admitted workload of that queue in every team namespace that
submits to it, may do so nowhere else (tests/controllers/rbac.py), and never touches one at the
production-training priority. The decision is the image's own (bootstrap/selftest/reclaim.py,
run against stand-ins in tests/image/selftest/test_reclaim.py), fed the env as rendered.

Kueue's side, from v0.19.2 apis/kueue/v1beta2/workload_types.go (WorkloadSpec.Active): "Changing
active from true to false will evict any running workloads"; a workload with active false "should
never be admitted". So a deactivated workload's quota returns to the cohort and stays free until
its team sets active back to true."""

from __future__ import annotations

import pytest
from selftest import reclaim

from components.selftest.reclaim import reclaimer_objects
from model.config.idle_reclaim import IdleReclaimSettings
from tests.conftest import STACKS, stack_config
from tests.controllers.rbac import Cluster, Grant, allowed
from tests.helpers import jobsets
from tests.helpers.alert_stacks import IMAGE

# components/scheduling/queues.py PRIORITIES: the production-training WorkloadPriorityClass's
# value, and research's, as Kueue copies them into spec.priority.
PRODUCTION, RESEARCH = 100000, 10000
ACCOUNT = "idle-reclaimer"


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


def workload(queue: str, priority: int, klass: str) -> dict:
    return {
        "metadata": {"name": "jobset-idle-1a2b3"},
        "spec": {"active": True, "priority": priority, "priorityClassName": klass},
        "status": {"admission": {"clusterQueue": queue}},
    }


def grants(objects: list[dict]) -> list[Grant]:
    """What the reclaimer's ServiceAccount holds through the rendered bindings."""
    cluster = Cluster(objects)
    found = []
    for b in cluster.bindings:
        if not any(s.get("name") == ACCOUNT for s in b.get("subjects") or []):
            continue
        scope = frozenset({b["metadata"]["namespace"]}) if b["kind"] == "RoleBinding" else None
        found.append(Grant(cluster.role_rules(b["roleRef"]["name"]), scope))
    return found


@pytest.mark.parametrize(("stack", "queue"), cases())
def test_an_idle_workload_of_a_reclaimable_queue_is_deactivated_and_production_never(stack, queue):
    cfg = reclaiming(stack, queue)
    objects = reclaimer_objects(cfg)
    for obj in objects:
        jobsets.validate_object(obj, cfg.cluster.kubernetes_version)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert container["command"] == ["python", "-m", "selftest.reclaim"]
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    submitting = {t.name for t in teams if t.cluster_queue == queue}
    held = grants(objects)
    for team in teams:
        may = allowed(held, "patch", "kueue.x-k8s.io", "workloads", team.name)
        assert may == (team.name in submitting), team.name
        assert may == (team.name in env["SELFTEST_RECLAIM_NAMESPACES"].split(","))
    # Nothing but Workloads: no pods, no JobSets, no nodes.
    for group, resource in (("", "pods"), ("jobset.x-k8s.io", "jobsets"), ("", "nodes")):
        assert not any(allowed(held, "patch", group, resource, t.name) for t in teams)
    assert reclaim.decide(env, workload(queue, RESEARCH, "research"))[0] is True
    assert reclaim.decide(env, workload(queue, PRODUCTION, "production-training"))[0] is False
    others = {q.name for q in cfg.scheduling.cluster_queues} - {queue}
    for other in others:
        assert reclaim.decide(env, workload(other, RESEARCH, "research"))[0] is False


@pytest.mark.parametrize("stack", STACKS)
def test_no_reclaimer_where_the_stack_does_not_ask(stack):
    assert reclaimer_objects(stack_config(stack)) == []
