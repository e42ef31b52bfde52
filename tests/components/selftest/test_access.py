"""What the self-test's pods may ask of the API (components/selftest/access.py): each run reads
its own node's topology labels (issue 21: which domain each rank ran in), so its account may
`get` nodes where its pool has a Kueue Topology; quarantine adds `patch`, in a role of its own,
only with selftest.cordon_on_fail. Every object validates against the Kubernetes schema."""

from __future__ import annotations

import pytest

from components.scheduling.training_job import render
from components.selftest.access import access_objects, account
from components.selftest.job import selftest_spec
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import STACKS, find, make_project, planned, stack_config, validate_kubernetes
from tests.helpers import jobsets
from tests.helpers.bad_stacks import aws, existing
from tests.helpers.selftest_stacks import (
    A100_POOL,
    FSX,
    IMAGE,
    LAB,
    P5,
    env_of,
    pod_of,
    selftest_cron_jobs,
    stack_cron_jobs,
)

BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
# Kubernetes docs, "Using RBAC Authorization": nodes are cluster-scoped, in the core group ("").
GET_NODES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
# A node's taints are one atomic list (core/v1 NodeSpec, x-kubernetes-list-type atomic): the
# quarantine reads the node and patches the whole list back.
GET_AND_PATCH_NODES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
LIST_PODS = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
# The downward API gives the pod its node's name, never the node's labels.
NODE_NAME = {"fieldRef": {"fieldPath": "spec.nodeName"}}


def plan_of(tmp_path, stack: dict):
    return build_plan(run_program("s", make_project(tmp_path, {"s": stack})))


def by_kind(plan, kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in plan.kubernetes_objects() if o["kind"] == kind}


def runs_access(plan, kind: str) -> dict[str, dict]:
    """The runs' own account and roles, without the quarantine watcher's."""
    return {
        name: obj
        for name, obj in by_kind(plan, kind).items()
        if name == "selftest" or name.startswith("gpu-platform-selftest-")
    }


def run_pods(plan) -> list[dict]:
    """The pod spec of the post-deploy JobSet and of every CronJob of the self-test."""
    jobs = [o for o in plan.kubernetes_objects() if o["kind"] == "JobSet"]
    crons = [r.inputs for r in selftest_cron_jobs(plan)]
    return [jobsets.pod_spec(j) for j in jobs] + [pod_of(c) for c in crons]


def test_onprem_runs_report_the_admins_rack_and_spine_labels_and_may_only_read_nodes():
    plan = planned("onprem")
    version = plan.outputs["kubernetes_version"]
    pods = run_pods(plan)
    assert len(pods) == 2  # the post-deploy JobSet and the a100 pool's CronJob
    for pod in pods:
        env = env_of(pod)
        assert env["NODE_NAME"] == NODE_NAME
        # stacks/Pulumi.onprem.yaml scheduling.topology_levels, broadest first, then the host
        # (Kueue "Topology Aware Scheduling": kubernetes.io/hostname only as the lowest level).
        assert env["SELFTEST_TOPOLOGY_LABELS"] == (
            "network.example.internal/spine,network.example.internal/rack,kubernetes.io/hostname"
        )
        assert pod["serviceAccountName"] == "selftest"
    (role,) = runs_access(plan, "ClusterRole").values()
    assert (role["metadata"]["name"], role["rules"]) == (
        "gpu-platform-selftest-node-reader",
        GET_NODES,
    )
    (binding,) = runs_access(plan, "ClusterRoleBinding").values()
    assert binding["roleRef"]["name"] == "gpu-platform-selftest-node-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "selftest", "namespace": "gpu-platform-selftest"}
    ]
    (account,) = runs_access(plan, "ServiceAccount").values()
    assert account["metadata"] == {**account["metadata"], "name": "selftest",
                                   "namespace": "gpu-platform-selftest"}  # fmt: skip
    for obj in (role, binding, account):
        validate_kubernetes(obj, version)
    # The runs start once their account may read their node.
    reader = find(plan, BINDING, "onprem-clusterrolebinding-gpu-platform-selftest-node-reader")
    (cron,) = selftest_cron_jobs(plan)
    job = find(plan, "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "onprem-selftest-job")
    assert reader.urn in cron.dependencies and reader.urn in job.dependencies


def test_an_aws_pool_reports_the_ec2_network_node_layers(tmp_path):
    """p5.48xlarge reports three network node layers (Amazon EC2 User Guide, "Prerequisites
    for Amazon EC2 topology"), labelled by EKS topology.k8s.aws/network-node-layer-1..3 (EKS
    user guide, "Place distributed AI/ML workloads with network topology labels")."""
    plan = plan_of(tmp_path, aws(gpu_node_groups=[P5], storage=FSX, selftest={"image": IMAGE}))
    pods = run_pods(plan)
    assert pods
    for pod in pods:
        assert env_of(pod)["SELFTEST_TOPOLOGY_LABELS"] == (
            "topology.k8s.aws/network-node-layer-1,topology.k8s.aws/network-node-layer-2,"
            "topology.k8s.aws/network-node-layer-3,kubernetes.io/hostname"
        )
        assert env_of(pod)["NODE_NAME"] == NODE_NAME
    assert [r["rules"] for r in runs_access(plan, "ClusterRole").values()] == [GET_NODES]


def test_a_pool_without_a_topology_reads_nothing_and_runs_as_no_account(tmp_path):
    plan = plan_of(tmp_path, existing(existing={**LAB, "gpu_pools": [A100_POOL]},
                                      selftest={"image": IMAGE}))  # fmt: skip
    for pod in run_pods(plan):
        assert "SELFTEST_TOPOLOGY_LABELS" not in env_of(pod)
        assert "serviceAccountName" not in pod
        assert env_of(pod)["NODE_NAME"] == NODE_NAME
    for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
        assert runs_access(plan, kind) == {}


def test_quarantine_adds_a_patch_role_of_its_own_beside_the_reader(tmp_path):
    selftest = {"image": IMAGE, "cordon_on_fail": True}
    plan = plan_of(tmp_path, aws(gpu_node_groups=[P5], storage=FSX, selftest=selftest))
    version = plan.outputs["kubernetes_version"]
    roles = runs_access(plan, "ClusterRole")
    assert {name: role["rules"] for name, role in roles.items()} == {
        "gpu-platform-selftest-node-reader": GET_NODES,
        "gpu-platform-selftest-cordon": GET_AND_PATCH_NODES,
    }
    bindings = runs_access(plan, "ClusterRoleBinding")
    assert {n: (b["roleRef"]["name"], b["subjects"][0]["name"]) for n, b in bindings.items()} == {
        "gpu-platform-selftest-node-reader": ("gpu-platform-selftest-node-reader", "selftest"),
        "gpu-platform-selftest-cordon": ("gpu-platform-selftest-cordon", "selftest"),
    }
    for obj in [*roles.values(), *bindings.values()]:
        validate_kubernetes(obj, version)
    for pod in run_pods(plan):
        env = env_of(pod)
        assert (env["SELFTEST_CORDON_ON_FAIL"], env["SELFTEST_CORDON_LABEL"]) == (
            "true",
            "gpu-platform/selftest-failed",
        )
        assert "SELFTEST_TOPOLOGY_LABELS" in env


@pytest.mark.parametrize("schedule", [True, False])
def test_the_post_deploy_job_cordons_with_or_without_the_schedule(tmp_path, schedule):
    """Quarantine covers every run: a stack with the schedule off still declares the account its
    Job runs as, and tells the Job to cordon."""
    stack = existing(
        existing={**LAB, "gpu_pools": [A100_POOL]},
        selftest={"image": IMAGE, "cordon_on_fail": True, "schedule": {"enabled": schedule}},
    )
    plan = plan_of(tmp_path, stack)
    (job,) = [o for o in plan.kubernetes_objects() if o["kind"] == "JobSet"]
    pod = jobsets.pod_spec(job)
    assert pod["serviceAccountName"] in by_kind(plan, "ServiceAccount")
    assert env_of(pod)["SELFTEST_CORDON_ON_FAIL"] == "true"
    jobsets.validate(job, plan.outputs["kubernetes_version"])


def test_the_rendered_job_and_cron_job_validate_with_the_account_and_labels():
    cfg = stack_config("onprem")
    (job,) = render(selftest_spec(cfg))
    for obj in (job, *stack_cron_jobs(cfg)):
        jobsets.validate_object(obj, cfg.cluster.kubernetes_version)


@pytest.mark.parametrize("stack", STACKS)
def test_the_builder_grants_only_node_get_and_patch_and_only_with_an_account(stack):
    """A ClusterRole holds `get` or `patch` on nodes, never more; `apiGroups: [""]` is the core
    group, where Node lives (Kubernetes docs, "Using RBAC Authorization")."""
    cfg = stack_config(stack)
    objects = access_objects(cfg)
    assert (objects == []) == (account(cfg) is None)
    allowed = (
        [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
    )
    for obj in objects:
        assert obj["metadata"].get("namespace", cfg.namespaces.selftest) == cfg.namespaces.selftest
        if obj["kind"] == "ClusterRole":
            assert obj["rules"] in allowed, obj


def test_the_quarantine_watcher_may_list_team_pods_and_get_and_patch_nodes_only(tmp_path):
    """A job's preflight runs as the team's pods, which may not touch nodes: the platform's own
    watcher, in the self-test's namespace, acts on their verdict (bootstrap/selftest/watch.py).
    It may list pods only in the team namespaces (a RoleBinding in each), and get and patch
    nodes; it runs wherever a preflight can, whatever selftest.cordon_on_fail says."""
    plan = plan_of(tmp_path, aws(gpu_node_groups=[P5], storage=FSX, selftest={"image": IMAGE}))
    version = plan.outputs["kubernetes_version"]
    roles = by_kind(plan, "ClusterRole")
    assert roles["gpu-platform-quarantine-watcher"]["rules"] == GET_AND_PATCH_NODES
    assert roles["gpu-platform-preflight-reader"]["rules"] == LIST_PODS
    watcher = {"kind": "ServiceAccount", "name": "quarantine-watcher",
               "namespace": "gpu-platform-selftest"}  # fmt: skip
    binding = by_kind(plan, "ClusterRoleBinding")["gpu-platform-quarantine-watcher"]
    assert binding["subjects"] == [watcher]
    readers = [o for o in plan.kubernetes_objects() if o["kind"] == "RoleBinding"]
    assert {b["metadata"]["namespace"] for b in readers} == {"training"}
    for reader in readers:
        assert reader["roleRef"]["name"] == "gpu-platform-preflight-reader"
        assert reader["subjects"] == [watcher]
    (deployment,) = by_kind(plan, "Deployment").values()
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["serviceAccountName"] == "quarantine-watcher"
    assert container["image"] == IMAGE
    assert container["command"] == ["python", "-m", "selftest.watch"]
    assert env_of(pod)["SELFTEST_WATCH_NAMESPACES"] == "training"
    assert env_of(pod)["SELFTEST_CORDON_LABEL"] == "gpu-platform/selftest-failed"
    for obj in (*roles.values(), binding, *readers, deployment):
        validate_kubernetes(obj, version)


@pytest.mark.parametrize("stack", STACKS)
def test_no_team_account_is_granted_anything_on_nodes(stack):
    """Least privilege: every binding the platform declares names an account of the platform's
    own namespaces, never a team's, so no team pod may patch a node."""
    cfg = stack_config(stack)
    teams = {t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)}
    for obj in planned(stack).kubernetes_objects():
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            for subject in obj["subjects"]:
                assert subject.get("namespace") not in teams, (obj["metadata"], subject)
