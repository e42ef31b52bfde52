"""MultiKueue across stacks (onprem as manager, burst as worker) and Kueue topology-aware
scheduling: what each side declares, that both plan, and what the manager refuses."""

from __future__ import annotations

import pytest

from components.scheduling.training_job import render, spec_for_pool
from model.config import ConfigError, parse_config
from plan.cli import plan_stack
from tests.conftest import (
    STACKS,
    make_project,
    planned,
    stack_config,
    stack_file_config,
    validate_kubernetes,
)
from tests.helpers import crds

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"


def objects(stack: str, kind: str, api: str = KUEUE) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in planned(stack).of_type(f"{api}:{kind}")}


# ------------------------------------------------------------------------------ manager


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
    # flavor"): the check has no onFlavors, and the queue's one flavor selects no node.
    queue = objects("onprem", "ClusterQueue")["burst"]
    assert queue["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "burst-multikueue"}]
    }
    (group,) = queue["spec"]["resourceGroups"]
    (flavor,) = group["flavors"]
    # No node labels (nothing runs on the manager's nodes), and the Topology of the workers'
    # p5.48xlarge nodes: Kueue matches a job's TAS request against the manager's flavor
    # (tas_flavorassigner.go; site/static/examples/multikueue/tas/manager-setup.yaml).
    assert objects("onprem", "ResourceFlavor")[flavor["name"]]["spec"] == {
        "topologyName": "aws-network-3-layers"
    }
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


# ------------------------------------------------------------------------------- worker


def test_the_worker_grants_the_manager_what_kueue_setup_script_gives_for_batch_jobs():
    # create-multikueue-kubeconfig.sh at Kueue v0.19.2, the rules for batch Jobs, Workloads and
    # queues (the script's JobSet, pod, StatefulSet, LeaderWorkerSet and Kubeflow rules are for
    # kinds this platform never submits).
    (role,) = objects("burst", "ClusterRole", "kubernetes:rbac.authorization.k8s.io/v1").values()
    assert role["rules"] == [
        {
            "apiGroups": ["batch"],
            "resources": ["jobs"],
            "verbs": ["create", "delete", "get", "list", "watch"],
        },
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
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
    (binding,) = objects(
        "burst", "ClusterRoleBinding", "kubernetes:rbac.authorization.k8s.io/v1"
    ).values()
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
    # P5 instance page), whose nodes carry three network layers (EC2 instance topology).
    assert outputs["multikueue_queues"] == {
        "cluster_queues": ["burst"],
        "local_queues": ["research/default", "training/default"],
        "pools": [
            {
                "pool": "h100-spot",
                "instance_types": ["p5.48xlarge"],
                "gpus": 16,
                "topology": THREE_LAYERS,
            },
            {
                "pool": "h100-block",
                "instance_types": ["p5.48xlarge"],
                "gpus": 16,
                "topology": THREE_LAYERS,
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


# ------------------------------------------------------------------------- mismatches


def plan_with_worker(tmp_path, worker_scheduling: dict):
    burst = stack_file_config("burst")
    burst["gpu-platform:scheduling"] = worker_scheduling
    root = make_project(tmp_path, {"onprem": stack_file_config("onprem"), "burst": burst})
    return plan_stack("onprem", root)


def test_a_worker_without_the_bursting_queue_makes_the_manager_refuse_it_by_name(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_worker(
            tmp_path,
            {
                "cluster_queues": [{"name": "spot"}],
                "teams": [{"name": "research", "cluster_queue": "spot"}],
            },
        )
    (problem,) = error.value.problems
    assert problem.startswith("gpu-platform:scheduling.cluster_queues[1].burst.workers")
    assert "declares no ClusterQueue 'burst' (it declares: spot)" in problem


def test_a_worker_without_the_teams_local_queue_makes_the_manager_refuse_it(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_worker(tmp_path, {"cluster_queues": [{"name": "burst"}]})
    assert any("LocalQueue research/default" in p for p in error.value.problems)


def plan_with_burst(tmp_path, change_worker=None, change_burst=None):
    """onprem planned against a burst stack and a bursting queue changed by the callables."""
    burst, onprem = stack_file_config("burst"), stack_file_config("onprem")
    if change_worker:
        change_worker(burst)
    if change_burst:
        change_burst(onprem["gpu-platform:scheduling"]["cluster_queues"][1]["burst"])
    root = make_project(tmp_path, {"onprem": onprem, "burst": burst})
    return plan_stack("onprem", root)


def test_a_burst_larger_than_the_workers_pools_is_refused_at_its_gpus(tmp_path):
    # The burst stack's two p5.48xlarge pools hold 2 nodes x 8 GPUs each: 32 GPUs at most.
    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_burst=lambda b: b.update(gpus=40))
    (problem,) = error.value.problems
    assert problem.startswith("gpu-platform:scheduling.cluster_queues[1].burst.gpus: 40, but")
    assert "hold at most 32 GPUs (burst 32)" in problem


def test_a_burst_of_a_type_the_worker_has_no_pool_of_is_refused_at_its_instance_type(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_burst=lambda b: b.update(instance_type="p4d.24xlarge"))
    (problem,) = error.value.problems
    assert problem.startswith(
        "gpu-platform:scheduling.cluster_queues[1].burst.instance_type: p4d.24xlarge, but "
        "worker burst has no pool of it (its pools: h100-spot (p5.48xlarge), h100-block "
        "(p5.48xlarge))"
    )


def test_a_worker_whose_nodes_lack_the_mirrored_topology_is_refused(tmp_path):
    """Without EFA the worker's p5 pools name no Topology, so the manager's mirror of one
    would match jobs against levels the worker does not place by."""

    def no_efa(burst):
        for group in burst["gpu-platform:gpu_node_groups"]:
            group["efa"] = False

    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_worker=no_efa)
    assert len(error.value.problems) == 2
    assert all(
        p.startswith("gpu-platform:scheduling.cluster_queues[1].burst.instance_type: the manager")
        and "carries none" in p
        for p in error.value.problems
    ), error.value.problems


def test_a_worker_stack_that_does_not_serve_as_one_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_worker=lambda b: b.pop("gpu-platform:multikueue"))
    (problem,) = error.value.problems
    assert problem.startswith(
        "multikueue.workers[0].stack: 'organization/gpu-platform/burst': stack burst does not "
        "serve as a MultiKueue worker"
    )
    assert "set multikueue.serve_as_worker: true in stacks/Pulumi.burst.yaml" in problem


def test_a_worker_not_yet_deployed_is_reported_as_such_with_what_to_do():
    """`pulumi preview` of the manager before the worker's `pulumi up`: the StackReference
    yields no outputs (None)."""
    from components.scheduling.multikueue_contract import worker_problems

    (problem,) = worker_problems(stack_config("onprem"), {"burst": None})
    assert problem == (
        "gpu-platform:multikueue.workers[0].stack: 'organization/gpu-platform/burst' exports no "
        "multikueue_queues: it is not deployed as a MultiKueue worker yet; set "
        "multikueue.serve_as_worker: true in that stack, run `pulumi up` on it, then on this one"
    )
    assert "declares no ClusterQueue" not in problem


def test_a_worker_deployed_before_it_exported_its_pools_is_asked_to_redeploy():
    from components.scheduling.multikueue_contract import worker_problems

    exported = {"cluster_queues": ["burst"], "local_queues": ["research/default"]}
    assert worker_problems(stack_config("onprem"), {"burst": exported}) == [
        "gpu-platform:scheduling.cluster_queues[1].burst.workers: worker burst's "
        "multikueue_queues lists no pools: an older version of this program deployed it; run "
        "`pulumi up` on it again"
    ]


def test_a_bursting_queue_without_a_budget_is_refused_at_config_time():
    """What the mandatory policy burst-queue-has-budget refuses after the plan (exit 3), the
    config refuses first, at the key (exit 2)."""
    onprem = {k.split(":", 1)[1]: v for k, v in stack_file_config("onprem").items()}
    del onprem["scheduling"]["cluster_queues"][1]["burst"]["monthly_budget_usd"]
    with pytest.raises(ConfigError) as error:
        parse_config(onprem, "stacks/Pulumi.onprem.yaml")
    assert error.value.problems == [
        "gpu-platform:scheduling.cluster_queues[1].burst.monthly_budget_usd: required value is "
        "missing"
    ]


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


# ------------------------------------------------------------------- topology (TAS)

# EKS user guide, "Place distributed AI/ML workloads with network topology labels": the labels
# topology.k8s.aws/network-node-layer-1 (top) to -3; EC2 User Guide, "Prerequisites for Amazon
# EC2 topology": p4d.24xlarge and p5.48xlarge report 3 network nodes. Kueue requires
# kubernetes.io/hostname, where used, at the lowest level.
THREE_LAYERS = [
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
    "kubernetes.io/hostname",
]


@pytest.mark.parametrize(
    ("stack", "pool", "levels"),
    [
        ("burst", "h100-spot", THREE_LAYERS),
        ("staging", "a100-efa", THREE_LAYERS),
        # onprem names its levels only once they are on the nodes:
        # tests/controllers/test_tas_rules.py.
    ],
)
def test_multi_node_pools_name_a_topology_with_the_levels_their_nodes_carry(stack, pool, levels):
    flavor = objects(stack, "ResourceFlavor")[pool]
    topology = objects(stack, "Topology")[flavor["spec"]["topologyName"]]
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == levels
    assert not crds.errors(topology)
    assert not crds.errors(flavor)


@pytest.mark.parametrize("stack", STACKS)
def test_every_multi_node_pool_whose_nodes_carry_topology_labels_has_a_topology(stack):
    from components.scheduling.topology import pool_topology

    cfg = stack_config(stack)
    flavors = objects(stack, "ResourceFlavor")
    topologies = objects(stack, "Topology")
    for pool in cfg.gpu_pools:
        named = pool_topology(cfg, pool)
        if pool.fabric == "tcp":
            assert named is None
            continue
        if named is None:
            continue
        assert flavors[pool.name]["spec"]["topologyName"] in topologies, pool.name


def test_a_pool_of_types_without_topology_labels_gets_no_topology():
    # dev's spot group: g5 / g6e, no EFA: jobs there stay on one node.
    assert not objects("dev", "Topology")
    assert all("topologyName" not in f["spec"] for f in objects("dev", "ResourceFlavor").values())


def test_a_multi_node_job_prefers_one_domain_of_the_closest_network_level():
    # Kueue "Run Workloads with Topology-Aware Scheduling" (v0.19.2): the pod template's
    # annotation kueue.x-k8s.io/podset-preferred-topology names the level.
    cfg = stack_config("burst")
    spec = spec_for_pool(
        cfg, "h100-spot", name="llm", image="registry.example/llm:1", command=["t.py"], nodes=4
    )
    (job,) = render(spec)
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"
    }
    validate_kubernetes(job, cfg.cluster.kubernetes_version)


def test_a_job_may_require_its_domain_instead():
    from components.scheduling.topology import placement

    cfg = stack_config("burst")
    pool = next(p for p in cfg.gpu_pools if p.name == "h100-spot")
    wanted = placement(cfg, pool, required=True, level="topology.k8s.aws/network-node-layer-2")
    spec = spec_for_pool(
        cfg, "h100-spot", name="llm", image="i:1", command=["t.py"], nodes=4, placement=wanted
    )
    annotations = render(spec)[-1]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        "kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-2"
    }
    with pytest.raises(ValueError, match="not one of pool h100-spot's"):
        placement(cfg, pool, level="rack")


# ------------------------------------------------------------------------ managedBy


def test_a_job_of_a_bursting_team_is_managed_by_multikueue_and_others_are_not():
    # Kueue v0.19.2 job_multikueue_adapter.go: a batch Job dispatched by MultiKueue carries
    # spec.managedBy "kueue.x-k8s.io/multikueue" on the manager.
    cfg = stack_config("onprem")
    research = render(
        spec_for_pool(cfg, "a100", name="x", image="i:1", command=["t.py"], namespace="research")
    )[-1]
    assert research["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    validate_kubernetes(research, cfg.cluster.kubernetes_version)
    training = render(spec_for_pool(cfg, "a100", name="x", image="i:1", command=["t.py"]))[-1]
    assert "managedBy" not in training["spec"]
