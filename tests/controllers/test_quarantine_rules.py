"""A restarted group never goes back to the node its preflight failed on (issue 37): the
platform's quarantine watcher in the stack's plan reads every pod that runs a preflight, and once
a node is quarantined (cordoned, labelled and tainted as docs/monitoring.md says) the models of
Kueue's topology-aware scheduling and kube-scheduler (tests/controllers/tas.py) place no pod of
the restarted group there, with TAS and without, on every pool of every stack, while a healthy
node of the pool still takes them. The image side's part, the verdict the preflight writes and
the patch the watcher sends, which yields exactly the node state below, is held in
tests/image/selftest/test_quarantine.py. A pool of one node runs no preflight: the self-test's
own runs quarantine its node, with that patch."""

from __future__ import annotations

import copy

import pytest

from tests.conftest import STACKS, planned, stack_config
from tests.controllers.rbac import account_grants, allowed
from tests.controllers.tas import (
    HOSTNAME,
    Node,
    node_from,
    placement_refusal,
    tas_refusal,
    tolerates,
    untolerated,
)
from tests.helpers import jobsets
from tests.helpers.rendered_jobs import every_job

# components/data/gpu_node_group.py taints every GPU node group so (admins taint on-prem GPU
# nodes alike, docs/operations.md), and a quarantine keeps it.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# docs/monitoring.md, "Returning a quarantined node": the key, valued with the failed check.
QUARANTINE_LABEL = {"gpu-platform/selftest-failed": "inventory.gpu_count"}
QUARANTINE_TAINT = {
    "key": "gpu-platform/selftest-failed",
    "value": "inventory.gpu_count",
    "effect": "NoSchedule",
}
# What the watcher reads (bootstrap/selftest/watch.py, quarantine.node_fault): failed pods
# that carry this label, and the termination message of this init container.
PREFLIGHT_LABEL = ("gpu-platform/preflight", "true")
PREFLIGHT_CONTAINER = "preflight"
WATCHER = "quarantine-watcher"


def node_object(name: str, labels: dict[str, str]) -> dict:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {**labels, HOSTNAME: name}},
        "spec": {"taints": [GPU_TAINT]},
    }


def quarantined(node: dict) -> dict:
    """The node once quarantined: cordoned, labelled and tainted, its own taints kept."""
    found = copy.deepcopy(node)
    found["metadata"]["labels"].update(QUARANTINE_LABEL)
    found["spec"] = {"unschedulable": True, "taints": [GPU_TAINT, QUARANTINE_TAINT]}
    return found


def flavor_tolerations(stack: str, pool: str) -> list[dict]:
    """What Kueue adds to the pods it admits on the pool's flavor (none without Kueue)."""
    for obj in planned(stack).kubernetes_objects():
        if obj["kind"] == "ResourceFlavor" and obj["metadata"]["name"] == pool:
            return obj["spec"].get("tolerations", [])
    return []


def watcher_misses(objects: list[dict], namespace: str, template: dict) -> list[str]:
    """Why the rendered watcher would not see the pod's failed preflight: its namespaces, a
    RoleBinding there to list pods, the label it selects by, the container it reads."""
    deployments = [o for o in objects if o["kind"] == "Deployment"
                   and o["metadata"]["name"] == WATCHER]  # fmt: skip
    if not deployments:
        return ["no quarantine watcher is rendered"]
    (container,) = deployments[0]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    found = []
    if namespace not in env["SELFTEST_WATCH_NAMESPACES"].split(","):
        found.append(f"it does not watch {namespace}")
    held = account_grants(objects, WATCHER, deployments[0]["metadata"]["namespace"])
    if not allowed(held, "list", "", "pods", namespace):
        found.append(f"no RoleBinding lets it list pods in {namespace}")
    key, value = PREFLIGHT_LABEL
    if template["metadata"].get("labels", {}).get(key) != value:
        found.append(f"the pod lacks its label {key}={value}")
    if [c["name"] for c in template["spec"]["initContainers"]] != [PREFLIGHT_CONTAINER]:
        found.append(f"the pod's init container is not {PREFLIGHT_CONTAINER}")
    return found


def preflight_pods(stack: str) -> list[tuple[str, dict]]:
    return [
        (what, obj)
        for what, obj in every_job(stack)
        if obj["kind"] == jobsets.KIND and "initContainers" in jobsets.pod_spec(obj)
    ]


@pytest.mark.parametrize("stack", STACKS)
def test_every_failed_preflight_reaches_the_platforms_watcher(stack):
    """Every job that runs a preflight, as the stack's plan and python -m jobs render them: the
    watcher of the plan reads its pods. Without a self-test image no job runs one."""
    found = preflight_pods(stack)
    if stack_config(stack).selftest.image is None:
        assert found == []
        return
    assert found, f"{stack} names a self-test image, yet no job runs a preflight"
    objects = planned(stack).kubernetes_objects()
    problems = [
        f"{stack}: {what}: the watcher misses it: {why}"
        for what, obj in found
        for why in watcher_misses(objects, obj["metadata"]["namespace"], jobsets.pod_template(obj))
    ]
    assert not problems, "\n".join(problems[:10])


def pool_pods(stack: str) -> dict[str, dict[str, dict]]:
    """Every distinct GPU pod spec the stack renders, by pool (the pool its nodeSelector names)."""
    cfg = stack_config(stack)
    found: dict[str, dict[str, dict]] = {p.name: {} for p in cfg.gpu_pools}
    for _, obj in every_job(stack):
        for pod in jobsets.pod_specs(obj):
            for pool in cfg.gpu_pools:
                if pool.node_selector.items() <= pod.get("nodeSelector", {}).items():
                    found[pool.name].setdefault(repr(sorted(pod.items(), key=str)), pod)
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_after_a_quarantine_no_pod_of_the_restarted_group_lands_on_that_node(stack):
    """Every GPU pod on every pool, with TAS and without."""
    cfg = stack_config(stack)
    problems = []
    for pool in cfg.gpu_pools:
        pods = list(pool_pods(stack)[pool.name].values())
        assert pods, f"{stack}: no rendered pod on pool {pool.name}"
        bad = node_from(quarantined(node_object(f"{pool.name}-x", dict(pool.node_selector))), 8)
        good = node_from(node_object(f"{pool.name}-y", dict(pool.node_selector)), 8)
        flavor = flavor_tolerations(stack, pool.name)
        for pod in pods:
            # With TAS, Kueue itself must move the pods (a refusal by kube-scheduler alone
            # would leave them pending on the node their workload keeps assigned).
            if tas_refusal(bad, [*pod.get("tolerations", []), *flavor]) is None:
                problems.append(f"{stack} {pool.name}: Kueue's TAS ungates pods onto {bad.name}")
            for tas in (True, False):
                if placement_refusal(pod, bad, flavor, tas) is None:
                    problems.append(f"{stack} {pool.name} tas={tas}: lands on {bad.name}")
                why = placement_refusal(pod, good, flavor, tas)
                if why is not None:
                    problems.append(f"{stack} {pool.name} tas={tas}: not on a healthy node: {why}")
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize("stack", STACKS)
def test_no_gpu_pod_the_platform_renders_tolerates_the_quarantine_taint(stack):
    """Every pod of every job (the platform's, python -m jobs', a bursting team's), with the
    tolerations Kueue adds from its pool's flavor: a blanket `operator: Exists` would tolerate
    the quarantine, and a restarted group would land on the node again."""
    node = Node("x", {}, 8, (QUARANTINE_TAINT,))
    problems = []
    for what, obj in every_job(stack):
        for pod in jobsets.pod_specs(obj):
            pool = next(
                (p.name for p in stack_config(stack).gpu_pools
                 if p.node_selector.items() <= pod.get("nodeSelector", {}).items()),
                None,
            )  # fmt: skip
            tolerations = [*pod.get("tolerations", []), *flavor_tolerations(stack, pool or "")]
            if not untolerated(node, tolerations):
                problems.append(f"{stack}: {what}: tolerates {QUARANTINE_TAINT}: {tolerations}")
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "gpu-platform/selftest-failed", "operator": "Exists"}, True),
        ({"key": "gpu-platform/selftest-failed", "value": "inventory.gpu_count"}, True),
        ({"key": "gpu-platform/selftest-failed", "value": "hardware.xid"}, False),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        (GPU_TAINT | {"operator": "Equal"}, False),
    ],
)
def test_a_toleration_tolerates_as_kubernetes_reads_it(toleration, tolerated):
    """k8s.io/api core/v1 toleration.go ToleratesTaint, one case per branch."""
    assert tolerates(toleration, QUARANTINE_TAINT) is tolerated


def test_with_tas_a_label_alone_is_no_reason_to_leave_the_node():
    """Kueue's node controller reads readiness and taints, never labels: a node labelled but
    not tainted gets the recreated pods ungated onto it, and kube-scheduler then finds it
    refused by the pods' affinity, so they stay pending there."""
    labelled = node_object("x", {"pool": "a"})
    labelled["metadata"]["labels"]["gpu-platform/selftest-failed"] = "inventory.gpu_count"
    pod = {
        "nodeSelector": {"pool": "a"},
        "tolerations": [GPU_TAINT | {"operator": "Equal"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "gpu-platform/selftest-failed", "operator": "DoesNotExist"}]}]}}},
    }  # fmt: skip
    why = placement_refusal(pod, node_from(labelled, 8), [], tas=True)
    assert why == "node x matches no required node affinity term (NodeAffinity)"
    tainted = copy.deepcopy(labelled)
    tainted["spec"]["taints"].append(QUARANTINE_TAINT)
    assert placement_refusal(pod, node_from(tainted, 8), [], tas=True).startswith(
        "node x has taints the pod sets do not tolerate"
    )
