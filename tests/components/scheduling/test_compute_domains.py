"""ComputeDomains on GB200 NVL72 pools (issue 41 §2): the driver's ComputeDomain part follows the
stack's NVLink pools, Kueue maps and holds the channel, and a multi-node job there renders a
ComputeDomain of its own whose channel its pods claim, accepted by every controller model and by
both ComputeDomain CRDs a cluster may hold.

Literals from ../shared/PINS.md: "ComputeDomains and IMEX" (`resource.nvidia.com/v1beta1`,
`numNodes: 0` valid under the driver's CRD and gpu-operator v26.7.0's, at most 18 nodes per IMEX
domain on GB200, a node in one ComputeDomain at a time, IMEX daemons on pod port 50000), "Claim
shapes" (the channel claim, `compute-domain-default-channel.nvidia.com`), "DRA quota (0.19.2)"
(one unit per pod, e.g. `nvidia.com/imex-channel`); the EKS UltraServer page's chart values
(`resources.gpus.enabled: false`, `resources.computeDomains.enabled: true`) and its 4 GPUs a
p6e-gb200.36xlarge node."""

from __future__ import annotations

import functools

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from jobs.common import pool_problems
from plan.render import Rendering, render_plan
from tests.conftest import SHARED_HELM
from tests.controllers.dra import as_reconciled
from tests.controllers.kueue_admission import Kueue, admission_problems, manager_config_of
from tests.controllers.network_policy import NAMESPACE_NAME, PodAt, admitted
from tests.controllers.pod_security import pod_templates, violations
from tests.controllers.qos import qos_class
from tests.controllers.references import Cluster, Placed, problems
from tests.helpers import helm_values as chart_values
from tests.helpers.crds import chart_crd_schema, errors
from tests.helpers.dra_objects import schema_problems
from tests.helpers.jobsets import validate
from tests.helpers.rendered_validity import assert_rendered_objects_valid
from tests.helpers.varied_stacks import GB200_POOL, GB200_STACK, gb200_config, gb200_plan

IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/train@sha256:" + "3" * 64
DRIVER_NAMESPACE = "dra-driver-nvidia-gpu"
GPU_OPERATOR_CHART = SHARED_HELM / "gpu-operator-v26.7.0.tgz"


@functools.cache
def rendering() -> Rendering:
    return render_plan(gb200_plan(), (SHARED_HELM,))


@functools.cache
def objects() -> list[dict]:
    return [*gb200_plan().kubernetes_objects(), *(o for _, o in rendering().objects())]


def release():
    (found,) = [
        r for r in gb200_plan().of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs["name"] == "dra-driver-nvidia-gpu"
    ]  # fmt: skip
    return found


def driver_objects() -> list[dict]:
    return [o for o in objects() if o["metadata"].get("namespace") == DRIVER_NAMESPACE]


def submitted(nodes: int, **choices) -> list[dict]:
    spec = spec_for_pool(
        gb200_config(), GB200_POOL, name="nvl", image=IMAGE, command=["-m", "x"], nodes=nodes,
        **choices,
    )  # fmt: skip
    return render(spec)


# ------------------------------------------------------------------------ the driver's part


def test_an_nvlink_pool_turns_on_compute_domains_and_leaves_its_gpus_to_the_device_plugin():
    values = release().inputs["values"]
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects()}
    assert ("Deployment", "dra-driver-nvidia-gpu-controller") in kinds
    assert ("DeviceClass", "compute-domain-default-channel.nvidia.com") in kinds
    assert ("DeviceClass", "gpu.nvidia.com") not in kinds
    # The kubelet plugin reaches the GB200 nodes, by the pool's own labels.
    (plugin,) = [o for o in driver_objects() if o["kind"] == "DaemonSet"]
    terms = plugin["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"key": "gpu-platform/node-group", "operator": "In", "values": [GB200_POOL]} in terms[0][
        "matchExpressions"
    ]


def test_the_drivers_values_are_the_charts_keys_and_what_it_renders_is_valid():
    minor = gb200_config().cluster.kubernetes_version
    values = release().inputs["values"]
    assert chart_values.unknown_keys("dra-driver-nvidia-gpu", "0.4.1", values, minor) == []
    assert_rendered_objects_valid(rendering(), minor)


def test_no_network_policy_stands_between_imex_daemons_on_port_50000_and_50005():
    """IMEX peers connect pod to pod on 50000, the command port is 50005: whatever policy the
    plan declares in the driver's namespace must admit a daemon from another node."""
    policies = [o for o in driver_objects() if o["kind"] == "NetworkPolicy"]
    daemon = PodAt(
        DRIVER_NAMESPACE,
        {NAMESPACE_NAME: DRIVER_NAMESPACE},
        {"app.kubernetes.io/name": "dra-driver-nvidia-gpu"},
        {},
    )
    for port in (50000, 50005):
        assert admitted(policies, daemon, daemon, port)


# ------------------------------------------------------------------------------ Kueue


def test_kueue_maps_the_channel_class_and_the_pools_flavor_holds_a_channel_a_node():
    config = manager_config_of(objects())
    assert {
        "name": "nvidia.com/imex-channel",
        "deviceClassNames": ["compute-domain-default-channel.nvidia.com"],
    } in config["resources"]["deviceClassMappings"]
    queues = [o for o in objects() if o["kind"] == "ClusterQueue"]
    held = {}
    for queue in queues:
        for group in queue["spec"].get("resourceGroups", []):
            assert "nvidia.com/imex-channel" in group["coveredResources"]
            for flavor in group["flavors"]:
                amounts = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
                held[flavor["name"]] = (
                    amounts["nvidia.com/gpu"],
                    amounts["nvidia.com/imex-channel"],
                )
    # The block's 18 nodes × 4 GPUs, one channel a node.
    assert held[GB200_POOL] == ("72", "18")


# -------------------------------------------------------------------------------- the job


@pytest.mark.parametrize("nodes", [2, 18])
def test_a_multi_node_job_comes_with_its_compute_domain_and_claims_its_channel(nodes):
    jobset, domain = submitted(nodes)
    assert domain == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "nvl", "namespace": "training"},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "nvl-imex-channel"}}},
    }
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [
        {"name": "imex-channel", "resourceClaimTemplateName": "nvl-imex-channel"}
    ]
    (trainer,) = pod["containers"]
    assert trainer["resources"]["claims"] == [{"name": "imex-channel"}]
    # GPUs still through the device plugin on this pool.
    assert trainer["resources"]["limits"]["nvidia.com/gpu"] == 4


def test_a_one_node_job_needs_no_compute_domain():
    assert [o["kind"] for o in submitted(1)] == ["JobSet"]


def test_the_compute_domain_is_valid_under_the_drivers_crd_and_the_gpu_operators():
    jobset, domain = submitted(4)
    # The JobSet with its claims, against its CRD and Kubernetes' pod schema at the minor.
    validate(jobset, gb200_config().cluster.kubernetes_version)
    assert schema_problems(domain, gb200_config().cluster.kubernetes_version) == []
    operators = chart_crd_schema(
        GPU_OPERATOR_CHART, "gpu-operator/crds/resource.nvidia.com_computedomains.yaml", "v1beta1"
    )
    assert errors(domain, operators) == []
    # Where the GPU Operator's CRD is installed first, numNodes is required.
    del domain["spec"]["numNodes"]
    assert errors(domain, operators) == [
        "ComputeDomain nvl: spec: 'numNodes' is a required property"
    ]


def test_kueue_admits_the_job_once_the_domains_controller_made_its_template():
    jobset, domain = submitted(18)
    config = manager_config_of(objects())
    before = Kueue.of([*objects(), domain], config, windows="closed")
    (problem,) = admission_problems(before, jobset)
    assert "ResourceClaimTemplate nvl-imex-channel" in problem
    after = Kueue.of([*objects(), *as_reconciled([domain])], config, windows="closed")
    assert admission_problems(after, jobset) == []


def test_kueue_refuses_the_job_where_the_channel_is_not_mapped():
    jobset, domain = submitted(2)
    config = manager_config_of(objects())
    unmapped = {**config, "resources": {**config["resources"], "deviceClassMappings": []}}
    kueue = Kueue.of([*objects(), *as_reconciled([domain])], unmapped, windows="closed")
    (problem,) = admission_problems(kueue, jobset)
    assert problem.endswith(
        "DeviceClass compute-domain-default-channel.nvidia.com is not mapped in DRA "
        "configuration for podset trainer"
    )


def test_every_reference_of_the_job_resolves_with_its_compute_domain_beside_it():
    jobset, domain = submitted(8)
    cluster = {GB200_STACK: Cluster(GB200_STACK, objects())}
    assert problems(Placed(jobset, GB200_STACK, beside=(domain,)), cluster, {}) == []
    assert problems(Placed(jobset, GB200_STACK), cluster, {}) == [
        f"{GB200_STACK}: ResourceClaimTemplate training/nvl-imex-channel (resourceClaims "
        "imex-channel) does not exist"
    ]


def test_the_claim_keeps_the_pod_restricted_and_guaranteed():
    jobset, _ = submitted(2)
    for pod in pod_templates(jobset):
        assert violations(pod, "restricted") == []
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert qos_class(template["spec"]) == "Guaranteed"


@pytest.mark.parametrize(
    ("nodes", "gpus", "why"),
    [
        (19, None, "nodes 19, but pool nvl72's NVLink domain (one ComputeDomain) holds at most "
         "18 nodes"),
        (2, 2, "gpus_per_node 2, but a multi-node job on pool nvl72 has a ComputeDomain of its "
         "own and a node belongs to one ComputeDomain at a time: take all 4 GPUs of each node"),
    ],
)  # fmt: skip
def test_a_job_that_cannot_share_one_domain_is_refused_with_the_reason(nodes, gpus, why):
    with pytest.raises(ValueError, match="^nvl: " + why.replace("(", r"\(").replace(")", r"\)")):
        submitted(nodes, gpus_per_node=gpus)
    pool = gb200_config().gpu_pools[0]
    flag = "--" + why.replace("gpus_per_node", "gpus-per-node")
    assert any(p.startswith(flag) for p in pool_problems(pool, "the job", nodes, gpus, None))
