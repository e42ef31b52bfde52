"""The idle reclaimer run whole (issue 40 §3): the teams stack (tests/helpers/sharing_stacks.py)
with scheduling.idle_reclaim, once naming a ClusterQueue and once a priority class, planned and
written as `python -m plan` writes it; the rendered `idle-reclaimer` Deployment's pod run as
rendered (its command, no `--once`; its env) on the platform's system node by the box's kubelet
in the self-test image's layout (tests/helpers/box_cluster.py), with a stand-in Prometheus at the
URL its env names (a rendered Service's, or Cluster.serve refuses it) reporting two idle jobs in
every team namespace, and an API server stand-in holding their Workloads as Kueue admitted them.

Asserted after its first sweep: the idle workload it may take is deactivated through Kueue
(`spec.active: false`, the merge patch Kueue's Workload API takes: v0.19.2 apis/kueue/v1beta2/
workload_types.go, WorkloadSpec.Active), the production-training one never, nothing outside
the namespaces the stack lets it reclaim in, and every request one the rendered RBAC grants its
ServiceAccount (tests/controllers/rbac.py)."""

from __future__ import annotations

import time

import pytest

from plan.render import render_plan
from tests.conftest import SHARED_HELM, project_plan
from tests.controllers.rbac import account_grants, permits, request_of
from tests.helpers.alert_stacks import IMAGE
from tests.helpers.box_cluster import SYSTEM_NODE, deployment_pod, write_plan
from tests.helpers.box_stacks import box_of
from tests.helpers.hang import HANG_S
from tests.helpers.kube_api import ApiServer
from tests.helpers.prometheus import Prometheus, sample
from tests.helpers.sharing_stacks import raw, stack_file, teams_config

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
ACCOUNT = "idle-reclaimer"
# The teams stack's team namespaces and their ClusterQueues (tests/helpers/sharing_stacks.py
# RAW: vision and nlp, each on its own), and namespaces.training's default team, on the first
# ClusterQueue (model/config/scheduling.py, all_teams).
TEAMS = {"vision": "vision", "nlp": "nlp", "training": "vision"}
# model/config/scheduling.py PRIORITIES, from components/scheduling/queues.py's
# WorkloadPriorityClasses: Kueue copies a class's value into the Workload's spec.priority.
PRODUCTION, RESEARCH = ("production-training", 100000), ("research", 10000)
# Each case: its idle_reclaim, and the team namespaces whose idle research workload it takes.
CASES = {
    "queue": ({"cluster_queues": ["nlp"]}, ["nlp"]),
    "class": ({"priority_classes": ["research"]}, sorted(TEAMS)),
}


def workload(job: str, queue: str, priority: tuple[str, int]) -> dict:
    """An admitted Workload as Kueue makes one for a JobSet: named after it and owned by it,
    its priority class and value in spec, its ClusterQueue in status.admission."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"jobset-{job}-1a2b3",
            "ownerReferences": [{"kind": "JobSet", "name": job}],
        },
        "spec": {"active": True, "priorityClassName": priority[0], "priority": priority[1]},
        "status": {"admission": {"clusterQueue": queue}},
    }


@pytest.fixture(scope="module", params=list(CASES))
def swept(request, tmp_path_factory):
    """The case, the requests of the reclaimer's first sweep, and its grants as rendered."""
    reclaim, _ = CASES[request.param]
    name = f"reclaim-{request.param}"
    data = {**raw(idle_reclaim=reclaim), "selftest": {"image": IMAGE}}
    plan = project_plan(name, {name: stack_file(data)})
    folder = tmp_path_factory.mktemp(name)
    out = write_plan(plan, render_plan(plan, (SHARED_HELM,)), folder / "out" / name)
    cfg = teams_config(data)
    idle = [
        sample(5, namespace=ns, job_name=job, team=ns)
        for ns in TEAMS
        for job in ("scratch", "pretrain")
    ]
    with (
        box_of(cfg, out, folder) as (cluster, _),
        ApiServer(folder / "api", {}) as api,
        Prometheus(idle) as prometheus,
    ):
        cluster.api = api
        for ns, queue in TEAMS.items():
            path = f"{KUEUE}/namespaces/{ns}/workloads"
            items = [workload("scratch", queue, RESEARCH), workload("pretrain", queue, PRODUCTION)]
            api.answers[("GET", path)] = (200, {"kind": "WorkloadList", "items": items})
            for doc in items:
                api.answers[("PATCH", f"{path}/{doc['metadata']['name']}")] = (200, doc)
        (deployment,) = [
            o for o in cluster.manifests
            if o["kind"] == "Deployment" and o["metadata"]["name"] == ACCOUNT
        ]  # fmt: skip
        pod = deployment_pod(deployment)
        cluster.pod_security(pod)
        kubelet = cluster.kubelet(SYSTEM_NODE)
        (container,) = pod["spec"]["containers"]
        env = kubelet.environment(pod, container)
        cluster.serve(env["SELFTEST_PROMETHEUS_URL"], prometheus.port)
        # What one sweep prints: a line per idle job of the namespaces it is given.
        given = set(filter(None, env["SELFTEST_RECLAIM_NAMESPACES"].split(",")))
        lines = [f"{ns}/{job} (" for ns in sorted(given) for job in ("scratch", "pretrain")]
        log = folder / "reclaimer.log"
        process = cluster.start_pod(pod, log, kubelet)
        try:
            give_up = time.monotonic() + HANG_S
            while not all(line in log.read_text() for line in lines):
                assert process.poll() is None and time.monotonic() < give_up, log.read_text()
                time.sleep(0.1)
        finally:
            cluster.stop_pod(process)
            cluster.api = None
        grants = account_grants(cluster.objects(), ACCOUNT, cfg.namespaces.selftest)
        yield request.param, list(api.received), grants, log.read_text()


def test_the_first_sweep_deactivates_the_idle_workloads_the_stack_reclaims_and_never_production(
    swept,
):
    case, requests, _, log = swept
    _, taken = CASES[case]
    patched = [(path, body) for method, path, _, body in requests if method == "PATCH"]
    assert patched == [
        (f"{KUEUE}/namespaces/{ns}/workloads/jobset-scratch-1a2b3", {"spec": {"active": False}})
        for ns in taken
    ], log


def test_every_request_of_the_reclaimer_is_one_its_service_account_is_granted(swept):
    _, requests, grants, _ = swept
    refused = [(m, p) for m, p, _, _ in requests if not permits(grants, request_of(m, p))]
    assert requests, "the run made no request"
    assert not refused, f"not granted to its ServiceAccount: {refused}"
