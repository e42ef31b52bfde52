"""A GPU-stack change's canary (components/selftest/canary.py, components/data/gpu_node_group.py):
on every AWS stack, once the self-test turns the node-join check on (tests/helpers/
canary_stacks.py), every tested pool has a canary node group built from its own spec and a Job
that runs the node-join check set there against the pool's baseline; the pool's node group waits
for the Job. The order `pulumi up` then follows is modelled in
tests/program/test_canary_roll.py."""

from __future__ import annotations

import pytest

from components.selftest.canary import canary_env
from model.config import parse_config
from model.config.node_join import canary_pools
from tests.conftest import find, project_plan, validate_kubernetes
from tests.controllers.pod_security import pod_templates, violations
from tests.controllers.qos import qos_class
from tests.controllers.references import Cluster, Placed, problems
from tests.helpers.autoscaler_tags import NODE_TEMPLATE
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing
from tests.helpers.canary_stacks import CANARY_STACKS, canary_env_and_config, canary_plan
from tests.helpers.selftest_stacks import FSX, IMAGE, MIG, P5, env_of

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
JOB = "kubernetes:batch/v1:Job"
ASG_TAG = "aws:autoscaling/tag:Tag"
# components/vocabulary.py's canary label and taint key, as docs/operations.md names them.
CANARY = "gpu-platform/canary"
# contract/node_join.py, as docs/selftest.md ("When a node joins") names them.
JOIN_LABEL = "gpu-platform/node-join"
STARTUP_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join"
# The canary group's launch template keeps these of the pool's own, byte for byte: what the
# canary tests is what the pool's nodes will boot.
SAME_TEMPLATE = (
    "userData",
    "networkInterfaces",
    "placement",
    "capacityReservationSpecification",
    "instanceMarketOptions",
    "instanceType",
    "metadataOptions",
    "blockDeviceMappings",
)
SAME_GROUP = ("amiType", "capacityType", "instanceTypes", "version", "subnetIds", "clusterName")


def cases():
    for stack in CANARY_STACKS:
        env, cfg = canary_env_and_config(stack)
        pools = canary_pools(cfg)
        assert pools, f"{stack}: no pool rolls through a canary"
        for pool in pools:
            yield pytest.param(stack, env, pool.name, id=f"{stack}-{pool.name}")


CASES = list(cases())


@pytest.mark.parametrize(("stack", "env", "pool"), CASES)
def test_the_canary_group_is_built_from_the_pools_own_spec(stack, env, pool):
    plan = canary_plan(stack)
    main = find(plan, NODE_GROUP, f"{env}-{pool}")
    canary = find(plan, NODE_GROUP, f"{env}-{pool}-canary")
    assert canary.inputs["nodeGroupName"] == f"{env}-{pool}-canary"
    for key in SAME_GROUP:
        assert canary.inputs.get(key) == main.inputs.get(key), key
    main_lt = find(plan, LAUNCH_TEMPLATE, f"{env}-{pool}")
    canary_lt = find(plan, LAUNCH_TEMPLATE, f"{env}-{pool}-canary")
    for key in SAME_TEMPLATE:
        assert canary_lt.inputs.get(key) == main_lt.inputs.get(key), key
    # At most one node, none at rest: the autoscaler adds it for the canary's Job alone.
    assert canary.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}


@pytest.mark.parametrize(("stack", "env", "pool"), CASES)
def test_the_canary_node_is_a_pool_node_no_job_and_no_node_join_check_lands_on(stack, env, pool):
    """The pool's labels (measured as one of its nodes) and the canary label; the GPU taint and
    the canary's own taint, not the node-join startup taint or label: a node-join DaemonSet
    there would untaint it, and a startup taint would tell the autoscaler that ordinary pods
    may go there once it is gone."""
    plan = canary_plan(stack)
    main = find(plan, NODE_GROUP, f"{env}-{pool}")
    canary = find(plan, NODE_GROUP, f"{env}-{pool}-canary")
    expected = {k: v for k, v in main.inputs["labels"].items() if k != JOIN_LABEL}
    assert canary.inputs["labels"] == {**expected, CANARY: pool}
    assert JOIN_LABEL not in canary.inputs["labels"]
    # EKS API reference, Taint: the effect is spelt NO_SCHEDULE.
    assert canary.inputs["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": CANARY, "value": pool, "effect": "NO_SCHEDULE"},
    ]
    assert STARTUP_TAINT not in {t["key"] for t in canary.inputs["taints"]}
    # Repaired, the node under test would be replaced before the check could fail it.
    assert canary.inputs["nodeRepairConfig"] == {"enabled": False}


@pytest.mark.parametrize(("stack", "env", "pool"), CASES)
def test_the_autoscaler_can_scale_the_canary_group_from_zero_for_its_job_only(stack, env, pool):
    """cluster-autoscaler cloudprovider/aws/README.md ("Auto-Discovery Setup", "Scaling a node
    group to 0") at cluster-autoscaler-1.35.0, the chart's appVersion: it discovers ASGs tagged
    `k8s.io/cluster-autoscaler/enabled` and `k8s.io/cluster-autoscaler/<cluster name>` (which
    EKS puts on every managed node group's ASG: EKS User Guide, "Managed node groups": "Amazon
    EKS tags managed node group resources so that they are configured to use the Kubernetes
    Cluster Autoscaler"), and builds a node of an empty group from the ASG's
    `k8s.io/cluster-autoscaler/node-template/label/<label>` and
    `.../node-template/taint/<key>: <value>:<effect>` tags."""
    plan = canary_plan(stack)
    canary = find(plan, NODE_GROUP, f"{env}-{pool}-canary")
    tags = {
        t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
        for t in plan.of_type(ASG_TAG)
        if t.inputs["autoscalingGroupName"].startswith(f"(known after apply: {canary.name}.")
    }
    labels = {
        k.removeprefix(f"{NODE_TEMPLATE}/label/"): v for k, v in tags.items() if "/label/" in k
    }
    assert labels == canary.inputs["labels"]
    taints = {
        k.removeprefix(f"{NODE_TEMPLATE}/taint/"): v for k, v in tags.items() if "/taint/" in k
    }
    assert taints == {"nvidia.com/gpu": "present:NoSchedule", CANARY: f"{pool}:NoSchedule"}
    assert any("/resources/nvidia.com/gpu" in k for k in tags)
    assert all(not t.inputs["tag"]["propagateAtLaunch"] for t in plan.of_type(ASG_TAG))


def canary_job(stack, env, pool):
    return find(canary_plan(stack), JOB, f"{env}-job-canary-{pool}")


@pytest.mark.parametrize(("stack", "env", "pool"), CASES)
def test_the_canary_job_runs_the_node_join_checks_on_the_whole_canary_node(stack, env, pool):
    job = canary_job(stack, env, pool).inputs
    assert job["metadata"]["name"] == f"canary-{pool}"
    assert job["metadata"]["namespace"] == "gpu-platform-selftest"
    spec = job["spec"]
    assert spec["backoffLimit"] == 0
    # Kept: deleted after it finished, the next `up` would find it gone and run it again.
    assert "ttlSecondsAfterFinished" not in spec
    # selftest.node_join.timeout_minutes' default, 30 minutes (docs/config.md).
    assert spec["activeDeadlineSeconds"] == 1800
    # Started at once: no queue (Kueue leaves it alone, test_kueue_leaves_the_canary_job_alone).
    assert spec["suspend"] is False
    assert "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["nodeSelector"][CANARY] == pool
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": CANARY, "operator": "Equal", "value": pool, "effect": "NoSchedule"},
    ]
    # It may call no API: it neither quarantines nor untaints its node.
    assert "serviceAccountName" not in pod
    env_vars = env_of(pod)
    assert env_vars["SELFTEST_CHECKS"] == "short"
    assert env_vars["SELFTEST_BASELINE_POOL"] == pool
    # selftest.node_join.canary_tolerance's default (docs/config.md).
    assert env_vars["SELFTEST_BASELINE_TOLERANCE"] == "0.1"
    # kube-prometheus-stack's Prometheus Service in the monitoring namespace, as the
    # post-deploy run is told (components/vocabulary.prometheus_service).
    assert env_vars["SELFTEST_PROMETHEUS_URL"].startswith("http://")
    assert ".monitoring.svc:9090" in env_vars["SELFTEST_PROMETHEUS_URL"]
    assert env_vars["SELFTEST_PUSHGATEWAY_URL"] == (
        "http://prometheus-pushgateway.monitoring.svc:9091"
    )
    for name in ("SELFTEST_NODE_JOIN", "SELFTEST_CORDON_ON_FAIL", "SELFTEST_TOPOLOGY_LABELS"):
        assert name not in env_vars, name
    # The URL is for the baseline: whether the GPU autoscalers' metric must be served for the
    # pod is the stack's (workload_autoscaling.gpu), as for every run; without one the image
    # must not check it, or every canary would FAIL on a metric nothing serves.
    scaled = bool(canary_env_and_config(stack)[1].workload_autoscaling.gpu)
    assert (env_vars.get("SELFTEST_AUTOSCALER_METRIC") == "true") == scaled


@pytest.mark.parametrize(("stack", "env", "pool"), CASES)
def test_a_new_canary_image_is_a_new_job_and_up_waits_for_it(stack, env, pool):
    """A Job's spec.template is immutable (plan/replacements.json, kubernetes:batch/v1:Job):
    the canary group's image in the pod template's annotation replaces the Job on a new one.
    pulumi-kubernetes awaits a Job until `Complete` and fails at once on `Failed`
    (pulumi_kubernetes/batch/v1/Job.py docstring at 4.34.2), for at most its custom timeout:
    selftest.provisioning_minutes (30) + the pool's join limit (30)."""
    job = canary_job(stack, env, pool)
    annotations = job.inputs["spec"]["template"]["metadata"]["annotations"]
    assert annotations["gpu-platform/canary-node-image"] == (
        f"(known after apply: {env}-{pool}-canary)"
    )
    assert job.delete_before_replace
    assert job.custom_timeouts == {"create": "60m", "update": "60m"}
    plan = canary_plan(stack)
    assert find(plan, NODE_GROUP, f"{env}-{pool}-canary").urn in job.dependencies
    assert job.urn in find(plan, NODE_GROUP, f"{env}-{pool}").dependencies


@pytest.mark.parametrize(("stack", "env", "pool"), CASES)
def test_the_canary_job_is_valid_admitted_and_guaranteed(stack, env, pool):
    """The Kubernetes schema of the stack's version; Pod Security `restricted`, which every
    builder pod keeps to (tests/controllers/pod_security.py); the Guaranteed QoS class of every
    training pod (tests/controllers/qos.py)."""
    plan = canary_plan(stack)
    obj = canary_job(stack, env, pool).inputs
    validate_kubernetes(obj, plan.outputs["kubernetes_version"])
    for pod in pod_templates(obj):
        assert violations(pod, "restricted") == []
    assert qos_class(obj["spec"]["template"]["spec"]) == "Guaranteed"


@pytest.mark.parametrize(("stack", "env", "pool"), CASES)
def test_the_canary_job_finds_what_its_pods_name(stack, env, pool):
    """Its claims, ConfigMaps (the launcher's, the pool's NCCL settings) and namespace, as the
    stack declares them (tests/controllers/references.py)."""
    plan = canary_plan(stack)
    obj = canary_job(stack, env, pool).inputs
    assert problems(Placed(obj, env), {env: Cluster(env, plan.kubernetes_objects())}, {}) == []


def test_the_canary_env_drops_what_would_call_the_api():
    stack = aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "cordon_on_fail": True})
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in stack.items()}, "Pulumi.c.yaml")
    (pool,) = canary_pools(cfg)
    env = canary_env(cfg, pool, {"SELFTEST_CORDON_ON_FAIL": "true", "KEPT": "1"})
    assert "SELFTEST_CORDON_ON_FAIL" not in env
    assert env["KEPT"] == "1"
    assert env["SELFTEST_RUN_ID"] == "$(POD_NAME)"


def test_a_mig_pool_has_no_canary_and_its_group_waits_for_none():
    """A MIG pool's nodes join untested (model/config/node_join.pools_tested_on_join)."""
    stack = aws(gpu_node_groups=[P5, MIG], selftest={"image": IMAGE})
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in stack.items()}, "Pulumi.c.yaml")
    assert [p.name for p in canary_pools(cfg)] == ["h100"]


def test_a_pinned_ami_release_boots_the_canary_and_the_pool_alike():
    """gpu_node_groups[].ami_release is the node group's releaseVersion (EKS API,
    CreateNodegroup: "releaseVersion: The AMI version of the Amazon EKS optimized AMI to
    use"), on the pool's group and its canary alike."""
    stack = aws(
        cluster={"kubernetes_version": "1.35"},
        gpu_node_groups=[{**P5, "ami_release": "1.35.3-20260724"}],
        storage=FSX,
        selftest={"image": IMAGE},
    )
    plan = project_plan("pin", {"pin": stack})
    for name in ("pin-h100", "pin-h100-canary"):
        assert find(plan, NODE_GROUP, name).inputs["releaseVersion"] == "1.35.3-20260724"


REFUSED = [
    pytest.param(
        aws(
            cluster={"kubernetes_version": "1.35"},
            gpu_node_groups=[{**P5, "ami_release": "1.34.2-20260724"}],
        ),
        f"{NS}:gpu_node_groups[0].ami_release",
        "'1.34.2-20260724' is a release of Kubernetes 1.34",
        "pin a 1.35.<patch>-<date> release",
        id="ami-release-of-another-minor",
    ),
    pytest.param(
        aws(gpu_node_groups=[{**P5, "ami_release": "v20260724"}]),
        f"{NS}:gpu_node_groups[0].ami_release",
        "v20260724",
        "1.35.3-20260724",
        id="ami-release-not-a-release",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"node_join": {"canary": True}}),
        f"{NS}:selftest.node_join.canary",
        "no pool's new nodes are tested on join",
        "Valid: false, or unset",
        id="canary-without-node-join",
    ),
    pytest.param(
        aws(
            gpu_node_groups=[MIG],
            selftest={
                "image": IMAGE,
                "mode": "off",
                "schedule": {"enabled": False},
                "node_join": {"canary": True},
            },
        ),
        f"{NS}:selftest.node_join.canary",
        "no pool's new nodes are tested on join",
        "Valid: false, or unset",
        id="canary-on-mig-pools-only",
    ),
    pytest.param(
        existing(
            selftest={
                "image": IMAGE,
                "mode": "off",
                "schedule": {"enabled": False},
                "node_join": {"canary": True},
            }
        ),
        f"{NS}:selftest.node_join.canary",
        "provider is existing",
        "Valid: false, or unset",
        id="canary-on-an-existing-cluster",
    ),
    *(
        pytest.param(
            aws(
                gpu_node_groups=[P5],
                selftest={"image": IMAGE, "node_join": {"canary_tolerance": bad}},
            ),
            f"{NS}:selftest.node_join.canary_tolerance",
            text,
            valid,
            id=f"tolerance-{text}",
        )
        for bad, text, valid in [(0, "0", "greater than 0"), (0.6, "0.6", "less than or equal")]
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), REFUSED)
def test_a_canary_with_nothing_to_test_is_refused_naming_the_key(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
