"""Scheduling (components/scheduling/queues.py): PriorityClasses and their WorkloadPriorityClass
twins, the LocalQueues of every namespace jobs run in, the Kueue release, and what the config
refuses. Custom resources are checked against Kueue v0.19.2's schemas and every object against
Kubernetes by test_custom_resources.py and test_kubernetes_schema.py; this file checks what they
hold."""

from __future__ import annotations

import pytest

from components.scheduling.queues import kueue_objects
from model.config import parse_config
from tests.conftest import STACKS, planned
from tests.helpers.bad_stacks import ADMIN, NS, assert_refused, aws, case, existing
from tests.helpers.kueue_objects import KUEUE, objects

RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize("stack", STACKS)
def test_every_local_queue_points_at_a_cluster_queue_of_its_stack(stack):
    queues = objects(stack, "ClusterQueue")
    local = planned(stack).of_type(f"{KUEUE}:LocalQueue")
    assert local, "the training namespace has a LocalQueue"
    for lq in local:
        assert lq.inputs["spec"]["clusterQueue"] in queues, lq.name


@pytest.mark.parametrize("stack", STACKS)
def test_priority_classes_sit_below_the_system_ones_and_none_is_the_default(stack):
    classes = {
        r.inputs["metadata"]["name"]: r.inputs
        for r in planned(stack).of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    }
    # Beside the three, where the self-test runs on a schedule on pools the platform's
    # autoscaler sizes: its own class below them all (docs/selftest.md, "Only nodes that are up").
    idle = classes.pop("selftest-idle-nodes", None)
    assert sorted(classes) == ["preemptible", "production-training", "research"]
    assert idle is None or idle["value"] < classes["preemptible"]["value"]
    # Kubernetes "Pod Priority and Preemption": user classes take values up to one billion;
    # system-cluster-critical is 2000000000.
    assert all(c["value"] <= 1_000_000_000 for c in classes.values())
    assert classes["production-training"]["value"] > classes["research"]["value"]
    assert classes["research"]["value"] > classes["preemptible"]["value"]
    assert not any(c.get("globalDefault") for c in classes.values())
    assert classes["preemptible"]["preemptionPolicy"] == "Never"
    wpcs = objects(stack, "WorkloadPriorityClass")
    idle_wpc = wpcs.pop("selftest-idle-nodes", None)
    assert {n: w["value"] for n, w in wpcs.items()} == {n: c["value"] for n, c in classes.items()}
    assert (idle_wpc and idle_wpc["value"]) == (idle and idle["value"])


def test_kueue_is_installed_from_its_oci_chart_at_the_pinned_version():
    (release,) = [r for r in planned("prod").of_type(RELEASE) if r.name == "prod-kueue"]
    assert release.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release.inputs["version"] == "0.19.2"
    assert "repositoryOpts" not in release.inputs


POOL = {
    "name": "a100",
    "node_selector": {"pool": "a100"},
    "gpu_model": "A100",
    "gpu_memory_gib": 80,
    "gpus_per_node": 8,
    "nodes": 2,
}


ONPREM = {"name": "lab", "kubeconfig_path": "~/.kube/lab.yaml", "gpu_pools": [POOL]}


GROUPS = [{"name": "a100", "instance_types": ["p4d.24xlarge"], "efa": True}]


BAD = [
    case(aws(gpu_node_groups=GROUPS,
             scheduling={"teams": [{"name": "llm", "cluster_queue": "gpu"}]}),
         f"{NS}:scheduling.teams[0].cluster_queue", "'gpu' is not a ClusterQueue",
         "scheduling.cluster_queues: shared", "team-on-a-missing-queue"),
    case(aws(gpu_node_groups=GROUPS, scheduling={"flavors": [{"pool": "a10"}]}),
         f"{NS}:scheduling.flavors[0].pool", "'a10' is not a GPU pool",
         "did you mean 'a100'?", "flavor-of-a-missing-pool"),
    case(aws(gpu_node_groups=GROUPS,
             scheduling={"cluster_queues": [{"name": "llm", "gpus": {"h100": 8}}]}),
         f"{NS}:scheduling.cluster_queues[0].gpus.h100", "'h100' is not a GPU pool",
         "pools: a100", "quota-of-a-missing-pool"),
    case(existing(existing=ONPREM,
                  scheduling={"flavors": [{"pool": "a100", "provisioning_request": True}]}),
         f"{NS}:scheduling.flavors[0].provisioning_request", "true",
         "runs no cluster-autoscaler", "provisioning-on-an-existing-cluster"),
    case(aws(gpu_node_groups=GROUPS, autoscaler={"enabled": False},
             scheduling={"flavors": [{"pool": "a100", "provisioning_request": True}]}),
         f"{NS}:scheduling.flavors[0].provisioning_request", "autoscaler.enabled is false",
         "wait forever", "provisioning-without-the-autoscaler"),
    case(aws(gpu_node_groups=GROUPS,
             scheduling={"flavors": [{"pool": "a100", "cpus_per_node": 96}]}),
         f"{NS}:scheduling.flavors[0].cpus_per_node", "only for existing clusters",
         "instance catalog", "node-size-on-aws"),
    case(aws(gpu_node_groups=GROUPS, scheduling={"teams": [{"name": "gpu-platform"}]}),
         f"{NS}:scheduling.teams[0].name", "'gpu-platform' is used twice",
         "namespaces.system has it", "team-in-the-system-namespace"),
    case(aws(gpu_node_groups=GROUPS,
             scheduling={"cluster_queues": [{"name": "llm"}, {"name": "llm"}]}),
         f"{NS}:scheduling.cluster_queues[1].name", "'llm' is used twice", "used twice",
         "queue-twice"),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_bad_scheduling_is_refused_with_its_key_path(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_a_stack_without_gpu_pools_declares_valid_empty_queues():
    from tests.helpers import crds

    cfg = parse_config(
        {"aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
         "cluster": {"admin_principal_arns": [ADMIN]}},
        "t",
    )  # fmt: skip
    found = kueue_objects(cfg, True)
    assert [o["kind"] for o in found if o["kind"] in ("ResourceFlavor", "AdmissionCheck")] == []
    for obj in found:
        assert crds.errors(obj) == [], obj


@pytest.mark.parametrize("stack", STACKS)
def test_the_self_tests_namespace_submits_to_a_queue_that_runs_here_and_admits_it(stack):
    """The self-test runs in its own namespace (issue 25 item 11): Kueue admits its JobSet only
    through a LocalQueue of that namespace, whose ClusterQueue's namespaceSelector selects it
    (Kueue docs, "Cluster Queue": namespaceSelector), and never on a queue that bursts to
    MultiKueue workers, since it tests this cluster."""
    objects = [o for o in planned(stack).kubernetes_objects() if o["kind"] == "JobSet"]
    runs = [o for o in objects if o["metadata"]["name"].startswith("selftest-")]
    # onprem runs the self-test after deploys: the loop below must see it.
    assert runs or stack != "onprem"
    queues = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"]["clusterQueue"]
        for o in planned(stack).kubernetes_objects()
        if o["kind"] == "LocalQueue"
    }
    cluster_queues = {
        o["metadata"]["name"]: o for o in planned(stack).kubernetes_objects()
        if o["kind"] == "ClusterQueue"
    }  # fmt: skip
    for job in runs:
        namespace = job["metadata"]["namespace"]
        assert namespace == "gpu-platform-selftest"
        queue = queues[(namespace, job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"])]
        spec = cluster_queues[queue]["spec"]
        (selector,) = spec["namespaceSelector"]["matchExpressions"]
        assert selector["key"] == "kubernetes.io/metadata.name"
        assert namespace in selector["values"]
        assert "admissionChecksStrategy" not in spec or all(
            "multikueue" not in c["name"]
            for c in spec["admissionChecksStrategy"]["admissionChecks"]
        )
