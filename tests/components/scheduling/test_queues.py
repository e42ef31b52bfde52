"""Scheduling: PriorityClasses, Kueue's flavors and queues over the GPU pools, team namespaces,
and queue-driven node scaling. Custom resources are checked against Kueue v0.19.2's schemas
and every object against Kubernetes by test_custom_resources.py and test_kubernetes_schema.py;
this file checks what they hold."""

from __future__ import annotations

import pytest
import yaml

from components.scheduling.kueue import quota_warnings
from components.scheduling.queues import kueue_objects
from model.config import parse_config
from tests.conftest import AWS_STACKS, SHIPPED_STACKS, STACKS, planned
from tests.helpers import helm_values
from tests.helpers.bad_stacks import NS, assert_refused, aws, case, existing

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"
RELEASE = "kubernetes:helm.sh/v3:Release"
ADMIN = "arn:aws:iam::210987654321:role/platform-admins"


def objects(stack: str, kind: str) -> dict[str, dict]:
    return {
        r.inputs["metadata"]["name"]: r.inputs for r in planned(stack).of_type(f"{KUEUE}:{kind}")
    }


def quotas(stack: str, queue: str = "shared") -> dict[str, dict[str, str]]:
    """Flavor -> resource -> nominal quota of one ClusterQueue of a shipped stack."""
    (group,) = objects(stack, "ClusterQueue")[queue]["spec"]["resourceGroups"]
    return {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]
    }


# ------------------------------------------------------------------------------- quotas

# AWS EC2 User Guide, "Accelerated computing instance specifications" and the EFA "Supported
# instance types" table: p5.48xlarge has 8 H100 GPUs, 192 vCPUs, 2,048 GiB and 32 EFA
# interfaces; p4d.24xlarge 8 A100 GPUs, 96 vCPUs, 1,152 GiB and 4 EFA interfaces;
# g6e.xlarge 1 L40S, 4 vCPUs, 32 GiB; g5.2xlarge 1 A10G, 8 vCPUs, 32 GiB.


def test_shipped_prod_quotas_are_what_the_h100_groups_hold_at_max_size():
    assert quotas("prod") == {
        # 4 nodes of the Capacity Block group.
        "h100-block": {
            "cpu": "768",
            "memory": "8192Gi",
            "nvidia.com/gpu": "32",
            "vpc.amazonaws.com/efa": "128",
        },
        # 8 on-demand nodes.
        "h100-ondemand": {
            "cpu": "1536",
            "memory": "16384Gi",
            "nvidia.com/gpu": "64",
            "vpc.amazonaws.com/efa": "256",
        },
    }


def test_shipped_staging_quotas_are_two_p4d_nodes():
    assert quotas("staging") == {
        "a100-efa": {
            "cpu": "192",
            "memory": "2304Gi",
            "nvidia.com/gpu": "16",
            "vpc.amazonaws.com/efa": "8",
        }
    }


def test_shipped_dev_quota_counts_time_sliced_replicas_of_the_smallest_spot_type():
    # 4 nodes of at least 1 GPU, 4 vCPUs (g6e.xlarge) and 32 GiB; time-slicing with 4
    # replicas advertises each GPU 4 times.
    assert quotas("dev") == {"spot-small": {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "16"}}


def test_shipped_onprem_quota_uses_the_node_sizes_the_stack_gives():
    # 4 DGX A100 of 8 GPUs, and the stack's own 256 CPUs and 2,048 GiB per node.
    assert quotas("onprem") == {"a100": {"cpu": "1024", "memory": "8192Gi", "nvidia.com/gpu": "32"}}


def prod_like(scheduling: dict) -> object:
    return parse_config(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [
                {"name": "h100", "instance_types": ["p5.48xlarge"], "efa": True,
                 "scaling": {"max_size": 2}},
                {"name": "a10g", "instance_types": ["g5.12xlarge"], "scaling": {"max_size": 3}},
            ],
            "scheduling": scheduling,
        },
        "t",
    )  # fmt: skip


def queue_quota(cfg, queue: str) -> dict[str, dict[str, str]]:
    (cq,) = [o for o in kueue_objects(cfg, True) if o["metadata"]["name"] == queue]
    (group,) = cq["spec"]["resourceGroups"]
    return {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]
    }


def test_a_teams_gpu_quota_brings_cpu_memory_and_efa_in_the_nodes_proportion():
    cfg = prod_like({"cluster_queues": [{"name": "llm", "gpus": {"h100": 4}}]})
    # Half a p5: 96 vCPUs, 1,024 GiB, 16 of its 32 EFA devices. g5.12xlarge (4 A10G, 48 vCPUs,
    # 192 GiB, 1 EFA) is left out: 0, every covered resource still listed.
    assert queue_quota(cfg, "llm") == {
        "h100": {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": "4",
                 "vpc.amazonaws.com/efa": "16"},
        "a10g": {"cpu": "0", "memory": "0Gi", "nvidia.com/gpu": "0",
                 "vpc.amazonaws.com/efa": "0"},
    }  # fmt: skip


def test_quota_beyond_what_a_pool_can_ever_hold_is_a_warning_not_an_error():
    cfg = prod_like(
        {
            "cluster_queues": [
                {"name": "llm", "gpus": {"h100": 12}},
                {"name": "vision", "gpus": {"h100": 8, "a10g": 12}},
            ]
        }
    )
    (warning,) = quota_warnings(cfg)
    # 2 p5 nodes hold 16 GPUs; 12 + 8 = 20. 3 g5.12xlarge hold 12: exactly enough.
    assert warning.startswith("gpu-platform:scheduling.cluster_queues: nominal quotas of pool h100")
    assert "add up to 20 GPUs (llm 12, vision 8)" in warning
    assert "holds at most 16 (2 nodes x 8)" in warning


def test_shipped_stacks_warn_of_no_quota():
    # The topology labels an on-prem pool needs are said apart
    # (tests/controllers/test_tas_rules.py).
    for stack in SHIPPED_STACKS:
        found = [w for w in planned(stack).warnings if "scheduling" in w and "topology" not in w]
        assert not found, stack


def test_without_node_sizes_on_prem_kueue_counts_gpus_only_and_says_so():
    cfg = parse_config(
        {
            "provider": "existing",
            "existing": {
                "name": "lab",
                "kubeconfig_path": "kc",
                "gpu_pools": [{"name": "a100", "node_selector": {"pool": "a100"},
                               "gpu_model": "A100", "gpu_memory_gib": 80,
                               "gpus_per_node": 8, "nodes": 2}],
            },
        },
        "t",
    )  # fmt: skip
    assert queue_quota(cfg, "shared") == {"a100": {"nvidia.com/gpu": "16"}}
    assert "count GPUs only" in quota_warnings(cfg)[0]


# ---------------------------------------------------------------------- flavors, queues


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_each_flavor_selects_exactly_its_node_groups_nodes_and_tolerates_its_taint(stack):
    plan = planned(stack)
    groups = {
        r.name.removeprefix(f"{stack}-"): r.inputs
        for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")
    }
    flavors = objects(stack, "ResourceFlavor")
    assert set(flavors) == set(groups) - {"system"}
    for name, flavor in flavors.items():
        labels = flavor["spec"]["nodeLabels"]
        selected = [g for g, spec in groups.items() if labels.items() <= spec["labels"].items()]
        assert selected == [name], (name, selected)
        # The GPU taint every GPU group carries (components/data/gpu_node_group.py sets it; the
        # literal here is the one the NVIDIA GPU Operator and EKS docs use).
        assert flavor["spec"]["nodeTaints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
        ]
        assert groups[name]["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
        ]


@pytest.mark.parametrize("stack", STACKS)
def test_every_local_queue_points_at_a_cluster_queue_of_its_stack(stack):
    queues = objects(stack, "ClusterQueue")
    local = planned(stack).of_type(f"{KUEUE}:LocalQueue")
    assert local, "the training namespace has a LocalQueue"
    for lq in local:
        assert lq.inputs["spec"]["clusterQueue"] in queues, lq.name


@pytest.mark.parametrize("stack", STACKS)
def test_cluster_queues_preempt_by_priority_and_reclaim_what_they_lent(stack):
    for name, cq in objects(stack, "ClusterQueue").items():
        assert cq["spec"]["cohortName"] == "gpu-platform", name
        assert cq["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority", name
        assert cq["spec"]["preemption"]["reclaimWithinCohort"] == "Any", name


def test_a_queue_takes_workloads_only_from_its_teams_namespaces():
    cfg = prod_like(
        {
            "cluster_queues": [{"name": "llm"}, {"name": "spare"}],
            "teams": [{"name": "llm-team", "cluster_queue": "llm"}],
        }
    )
    queues = {
        o["metadata"]["name"]: o for o in kueue_objects(cfg, True) if o["kind"] == "ClusterQueue"
    }
    (selector,) = queues["llm"]["spec"]["namespaceSelector"]["matchExpressions"]
    assert selector == {
        "key": "kubernetes.io/metadata.name", "operator": "In", "values": ["llm-team", "training"]
    }  # fmt: skip
    # No team: no selector, which Kueue reads as no namespace; the queue only lends.
    assert "namespaceSelector" not in queues["spare"]["spec"]


# ------------------------------------------------------------------------------- priorities


@pytest.mark.parametrize("stack", STACKS)
def test_priority_classes_sit_below_the_system_ones_and_none_is_the_default(stack):
    classes = {
        r.inputs["metadata"]["name"]: r.inputs
        for r in planned(stack).of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    }
    assert sorted(classes) == ["preemptible", "production-training", "research"]
    # Kubernetes "Pod Priority and Preemption": user classes take values up to one billion;
    # system-cluster-critical is 2000000000.
    assert all(c["value"] <= 1_000_000_000 for c in classes.values())
    assert classes["production-training"]["value"] > classes["research"]["value"]
    assert classes["research"]["value"] > classes["preemptible"]["value"]
    assert not any(c.get("globalDefault") for c in classes.values())
    assert classes["preemptible"]["preemptionPolicy"] == "Never"
    wpcs = objects(stack, "WorkloadPriorityClass")
    assert {n: w["value"] for n, w in wpcs.items()} == {n: c["value"] for n, c in classes.items()}


# -------------------------------------------------------------------- team namespaces


def namespace_labels(stack: str, name: str) -> dict[str, str]:
    (ns,) = [
        r.inputs
        for r in planned(stack).of_type("kubernetes:core/v1:Namespace")
        if r.inputs["metadata"]["name"] == name
    ]
    return ns["metadata"]["labels"]


@pytest.mark.parametrize("stack", STACKS)
def test_training_namespace_enforces_restricted_and_warns_and_audits_restricted(stack):
    # Issue 25 item 12: a privileged team namespace lets anyone who may create a pod there be
    # root on a GPU node; the job builder's pods keep to restricted (Pod Security Standards),
    # so the namespace enforces it (tests/controllers/test_pod_security_rules.py runs the model).
    labels = namespace_labels(stack, "training")
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"


def test_a_team_enforces_baseline_only_with_its_reason_kept_on_the_namespace():
    from components.control.namespaces import team_pod_security
    from model.config.scheduling import TeamSettings

    reason = "a vendor's evaluation image runs as root"
    labels, annotations = team_pod_security(
        TeamSettings(name="eval", pod_security="baseline", pod_security_reason=reason)
    )
    assert labels == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    assert annotations == {"gpu-platform/pod-security-reason": reason}
    assert team_pod_security(TeamSettings(name="vision")) == (
        {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "restricted",
        },
        {},
    )


@pytest.mark.parametrize(
    ("team", "problem"),
    [
        ({"pod_security": "baseline"}, "pod_security baseline needs a reason"),
        ({"pod_security_reason": "why"}, "only with pod_security baseline"),
        ({"pod_security": "privileged"}, "restricted"),
        # The old setting is gone with the hostPath it stood for.
        ({"nvme_cache": False}, "nvme_cache"),
    ],
)
def test_team_pod_security_settings_are_refused_with_what_is_valid(team, problem):
    from pydantic import ValidationError

    from model.config.scheduling import TeamSettings

    with pytest.raises((ValidationError, ValueError), match=problem):
        TeamSettings(name="eval", **team)


# -------------------------------------------------------------- queue-driven node scaling


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_the_autoscaler_serves_provisioning_requests_with_the_crd_installed_first(stack):
    plan = planned(stack)
    (release,) = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler"]
    assert release.inputs["values"]["extraArgs"]["enable-provisioning-requests"] is True
    (crd,) = plan.of_type("kubernetes:yaml/v2:ConfigFile")
    assert crd.inputs["file"] == (
        "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-chart-9.59.0/"
        "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"
    )
    assert crd.urn in release.dependencies


def test_shipped_efa_pools_are_admitted_only_once_their_nodes_are_provisioned():
    (check,) = objects("prod", "AdmissionCheck").values()
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    (config,) = objects("prod", "ProvisioningRequestConfig").values()
    assert config["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "managedResources": ["nvidia.com/gpu"],
    }
    strategy = objects("prod", "ClusterQueue")["shared"]["spec"]["admissionChecksStrategy"]
    assert strategy == {
        "admissionChecks": [
            {"name": check["metadata"]["name"], "onFlavors": ["h100-block", "h100-ondemand"]}
        ]
    }


@pytest.mark.parametrize("stack", ["dev", "onprem"])
def test_no_admission_check_without_efa_pools_or_without_our_autoscaler(stack):
    controllers = [c["spec"]["controllerName"] for c in objects(stack, "AdmissionCheck").values()]
    assert "kueue.x-k8s.io/provisioning-request" not in controllers
    assert "admissionChecksStrategy" not in objects(stack, "ClusterQueue")["shared"]["spec"]


def test_provisioning_can_be_turned_off_per_flavor():
    # a10g places by quota alone and h100 is left on; turning h100's off is refused where it
    # scales from zero (tests/controllers/test_tas_rules.py).
    cfg = prod_like({"flavors": [{"pool": "a10g", "provisioning_request": False}]})
    (check,) = [o for o in kueue_objects(cfg, True) if o["kind"] == "ClusterQueue"]
    assert check["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "gpu-provisioning", "onFlavors": ["h100"]}
    ]
    cfg = prod_like({"flavors": [{"pool": "a10g", "provisioning_request": True}]})
    (check,) = [o for o in kueue_objects(cfg, True) if o["kind"] == "ClusterQueue"]
    assert check["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "gpu-provisioning", "onFlavors": ["a10g", "h100"]}
    ]


def test_kueue_is_installed_from_its_oci_chart_at_the_pinned_version():
    (release,) = [r for r in planned("prod").of_type(RELEASE) if r.name == "prod-kueue"]
    assert release.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release.inputs["version"] == "0.19.2"
    assert "repositoryOpts" not in release.inputs


# ------------------------------------------------------------------------------ bad input

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


# --------------------------------------------------------------------- Kueue's own config


def shipped_manager_config(stack: str) -> dict:
    (release,) = [r for r in planned(stack).of_type(RELEASE) if r.name == f"{stack}-kueue"]
    return yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_keeps_its_charts_default_configuration_where_the_platform_does_not_change_it(
    stack,
):
    """The value replaces the chart's whole configuration: every default it does not mean to
    change must survive, read from the chart's own values.yaml at the pinned version."""
    chart = yaml.safe_load((helm_values.chart_dir("kueue", "0.19.2") / "values.yaml").read_text())
    default = yaml.safe_load(chart["managerConfig"]["controllerManagerConfigYaml"])
    ours = shipped_manager_config(stack)
    changed = {"resources", "managedJobsNamespaceSelector", "metrics", "integrations"}
    kept = {k: v for k, v in default.items() if k not in changed}
    assert {k: v for k, v in ours.items() if k not in changed} == kept
    # The chart's own comment names the one metrics setting it leaves off.
    assert ours["metrics"] == {**default["metrics"], "enableClusterQueueResources": True}
    # Only the batch Jobs the platform submits, of the chart's twelve frameworks: a MultiKueue
    # manager watches every enabled framework's kind on its workers (Kueue v0.19.2
    # multikueuecluster.go), and no other kind is ever submitted here.
    assert "batch/job" in default["integrations"]["frameworks"]
    assert len(default["integrations"]["frameworks"]) == 12
    assert ours["integrations"] == {"frameworks": ["batch/job"]}


def test_kueue_manages_only_team_namespaces_and_leaves_hugepages_to_the_scheduler():
    config = shipped_manager_config("prod")
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["training"]}
        ]
    }
    # EFA pods ask for hugepages-2Mi (AWS EFA device guide); no queue covers it.
    assert config["resources"]["excludeResourcePrefixes"] == ["ephemeral-storage", "hugepages-"]


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
    """The self-test runs in its own namespace (issue 25 item 11): Kueue admits its Job only
    through a LocalQueue of that namespace, whose ClusterQueue's namespaceSelector selects it
    (Kueue docs, "Cluster Queue": namespaceSelector), and never on a queue that bursts to
    MultiKueue workers, since it tests this cluster."""
    objects = [o for o in planned(stack).kubernetes_objects() if o["kind"] == "Job"]
    runs = [o for o in objects if o["metadata"]["name"].startswith("selftest-")]
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
