"""Kueue's objects over the GPU pools (components/scheduling/kueue.py): quotas in the nodes'
proportions, a flavor per pool, ClusterQueues that preempt and reclaim, the ProvisioningRequest
admission check, and the manager's configuration. Custom resources are checked against Kueue
v0.19.2's schemas by test_custom_resources.py; this file checks what they hold."""

from __future__ import annotations

import pytest
import yaml

from components.scheduling.kueue import quota_warnings
from components.scheduling.queues import kueue_objects
from model.config import parse_config
from tests.conftest import AWS_STACKS, SHIPPED_STACKS, STACKS, planned, stack_config
from tests.controllers.kueue_admission import Kueue, Phase, manager_config_from_rendered
from tests.helpers import crds, helm_values
from tests.helpers.bad_stacks import ADMIN
from tests.helpers.crds import is_custom_resource
from tests.helpers.kueue_objects import objects
from tests.helpers.plan_out import stack_out
from tests.helpers.shared_data import RWX_STORAGE
from tests.helpers.sharing_stacks import teams_config

RELEASE = "kubernetes:helm.sh/v3:Release"


def quotas(
    stack: str, queue: str = "shared", windows: Phase = "closed"
) -> dict[str, dict[str, str]]:
    """Flavor -> resource -> nominal quota of one ClusterQueue of a shipped stack, its windowed
    flavors in phase `windows` (as declared: closed)."""
    kueue = Kueue.of(planned(stack).kubernetes_objects(), {}, windows=windows)
    (group,) = kueue.all("ClusterQueue")[queue]["spec"]["resourceGroups"]
    return {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]
    }


# AWS EC2 User Guide, "Accelerated computing instance specifications" and the EFA "Supported
# instance types" table: p5.48xlarge has 8 H100 GPUs, 192 vCPUs, 2,048 GiB and 32 EFA
# interfaces; p4d.24xlarge 8 A100 GPUs, 96 vCPUs, 1,152 GiB and 4 EFA interfaces;
# g6e.xlarge 1 L40S, 4 vCPUs, 32 GiB; g5.2xlarge 1 A10G, 8 vCPUs, 32 GiB.


def test_shipped_prod_quotas_are_what_the_h100_groups_hold_at_max_size():
    # The block's window is closed as declared: its flavor is 0 until its CronJob opens it.
    closed = quotas("prod")
    assert closed["h100-block"] == {
        "cpu": "0",
        "memory": "0",
        "nvidia.com/gpu": "0",
        "vpc.amazonaws.com/efa": "0",
    }
    assert quotas("prod", windows="open") == {
        # 4 nodes of the Capacity Block group, while its window is open.
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
            "storage": RWX_STORAGE,
        },
        "t",
    )  # fmt: skip
    assert queue_quota(cfg, "shared") == {"a100": {"nvidia.com/gpu": "16"}}
    assert "count GPUs only" in quota_warnings(cfg)[0]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_each_flavor_selects_exactly_its_node_groups_nodes_and_tolerates_its_taint(stack):
    plan = planned(stack)
    # Not a canary group: no flavor takes its node (its canary taint; components/selftest/
    # canary.py).
    groups = {
        r.name.removeprefix(f"{stack}-"): r.inputs
        for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")
        if "gpu-platform/canary" not in r.inputs["labels"]
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
        assert groups[name]["taints"][0] == {
            "key": "nvidia.com/gpu",
            "value": "present",
            "effect": "NO_SCHEDULE",
        }


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


def shipped_manager_config(stack: str) -> dict:
    (release,) = [r for r in planned(stack).of_type(RELEASE) if r.name == f"{stack}-kueue"]
    return yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])


def rendered_manager_config(stack: str) -> dict:
    """What Kueue runs with: the Configuration its chart renders into its ConfigMap (the
    chart's template adds its own keys to the value's)."""
    config = manager_config_from_rendered(stack_out(stack))
    assert config is not None, f"{stack}: no rendered release holds Kueue's Configuration"
    return config


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_keeps_its_charts_default_configuration_where_the_platform_does_not_change_it(
    stack,
):
    """The value replaces the chart's whole configuration: every default it does not mean to
    change must survive, read from the chart's own values.yaml at the pinned version."""
    chart = helm_values.defaults("kueue", "0.19.2")
    default = yaml.safe_load(chart["managerConfig"]["controllerManagerConfigYaml"])
    ours = shipped_manager_config(stack)
    changed = {"resources", "managedJobsNamespaceSelector", "metrics", "integrations"}
    kept = {k: v for k, v in default.items() if k not in changed}
    assert {k: v for k, v in ours.items() if k not in changed} == kept
    # The chart's own comment names the one metrics setting it leaves off.
    assert ours["metrics"] == {**default["metrics"], "enableClusterQueueResources": True}
    # Only the JobSets and batch Jobs the platform submits, of the chart's twelve frameworks: a
    # MultiKueue manager watches every enabled framework's kind on its workers (Kueue v0.19.2
    # multikueuecluster.go), and no other kind is ever submitted here.
    assert {"batch/job", "jobset.x-k8s.io/jobset"} <= set(default["integrations"]["frameworks"])
    assert len(default["integrations"]["frameworks"]) == 12
    assert ours["integrations"] == {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}


def test_kueue_manages_the_namespaces_jobs_run_in_and_leaves_hugepages_to_the_scheduler():
    # prod: the training namespace and the self-test's (stacks/Pulumi.prod.yaml names an image:
    # its post-deploy run and schedule go through Kueue).
    config = rendered_manager_config("prod")
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "In",
                "values": ["gpu-platform-selftest", "training"],
            }
        ]
    }
    # onprem: the training namespace, team research, and the self-test's, which runs there
    # (stacks/Pulumi.onprem.yaml: selftest.mode block, an image, a schedule).
    onprem = rendered_manager_config("onprem")["managedJobsNamespaceSelector"]
    assert onprem["matchExpressions"][0]["values"] == [
        "gpu-platform-selftest",
        "research",
        "training",
    ]
    # EFA pods ask for hugepages-2Mi (AWS EFA device guide); no queue covers it.
    assert config["resources"]["excludeResourcePrefixes"] == ["ephemeral-storage", "hugepages-"]


def test_limits_and_fair_sharing_pass_kueues_schemas_and_cel_rules():
    """Every Kueue object of the teams stack (tests/helpers/sharing_stacks.py), whose queues set
    borrowing and lending limits and weights, against Kueue v0.19.2's CRD schemas and CEL rules
    (ClusterQueue: "borrowingLimit must be nil when cohort is empty"; every flavor lists every
    covered resource), as the API server checks them; and the limits are the queue's GPUs with
    CPU and memory in the p4d's proportion (96 vCPUs, 1,152 GiB, 8 GPUs: AWS, "Amazon EC2 P4
    instances")."""
    found = kueue_objects(teams_config(), autoscaled=True)
    assert [e for o in found if is_custom_resource(o) for e in crds.errors(o)] == []
    vision = next(
        o for o in found if o["metadata"]["name"] == "vision" and o["kind"] == "ClusterQueue"
    )
    a100 = vision["spec"]["resourceGroups"][0]["flavors"][0]
    assert a100["name"] == "a100"
    assert a100["resources"] == [
        {"name": "cpu", "nominalQuota": "96", "borrowingLimit": "48"},
        {"name": "memory", "nominalQuota": "1152Gi", "borrowingLimit": "576Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "4"},
    ]
    nlp = next(o for o in found if o["metadata"]["name"] == "nlp" and o["kind"] == "ClusterQueue")
    assert nlp["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "8",
        "lendingLimit": "2",
    }


def test_no_stack_turns_fair_sharing_on_unless_it_says_so():
    """The default Kueue gets: no fairSharing or admissionFairSharing in its Configuration and
    no limit on any queue, so a stack that does not ask keeps Kueue's defaults."""
    for stack in STACKS:
        cfg = stack_config(stack)
        assert cfg.scheduling.fair_sharing.enabled is False
        assert cfg.scheduling.fair_sharing.admission is None
