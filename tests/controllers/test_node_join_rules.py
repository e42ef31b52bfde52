"""No job on an untested node (issue 39 §1): every GPU node joins with a startup taint and takes
no job until the self-test's node set has passed on it. Over every stack (the shipped ones and
one of every setting, tests/helpers/pod_security_stacks.py): every AWS GPU node group declares
the taint where new nodes are tested; everything that must run on a node before its test can
pass (every DaemonSet that runs on GPU nodes, the program's and every chart's, the GPU
Operator's operands, the node-join check) tolerates it; no job does. Tolerations are read with
the scheduler's rule (tests/controllers/tas.py, `tolerates`)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest

from model.config.node_join import canary_pools, joins_tested, pools_tested_on_join
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import make_project
from tests.controllers.node_join import (
    ca_startup_taint,
    ca_template_taints,
    daemon_refusal,
    settled,
)
from tests.controllers.pod_security import pod_templates
from tests.controllers.references import (
    Cluster,
    claim_problems,
    configmap_item_problems,
    missing,
    pod_references,
)
from tests.controllers.tas import node_from, scheduler_refusal, tolerates
from tests.helpers.bad_stacks import aws
from tests.helpers.pod_security_stacks import (
    ALL_STACKS,
    builder_jobs,
    config_of,
    declared_pods,
    plan_of,
    rendering_of,
)
from tests.helpers.selftest_stacks import FSX, IMAGE, P5

# cluster-autoscaler FAQ.md, "Startup taints", at cluster-autoscaler-1.35.0 (the chart
# 9.59.0's appVersion) and 1.36.1: "all taints with the prefix
# `startup-taint.cluster-autoscaler.kubernetes.io/`" are startup taints. The name after the
# prefix is the platform's (docs/selftest.md, "When a node joins").
NODE_JOIN_TAINT = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
    "value": "pending",
    "effect": "NoSchedule",
}
# EKS API reference, "Taint": effect NO_SCHEDULE is the node's NoSchedule.
NODE_GROUP_TAINT = {**NODE_JOIN_TAINT, "effect": "NO_SCHEDULE"}
NODE_JOIN_LABEL = ("gpu-platform/node-join", "pending")
# components/data/gpu_node_group.py taints every GPU node group so; admins taint theirs alike.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_NODE_GROUP_TAINT = {**GPU_TAINT, "effect": "NO_SCHEDULE"}
# A pool's canary node (components/data/gpu_node_group.py; docs/operations.md, "Rolling a
# GPU-stack change"): the label and a taint of the same key, valued with its pool.
CANARY_LABEL = "gpu-platform/canary"
CANARY_TAINT = {"key": CANARY_LABEL, "value": "h100", "effect": "NoSchedule"}
# Operator custom resources whose operands are DaemonSets on the GPU nodes, and where each
# keeps its operands' tolerations: the GPU Operator's ClusterPolicy (v26.7.0 CRD,
# spec.daemonsets.tolerations) and the Network Operator's NicClusterPolicy (26.4.1 CRD,
# spec.tolerations).
OPERAND_TOLERATIONS = {
    "ClusterPolicy": ("daemonsets", "tolerations"),
    "NicClusterPolicy": ("tolerations",),
}


def _tolerated(taint: dict, tolerations) -> bool:
    return any(tolerates(t, taint) for t in tolerations or ())


def _operand_tolerations(stack: str):
    """(where, tolerations) of each operator custom resource the stack declares or renders."""
    objects = [("plan", o) for o in plan_of(stack).kubernetes_objects()]
    objects += [(r.release, o) for r, o in rendering_of(stack).objects()]
    for source, obj in objects:
        path = OPERAND_TOLERATIONS.get(obj["kind"])
        if path is None:
            continue
        found = obj.get("spec") or {}
        for key in path:
            found = found.get(key) or {}
        yield f"{source}: {obj['kind']} {obj['metadata']['name']}", found or []


def test_the_model_reads_a_toleration_as_the_scheduler_does():
    exists = {"key": NODE_JOIN_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}
    assert _tolerated(NODE_JOIN_TAINT, [exists])
    assert _tolerated(NODE_JOIN_TAINT, [{"operator": "Exists"}])
    assert not _tolerated(NODE_JOIN_TAINT, [{**GPU_TAINT, "operator": "Equal"}])
    assert not _tolerated(NODE_JOIN_TAINT, [{**exists, "effect": "NoExecute"}])


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_gpu_node_group_joins_with_the_startup_taint_where_nodes_are_tested(stack):
    """EKS applies a node group's taints as the node registers: none of the group's nodes takes
    a pod before its test, and the autoscaler, reading the prefix, waits for it."""
    cfg = config_of(stack)
    groups = plan_of(stack).of_type("aws:eks/nodeGroup:NodeGroup")
    gpu = [g for g in groups if GPU_NODE_GROUP_TAINT in g.inputs.get("taints", [])]
    # A pool's canary group (components/selftest/canary.py) is tested by its own Job, never by
    # the node-join check: neither the startup taint nor the label.
    canaries = [g for g in gpu if CANARY_LABEL in g.inputs["labels"]]
    assert len(canaries) == len(canary_pools(cfg))
    for group in canaries:
        assert NODE_GROUP_TAINT not in group.inputs["taints"], group.name
        assert NODE_JOIN_LABEL[0] not in group.inputs["labels"], group.name
    gpu = [g for g in gpu if g not in canaries]
    assert len(gpu) == (len(cfg.gpu_node_groups) if cfg.provider == "aws" else 0)
    for group in gpu:
        taints, labels = group.inputs["taints"], group.inputs["labels"]
        if group.name.removeprefix(f"{stack}-") in {p.name for p in pools_tested_on_join(cfg)}:
            assert NODE_GROUP_TAINT in taints, group.name
            assert labels.get(NODE_JOIN_LABEL[0]) == NODE_JOIN_LABEL[1], group.name
        else:
            assert NODE_GROUP_TAINT not in taints, group.name
    others = [g for g in groups if g not in gpu]
    assert all(NODE_GROUP_TAINT not in g.inputs.get("taints", []) for g in others)


def test_the_every_setting_aws_stack_tests_its_new_nodes():
    """So that the test above sees the taint it guards."""
    assert joins_tested(config_of("every-aws"))


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_daemonset_on_gpu_nodes_tolerates_the_node_join_taint(stack):
    """A DaemonSet that runs on GPU nodes (it tolerates the GPU taint) must run there before the
    node's test: the device plugins, DCGM and its exporter, the fabric's plugins, the storage
    node plugins, node monitoring, and the node-join check itself."""
    found, missing = [], []
    for where, _namespace, (_meta, spec) in declared_pods(stack):
        if "DaemonSet " not in where or not _tolerated(GPU_TAINT, spec.get("tolerations")):
            continue
        found.append(where)
        if not _tolerated(NODE_JOIN_TAINT, spec.get("tolerations")):
            missing.append(where)
    for where, tolerations in _operand_tolerations(stack):
        found.append(where)
        if not _tolerated(NODE_JOIN_TAINT, tolerations):
            missing.append(where)
    assert found, f"{stack}: no DaemonSet on GPU nodes to check"
    assert missing == []


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_daemonset_on_gpu_nodes_runs_on_the_canary_but_the_node_join_check(stack):
    """The canary is measured with the GPU stack it would roll out: every DaemonSet of a GPU
    node runs on it too, but the node-join check, which would untaint and label it."""
    missing, joining = [], []
    for where, _namespace, (meta, spec) in declared_pods(stack):
        if "DaemonSet " not in where or not _tolerated(GPU_TAINT, spec.get("tolerations")):
            continue
        tolerated = _tolerated(CANARY_TAINT, spec.get("tolerations"))
        if meta.get("name", "").startswith("node-join-") or "node-join-" in where:
            joining += [where] if tolerated else []
        elif not tolerated:
            missing.append(where)
    missing += [w for w, t in _operand_tolerations(stack) if not _tolerated(CANARY_TAINT, t)]
    assert missing == []
    assert joining == []


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_no_job_tolerates_the_node_join_taint(stack):
    """Recipes, `jobs submit` in every team namespace on every pool, the self-test and its
    schedule: none lands on a node whose test has not passed."""
    tolerating = [
        what
        for what, obj in builder_jobs(stack)
        for _meta, spec in pod_templates(obj)
        if _tolerated(NODE_JOIN_TAINT, spec.get("tolerations"))
    ]
    assert tolerating == []


# ------------------------------------------------------------- the controllers, modelled

# tests/controllers/test_quarantine_rules.py's quarantine, as docs/monitoring.md names it.
QUARANTINE_TAINT = {
    "key": "gpu-platform/selftest-failed",
    "value": "inventory.gpu_count",
    "effect": "NoSchedule",
}
# EKS API reference, "Taint".
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute"}


def new_node(stack: str, pool) -> dict:
    """A node of `pool` as it joins: on AWS with its node group's labels and taints as planned;
    on an existing cluster with the pool's labels, the GPU taint, and the startup taint and
    label docs/selftest.md ("When a node joins") has the admin set."""
    cfg = config_of(stack)
    if cfg.provider == "aws":
        (group,) = [
            g.inputs
            for g in plan_of(stack).of_type("aws:eks/nodeGroup:NodeGroup")
            if g.name == f"{stack}-{pool.name}"
        ]
        labels = dict(group["labels"])
        taints = [{**t, "effect": EKS_EFFECTS[t["effect"]]} for t in group["taints"]]
    else:
        labels = {**pool.node_selector, NODE_JOIN_LABEL[0]: NODE_JOIN_LABEL[1]}
        taints = [GPU_TAINT, NODE_JOIN_TAINT]
    name = f"{pool.name}-new"
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}},
        "spec": {"taints": taints},
    }


def join_daemon_sets(stack: str) -> dict[str, dict]:
    return {
        o["metadata"]["name"]: o
        for o in plan_of(stack).kubernetes_objects()
        if o["kind"] == "DaemonSet" and o["metadata"]["name"].startswith("node-join-")
    }


def pool_jobs(stack: str, pool) -> list[tuple[str, dict]]:
    """Every pod spec the builder renders onto `pool`, with the tolerations Kueue adds from the
    pool's flavor."""
    flavor = next(
        (o["spec"].get("tolerations", []) for o in plan_of(stack).kubernetes_objects()
         if o["kind"] == "ResourceFlavor" and o["metadata"]["name"] == pool.name),
        [],
    )  # fmt: skip
    found = []
    for what, obj in builder_jobs(stack):
        for _meta, spec in pod_templates(obj):
            if pool.node_selector.items() <= spec.get("nodeSelector", {}).items():
                tolerations = [*spec.get("tolerations", []), *flavor]
                found.append((what, {**spec, "tolerations": tolerations}))
    return found


def test_the_autoscaler_reads_the_taint_as_a_startup_taint_and_plans_without_it():
    """cluster-autoscaler utils/taints/taints.go (1.35.0): a key with the prefix, no flag."""
    assert ca_startup_taint(NODE_JOIN_TAINT["key"])
    assert not ca_startup_taint(GPU_TAINT["key"])
    assert not ca_startup_taint("gpu-platform/node-join")
    assert ca_startup_taint("gpu-platform/node-join", ["gpu-platform/node-join"])
    assert ca_template_taints([GPU_TAINT, NODE_JOIN_TAINT]) == [GPU_TAINT]


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_a_new_node_is_tested_then_released_or_held_on_every_pool(stack):
    """On every tested pool: the pool's check, and no other pool's, runs on a new node, where
    no job lands; a PASS releases it to every job of the pool and the check leaves it; a FAIL
    holds it (quarantined, still tainted) and the check leaves it too; a node whose check never
    settles stays tainted (and alerts: NodeJoinStuck, tests/promtool)."""
    cfg = config_of(stack)
    pools = pools_tested_on_join(cfg)
    daemon_sets = join_daemon_sets(stack)
    assert sorted(daemon_sets) == sorted(f"node-join-{p.name}" for p in pools)
    problems = []
    for pool in pools:
        joining = new_node(stack, pool)
        new = node_from(joining, 8)
        for name, ds in daemon_sets.items():
            runs = daemon_refusal(ds, new) is None
            if runs != (name == f"node-join-{pool.name}"):
                problems.append(f"{stack} {pool.name}: {name} runs there: {runs}")
        jobs = pool_jobs(stack, pool)
        assert jobs, f"{stack}: no job renders onto {pool.name}"
        passed = node_from(settled(joining, True, NODE_JOIN_LABEL[0], NODE_JOIN_TAINT["key"],
                                   QUARANTINE_TAINT), 8)  # fmt: skip
        failed = node_from(settled(joining, False, NODE_JOIN_LABEL[0], NODE_JOIN_TAINT["key"],
                                   QUARANTINE_TAINT), 8)  # fmt: skip
        for what, pod in jobs:
            if scheduler_refusal(pod, new) is None:
                problems.append(f"{stack} {pool.name}: {what} lands on an untested node")
            why = scheduler_refusal(pod, passed)
            if why is not None:
                problems.append(f"{stack} {pool.name}: {what} refused once it passed: {why}")
            if scheduler_refusal(pod, failed) is None:
                problems.append(f"{stack} {pool.name}: {what} lands on a node that failed")
        ds = daemon_sets[f"node-join-{pool.name}"]
        for state, node in (("passed", passed), ("failed", failed)):
            if daemon_refusal(ds, node) is None:
                problems.append(f"{stack} {pool.name}: the check stays on a {state} node")
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_the_autoscaler_plans_a_new_node_of_each_group_with_the_check_and_no_startup_taint(stack):
    """Scale from zero (cluster-autoscaler cloudprovider/aws/README.md, node-template tags): the
    template node of a tested group carries the label, so the check's pod is counted in it,
    and not the startup taint, which SanitizeTaints would drop anyway."""
    cfg = config_of(stack)
    prefix = "k8s.io/cluster-autoscaler/node-template"
    label = f"{prefix}/label/{NODE_JOIN_LABEL[0]}"
    tags = [
        (t.name, t.inputs["tag"]["key"], t.inputs["tag"]["value"])
        for t in plan_of(stack).of_type("aws:autoscaling/tag:Tag")
    ]
    assert not [k for _, k, _ in tags if k.startswith(f"{prefix}/taint/startup-taint.")]
    for pool in pools_tested_on_join(cfg) if cfg.provider == "aws" else []:
        labels = [
            v for name, k, v in tags if name.startswith(f"{stack}-{pool.name}-") and k == label
        ]
        assert labels == [NODE_JOIN_LABEL[1]], (stack, pool.name)


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_each_pools_breaker_counts_exactly_its_pools_nodes(stack):
    """The circuit breaker lists the nodes its selector (`k=v,...`, the API's equality-based
    label selector) selects and counts those held failed: a selector that also caught another
    pool's nodes would dilute the share, one that missed its own would trip at once."""
    cfg = config_of(stack)
    pools = pools_tested_on_join(cfg)
    nodes = {p.name: new_node(stack, p)["metadata"]["labels"] for p in pools}
    for pool in pools:
        (container,) = join_daemon_sets(stack)[f"node-join-{pool.name}"]["spec"]["template"][
            "spec"
        ]["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        wanted = dict(kv.split("=", 1) for kv in env["SELFTEST_NODE_JOIN_POOL_SELECTOR"].split(","))
        selected = [name for name, labels in nodes.items() if wanted.items() <= labels.items()]
        assert selected == [pool.name], (stack, pool.name, selected)
        assert float(env["SELFTEST_NODE_JOIN_MAX_FAILED_SHARE"]) == 0.5  # the default


# ------------------------------------------------------- what the check's pod names exists

# A stack whose only self-test is the node-join check: no post-deploy run, no schedule.
JOIN_ONLY = "join-only"


@functools.cache
def _join_only_plan():
    selftest = {"image": IMAGE, "mode": "off", "schedule": {"enabled": False}}
    stack = aws(gpu_node_groups=[P5], storage=FSX, selftest=selftest)
    root = make_project(Path(tempfile.mkdtemp(prefix="node-join-")), {JOIN_ONLY: stack})
    return build_plan(run_program(JOIN_ONLY, root))


@pytest.mark.parametrize("stack", [*ALL_STACKS, JOIN_ONLY])
def test_the_checks_pod_finds_what_it_names_in_the_self_tests_namespace(stack):
    """tests/controllers/references.py: the launcher's ConfigMap and its keys, the pool's NCCL
    ConfigMap, shared-data's claim, the ServiceAccount, in the namespace the pod runs in."""
    plan = _join_only_plan() if stack == JOIN_ONLY else plan_of(stack)
    objects = plan.kubernetes_objects()
    cluster = Cluster(stack, objects)
    found = []
    daemon_sets = [o for o in objects if o["kind"] == "DaemonSet"
                   and o["metadata"]["name"].startswith("node-join-")]  # fmt: skip
    for ds in daemon_sets:
        template, namespace = ds["spec"]["template"], ds["metadata"]["namespace"]
        refs = pod_references(template, namespace)
        found += missing(refs, cluster) + claim_problems(refs, cluster)
        found += configmap_item_problems(refs, template, cluster)
    assert daemon_sets or stack not in (JOIN_ONLY, "every-aws")
    assert found == []
    # Its result is pushed like any run's, where no scheduled run pushes too; the Pushgateway
    # admits the namespace (components/observability/pushgateway.py, job namespaces).
    for ds in daemon_sets:
        (container,) = ds["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["SELFTEST_PUSHGATEWAY_URL"] == (
            "http://prometheus-pushgateway.monitoring.svc:9091"
        ), ds["metadata"]["name"]
