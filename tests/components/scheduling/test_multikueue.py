"""MultiKueue across stacks (onprem as manager, burst as worker): what each side declares, that
both plan, and the settings the config refuses."""

from __future__ import annotations

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from model.config import ConfigError, parse_config
from plan.cli import plan_stack
from tests.conftest import (
    make_project,
    planned,
    stack_config,
    stack_file_config,
    validate_kubernetes,
)
from tests.helpers import crds, jobsets
from tests.helpers.aws_topology import THREE_LAYERS
from tests.helpers.bad_stacks import first_round
from tests.helpers.kueue_objects import objects


def test_the_manager_declares_cluster_config_and_check_that_validate_against_the_crds():
    # Kueue v0.19.2 "Setup a MultiKueue environment": the worker's kubeconfig in a Secret of
    # Kueue's namespace under the key `kubeconfig`, a MultiKueueCluster with locationType
    # Secret naming it, a MultiKueueConfig listing the clusters, and an AdmissionCheck with
    # controllerName kueue.x-k8s.io/multikueue whose parameters name the MultiKueueConfig.
    (cluster,) = objects("onprem", "MultiKueueCluster").values()
    assert cluster["spec"] == {
        "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "multikueue-burst"}}
    }
    secret = objects("onprem", "Secret", "kubernetes:core/v1")["multikueue-burst"]
    assert secret["metadata"]["namespace"] == stack_config("onprem").namespaces.system
    # The worker stack's planned output stands in for the StackReference, masked.
    assert secret["stringData"] == {"kubeconfig": "(secret)"}
    assert objects("onprem", "MultiKueueConfig")["burst"]["spec"] == {"clusters": ["burst"]}
    check = objects("onprem", "AdmissionCheck")["burst-multikueue"]
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "burst"},
    }
    for kind in ("MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck", "ClusterQueue"):
        for obj in objects("onprem", kind).values():
            assert not crds.errors(obj)
    validate_kubernetes(secret, "1.33")


def test_the_bursting_queue_waits_for_multikueue_on_every_flavor_and_holds_no_local_pool():
    # Kueue v0.19.2 leaves a ClusterQueue inactive when a MultiKueue check is set per flavor
    # (pkg/cache/scheduler/clusterqueue.go, "Cannot specify MultiKueue AdmissionCheck per
    # flavor"): the check has no onFlavors, and the queue's one flavor is the workers' nodes.
    queue = objects("onprem", "ClusterQueue")["burst"]
    assert queue["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "burst-multikueue"}]
    }
    (group,) = queue["spec"]["resourceGroups"]
    (flavor,) = group["flavors"]
    # The workers' p5.48xlarge nodes, by the label the kubelet sets from the cloud provider
    # (Kubernetes "Well-Known Labels": node.kubernetes.io/instance-type; Kueue's CRD wants a
    # node label beside a Topology), and their Topology: Kueue matches a job's TAS request
    # against the manager's flavor (tas_flavorassigner.go;
    # site/static/examples/multikueue/tas/manager-setup.yaml).
    burst = objects("onprem", "ResourceFlavor")[flavor["name"]]
    assert burst["spec"] == {
        "nodeLabels": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
        "topologyName": "aws-network-3-layers",
    }
    assert crds.errors(burst) == []
    mirrored = objects("onprem", "Topology")["aws-network-3-layers"]
    assert [level["nodeLabel"] for level in mirrored["spec"]["levels"]] == THREE_LAYERS
    assert not crds.errors(mirrored)
    # 32 GPUs of p5.48xlarge: 4 nodes of 192 vCPUs, 2,048 GiB and 32 EFA interfaces each (AWS
    # P5 instance page and EFA "Supported instance types").
    assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]} == {
        "cpu": "768",
        "memory": "8192Gi",
        "nvidia.com/gpu": "32",
        "vpc.amazonaws.com/efa": "128",
    }
    assert queue["metadata"]["annotations"] == {"gpu-platform/burst-monthly-budget-usd": "120000"}
    # The DGX nodes stay with the local queue.
    shared = objects("onprem", "ClusterQueue")["shared"]
    assert [f["name"] for f in shared["spec"]["resourceGroups"][0]["flavors"]] == ["a100"]


def test_the_worker_grants_the_manager_what_kueue_setup_script_gives_for_jobs_and_jobsets():
    # create-multikueue-kubeconfig.sh at Kueue v0.19.2, the rules for batch Jobs, JobSets,
    # Workloads and queues (shared/PINS.md, "JobSet (0.12.0)"; the script's pod, StatefulSet,
    # LeaderWorkerSet and Kubeflow rules are for kinds this platform never submits).
    # The worker's other ClusterRoles are its own controllers' (its reservation window's).
    role = objects("burst", "ClusterRole", "kubernetes:rbac.authorization.k8s.io/v1")[
        "multikueue-sa-role"
    ]
    assert role["rules"] == [
        {
            "apiGroups": ["batch"],
            "resources": ["jobs"],
            "verbs": ["create", "delete", "get", "list", "watch"],
        },
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
        {
            "apiGroups": ["jobset.x-k8s.io"],
            "resources": ["jobsets"],
            "verbs": ["create", "delete", "get", "list", "watch"],
        },
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads"],
            "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
        },
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues", "localqueues"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads/status"],
            "verbs": ["get", "patch", "update"],
        },
    ]
    binding = objects("burst", "ClusterRoleBinding", "kubernetes:rbac.authorization.k8s.io/v1")[
        "multikueue-sa-crb"
    ]
    namespace = stack_config("burst").namespaces.system
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "multikueue-sa", "namespace": namespace}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    token = objects("burst", "Secret", "kubernetes:core/v1")["multikueue-sa"]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {
        "kubernetes.io/service-account.name": "multikueue-sa"
    }
    for obj in (role, binding, token):
        validate_kubernetes(obj, stack_config("burst").cluster.kubernetes_version)


def test_the_worker_exports_its_kubeconfig_as_a_secret_and_the_queues_it_declares():
    outputs = planned("burst").outputs
    assert outputs["multikueue_kubeconfig"] == "(secret)"
    # Two pools of p5.48xlarge, at most 2 nodes of 8 GPUs each (stacks/Pulumi.burst.yaml; AWS
    # P5 instance page), whose nodes carry three network layers (EC2 instance topology), on the
    # device plugin (the stack sets no gpu_allocation).
    assert outputs["multikueue_queues"] == {
        "cluster_queues": ["burst"],
        "local_queues": ["research/default", "training/default"],
        "frameworks": ["batch/job", "jobset.x-k8s.io/jobset"],
        "pools": [
            {
                "pool": "h100-spot",
                "instance_types": ["p5.48xlarge"],
                "gpus": 16,
                "topology": THREE_LAYERS,
                "gpu_allocation": "device_plugin",
            },
            {
                "pool": "h100-block",
                "instance_types": ["p5.48xlarge"],
                "gpus": 16,
                "topology": THREE_LAYERS,
                "gpu_allocation": "device_plugin",
            },
        ],
    }
    assert "burst" in objects("burst", "ClusterQueue")
    local = objects("burst", "LocalQueue")
    assert local["default"]["spec"] == {"clusterQueue": "burst"}


def test_the_worker_kubeconfig_holds_the_plain_token_and_the_secret_ca():
    from components.scheduling.multikueue import worker_kubeconfig

    text = worker_kubeconfig("c", "https://api.example", "Q0E=", "dG9rZW4=")
    assert "token: token" in text
    assert "certificate-authority-data: Q0E=" in text
    assert "server: https://api.example" in text


def test_a_bursting_queue_without_a_budget_is_refused_at_config_time():
    """What the mandatory policy burst-queue-has-budget refuses after the plan (exit 3), the
    config refuses first, at the key (exit 2)."""
    onprem = {k.split(":", 1)[1]: v for k, v in stack_file_config("onprem").items()}
    del onprem["scheduling"]["cluster_queues"][1]["burst"]["monthly_budget_usd"]
    with pytest.raises(ConfigError) as error:
        parse_config(onprem, "stacks/Pulumi.onprem.yaml")
    assert first_round(error.value.problems) == [
        "gpu-platform:scheduling.cluster_queues[1].burst.monthly_budget_usd: required value is "
        "missing"
    ]


def test_a_queue_bursting_to_nodes_of_an_nvlink_domain_is_refused_at_its_instance_type():
    """A GB200 job of 2 or more nodes runs with a ComputeDomain beside its JobSet, and
    MultiKueue copies only the JobSet (Kueue v0.19.2 pkg/controller/jobs/jobset/
    jobset_multikueue_adapter.go, SyncJob). p6e-gb200.36xlarge: 18 nodes an NVLink domain
    (EKS User Guide, "Use P6e-GB200 UltraServers with Amazon EKS": u-p6e-gb200x72 is 18
    instances, one NVL72 domain)."""
    onprem = {k.split(":", 1)[1]: v for k, v in stack_file_config("onprem").items()}
    onprem["scheduling"]["cluster_queues"][1]["burst"]["instance_type"] = "p6e-gb200.36xlarge"
    with pytest.raises(ConfigError) as error:
        parse_config(onprem, "stacks/Pulumi.onprem.yaml")
    (problem,) = first_round(error.value.problems)
    assert problem.startswith(
        "gpu-platform:scheduling.cluster_queues[1].burst.instance_type: p6e-gb200.36xlarge, "
        "whose nodes share an NVLink domain of 18: a multi-node job there runs with a "
        "ComputeDomain applied beside its JobSet, and MultiKueue copies only the JobSet"
    )
    assert "jobset_multikueue_adapter.go SyncJob" in problem
    assert problem.endswith(
        "valid: an instance type whose NVLink ends at the node, or run the GB200 jobs on a "
        "queue of the worker stack itself"
    )


def test_a_manager_naming_a_stack_with_no_file_is_refused(tmp_path):
    onprem = stack_file_config("onprem")
    onprem["gpu-platform:multikueue"] = {"workers": [{"name": "burst", "stack": "org/p/cloud"}]}
    root = make_project(tmp_path, {"onprem": onprem})
    with pytest.raises(ConfigError, match=r"multikueue.workers\[0\].stack: 'org/p/cloud'"):
        plan_stack("onprem", root)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"multikueue": {"serve_as_worker": True}}, "multikueue.serve_as_worker"),
        (
            {
                "scheduling": {
                    "cluster_queues": [
                        {
                            "name": "b",
                            "gpus": {"a100": 8},
                            "burst": {
                                "workers": ["w"],
                                "gpus": 8,
                                "instance_type": "p5.48xlarge",
                                "monthly_budget_usd": 1000,
                            },
                        }
                    ]
                },
                "multikueue": {"workers": [{"name": "w", "stack": "o/p/w"}]},
            },
            "scheduling.cluster_queues[0].gpus",
        ),
        ({"multikueue": {"workers": [{"name": "w", "stack": "o/p/w"}]}}, "multikueue.workers"),
        ({"scheduling": {"topology_levels": ["rack", "rack"]}}, "topology_levels[1]"),
    ],
)
def test_bad_multikueue_and_topology_settings_are_refused_at_their_key(change, path):
    onprem = {k.split(":", 1)[1]: v for k, v in stack_file_config("onprem").items()}
    for key in ("multikueue", "scheduling"):
        onprem.pop(key, None)
    with pytest.raises(ConfigError) as error:
        parse_config({**onprem, **change}, "stacks/Pulumi.onprem.yaml")
    assert any(f"gpu-platform:{path}" in p or path in p for p in error.value.problems), (
        error.value.problems
    )


def test_topology_levels_belong_to_existing_clusters_only():
    dev = {k.split(":", 1)[1]: v for k, v in stack_file_config("dev").items()}
    with pytest.raises(ConfigError, match=r"scheduling\.topology_levels: only for existing"):
        parse_config({**dev, "scheduling": {"topology_levels": ["r"]}}, "stacks/Pulumi.dev.yaml")


def test_a_job_of_a_bursting_team_is_managed_by_multikueue_and_others_are_not():
    # Kueue v0.19.2 jobset_multikueue_adapter.go: a JobSet dispatched by MultiKueue carries
    # spec.managedBy "kueue.x-k8s.io/multikueue" on the manager (its Job none: JobSet's own).
    cfg = stack_config("onprem")
    research = render(
        spec_for_pool(cfg, "a100", name="x", image="i:1", command=["t.py"], namespace="research")
    )[-1]
    assert research["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert "managedBy" not in jobsets.job_spec(research)
    jobsets.validate(research, cfg.cluster.kubernetes_version)
    training = render(spec_for_pool(cfg, "a100", name="x", image="i:1", command=["t.py"]))[-1]
    assert "managedBy" not in training["spec"]
