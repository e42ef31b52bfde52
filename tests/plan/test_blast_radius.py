"""The changes block's GPU-stack blast radius (plan/blast_radius.py): over every stack, each kind
of GPU-stack change names the DaemonSets that roll, the pools whose nodes they disturb, the
queues whose jobs may run there and the restart an evicted one takes. Expected names come from
the plan's own objects (its ResourceFlavors, ClusterQueues, LocalQueues and rendered
ClusterPolicy, read here) and from the vendor sources, cited."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import re

import pytest

from model.config.node_join import canary_pools
from plan.blast_radius import (
    CLUSTER_POLICY,
    OPERANDS,
    Pool,
    operand_rolls,
    operand_runs_on,
    runs_on,
)
from plan.diff import Change, PreviousPlan, ResourceDiff
from plan.diff_report import changes_block
from plan.manifests import parse_source
from plan.model import Plan
from plan.render import Rendering, render_plan
from plan.rendered_diff import current_sources
from tests.conftest import AWS_STACKS, SHARED_HELM, STACKS, planned, rendered, stack_config
from tests.helpers.canary_stacks import CANARY_STACKS, canary_env_and_config, canary_plan
from tests.helpers.plan_diff_helpers import edited_render
from tests.helpers.warning_stacks import mig_on_fabric_plan

POLICY = "gpu-operator/templates/clusterpolicy.yaml"
OPERATOR = "gpu-operator/templates/operator.yaml"
HEADING = "GPU-stack blast radius"
# NVIDIA/gpu-operator v26.7.0: the DaemonSet each ClusterPolicy component's asset declares
# (metadata.name of assets/state-driver/0500_daemonset.yaml, state-container-toolkit/0500,
# state-device-plugin/0500, gpu-feature-discovery/0500, state-dcgm/0400_dcgm.yml,
# state-dcgm-exporter/0800, state-mig-manager/0600, state-operator-validation/0500,
# state-node-status-exporter/0700).
OPERAND_OF = {
    "driver": "nvidia-driver-daemonset",
    "toolkit": "nvidia-container-toolkit-daemonset",
    "devicePlugin": "nvidia-device-plugin-daemonset",
    "gfd": "gpu-feature-discovery",
    "dcgm": "nvidia-dcgm",
    "dcgmExporter": "nvidia-dcgm-exporter",
    "migManager": "nvidia-mig-manager",
    "validator": "nvidia-operator-validator",
    "nodeStatusExporter": "nvidia-node-status-exporter",
}
# gpu-operator chart v26.7.0 values.yaml: devicePlugin and gfd are k8s-device-plugin v0.20.0,
# dcgmExporter 4.6.0-4.8.3-distroless, the operator nvcr.io/nvidia/gpu-operator:v26.7.0.
DEVICE_PLUGIN_VERSION = (
    "devicePlugin:\n    enabled: true\n    repository: nvcr.io/nvidia\n"
    '    image: k8s-device-plugin\n    version: "v0.20.0"'
)
DCGM_EXPORTER_VERSION = 'image: dcgm-exporter\n    version: "4.6.0-4.8.3-distroless"'
OPERATOR_IMAGE = "image: nvcr.io/nvidia/gpu-operator:v26.7.0"
# NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go: the state a failed
# reconfiguration leaves on the node.
MIG_FAILED = "nvidia.com/mig.config.state=failed"
# contract/exits.py PREEMPTED; JobSet's action for the `preempted` rule.
TRAINKIT_RESTART = (
    "restart: a multi-node job on trainkit: its other ranks exit 143: the JobSet restarts it "
    "whole from its last checkpoint (RestartJobSetAndIgnoreMaxRestarts), not counted toward "
    "maxRestarts"
)


def _shipped_previous(stack: str, sources=None) -> PreviousPlan:
    plan = planned(stack)
    return PreviousPlan([r.as_json() for r in plan.resources], plan.outputs, sources or {})


def _section(text: str) -> str:
    assert HEADING in text, f"no {HEADING} section in:\n{text[-3000:]}"
    return text[text.index(HEADING) :].split("\n\nCost change")[0]


def _block(section: str, pool: str) -> str:
    """The lines of one pool's entry."""
    start = section.find(f"  ! pool {pool}:\n")
    assert start >= 0, f"pool {pool} not in:\n{section}"
    rest = section[start + 1 :]
    end = rest.find("\n  ! pool ")
    return rest if end < 0 else rest[:end]


def _spec(obj_type: str, resources) -> list[dict]:
    return [r.inputs for r in resources if r.type == obj_type]


def queues_of(stack: str, selector: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """(ClusterQueue, flavor, LocalQueues) admitting to the pool of `selector`, read from the
    plan's Kueue objects: the flavor whose node labels are the pool's selector."""
    resources = planned(stack).resources
    kueue = "kubernetes:kueue.x-k8s.io/v1beta2:"
    flavors = [
        f["metadata"]["name"]
        for f in _spec(kueue + "ResourceFlavor", resources)
        if f["spec"].get("nodeLabels") == selector
    ]
    found = []
    for q in _spec(kueue + "ClusterQueue", resources):
        for group in q["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                if flavor["name"] in flavors:
                    local = [
                        f"{lq['metadata']['namespace']}/{lq['metadata']['name']}"
                        for lq in _spec(kueue + "LocalQueue", resources)
                        if lq["spec"]["clusterQueue"] == q["metadata"]["name"]
                    ]
                    found.append((q["metadata"]["name"], flavor["name"], local))
    return found


def _names_the_queues(stack: str, pool, block: str) -> None:
    queues = queues_of(stack, dict(pool.node_selector))
    assert queues, f"{stack} {pool.name}: no queue admits to it"
    for queue, flavor, local in queues:
        assert f"ClusterQueue {queue} (LocalQueues " in block, (stack, pool.name, queue)
        assert f"on flavor {flavor}" in block, (stack, pool.name, flavor)
        for name in local:
            assert name in block, (stack, pool.name, name)


def _rendered_change(stack: str, old: str, new: str, path: str = POLICY) -> str:
    release = f"{stack}-gpu-operator"
    earlier = edited_render(stack, release, path, old, new)
    return changes_block(
        planned(stack), _shipped_previous(stack, earlier), f"out/{stack}", rendered(stack)
    )


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(
    ("now", "earlier", "operand"),
    [
        (
            DEVICE_PLUGIN_VERSION,
            DEVICE_PLUGIN_VERSION.replace("v0.20.0", "v0.19.0"),
            "devicePlugin",
        ),
        (
            DCGM_EXPORTER_VERSION,
            DCGM_EXPORTER_VERSION.replace("4.6.0-4.8.3", "4.5.2-4.8.1"),
            "dcgmExporter",
        ),
    ],
    ids=["device-plugin", "dcgm-exporter"],
)
def test_a_cluster_policy_change_names_its_operand_on_every_pool(stack, now, earlier, operand):
    """The chart renders the ClusterPolicy, not the DaemonSet: the operator rolls its operand
    from the policy (gpu-operator v26.7.0 controllers/object_controls.go). Each pool of the
    stack is named with that DaemonSet alone, and neither evicts nor waits for a job."""
    section = _section(_rendered_change(stack, now, earlier))
    for pool in stack_config(stack).gpu_pools:
        block = _block(section, pool.name)
        assert f"DaemonSet {OPERAND_OF[operand]} rolls (ClusterPolicy spec.{operand}." in block
        others = set(OPERAND_OF.values()) - {OPERAND_OF[operand]}
        assert [o for o in others if f"DaemonSet {o} " in block] == [], block
        assert "      jobs: none disturbed" in block


def _enabled(stack: str) -> set[str]:
    """The components the stack's rendered ClusterPolicy leaves on (`enabled` absent: on)."""
    (text,) = [
        t for p, t in current_sources(rendered(stack))[f"{stack}-gpu-operator"] if p == POLICY
    ]
    (policy,) = [o for o in parse_source(text) if o["kind"] == "ClusterPolicy"]
    return {k for k in OPERAND_OF if policy["spec"].get(k, {}).get("enabled", True) is not False}


@pytest.mark.parametrize("stack", STACKS)
def test_a_new_operator_rolls_every_operand_the_policy_enables(stack):
    """A new operator image re-renders every operand from its own assets: each enabled one rolls
    on each pool (the MIG manager on pools of MIG-capable GPUs only, state_manager.go
    hasMIGCapableGPU); a disabled one is named nowhere. On AWS the AMI brings the driver
    (../shared/PINS.md: `driver.enabled: false`), so no driver DaemonSet rolls there."""
    section = _section(
        _rendered_change(
            stack, OPERATOR_IMAGE, OPERATOR_IMAGE.replace("26.7.0", "26.3.0"), OPERATOR
        )
    )
    enabled = _enabled(stack)
    if stack in AWS_STACKS:
        assert "driver" not in enabled and "nvidia-driver-daemonset" not in section
    for pool in stack_config(stack).gpu_pools:
        block = _block(section, pool.name)
        expected = {
            OPERAND_OF[k] for k in enabled if k != "migManager" or pool.mig_profiles is not None
        }
        named = {o for o in OPERAND_OF.values() if f"DaemonSet {o} rolls" in block}
        assert named == expected, (stack, pool.name)


def _with_outputs(plan: Plan, outputs: dict) -> Plan:
    return Plan(plan.stack, plan.project, plan.resources, outputs)


@pytest.mark.parametrize("stack", STACKS)
def test_mig_turned_on_for_any_pool_names_the_mig_manager_and_the_queues(stack):
    """Each pool of each stack, its nvidia.com/mig.config label set: the MIG manager
    repartitions its GPUs and fails on a node a running pod holds (mig-parted v0.15.0), the
    queues admitting there are named, and a pool with a multi-node fabric loses its multi-node
    jobs (jobs/common.py refuses them on MIG)."""
    shipped = planned(stack)
    for pool in stack_config(stack).gpu_pools:
        outputs = copy.deepcopy(shipped.outputs)
        outputs["gpu_pools"][pool.name]["node_labels"]["nvidia.com/mig.config"] = "all-1g.10gb"
        text = changes_block(_with_outputs(shipped, outputs), _shipped_previous(stack), "x")
        block = _block(_section(text), pool.name)
        assert "nvidia.com/mig.config: (none) -> all-1g.10gb" in block
        assert "the MIG manager repartitions the GPUs of each node" in block
        assert MIG_FAILED in block
        assert "      jobs: fails on a node while any of these runs there: " in block
        _names_the_queues(stack, pool, block)
        locked = f"MIG on a pool with fabric {pool.fabric}: multi-node jobs are locked out"
        assert (locked in block) == (pool.fabric in ("efa", "infiniband", "roce")), block
        on_aws = stack_config(stack).provider == "aws"
        assert ("(UpdateNodegroupConfig)" in block) == on_aws, block


def _group_changed(stack: str, name: str, path: str, value) -> PreviousPlan:
    previous = _shipped_previous(stack)
    earlier = copy.deepcopy(previous.resources)
    (group,) = [
        r for r in earlier if r["type"] == "aws:eks/nodeGroup:NodeGroup" and r["name"] == name
    ]
    group["inputs"][path] = value
    return dataclasses.replace(previous, resources=earlier)


@pytest.mark.parametrize("stack", AWS_STACKS)
@pytest.mark.parametrize(
    ("path", "earlier", "says", "then"),
    [
        ("releaseVersion", "1.30.0-20240101", "rolls every node", "every node is replaced"),
        ("version", "1.30", "rolls every node", "every node is replaced"),
        # terraform-provider-aws internal/service/eks/node_group.go: instance_types ForceNew.
        ("instanceTypes", ["g4dn.xlarge"], "is replaced", "no node of this group until"),
    ],
    ids=["ami", "kubernetes-version", "instance-types"],
)
def test_a_gpu_node_group_roll_evicts_the_pools_jobs_with_their_restart(
    stack, path, earlier, says, then
):
    """An AMI (releaseVersion) or Kubernetes version change of a GPU group replaces every node,
    draining it (EKS User Guide, "Understand each phase of node updates"), and a new instance
    type replaces the group: its pool's queues are named, with the restart the failure policy
    gives; no other pool is named. Where the stack has a self-test image its canary group takes
    the change first, then the group."""
    cfg = stack_config(stack)
    for pool in cfg.gpu_pools:
        group = f"{stack}-{pool.name}"
        text = changes_block(planned(stack), _group_changed(stack, group, path, earlier), "x")
        section = _section(text)
        block = _block(section, pool.name)
        assert f"node group {group} {says}: " in block
        assert then in block
        assert "      jobs: evicts any running: " in block
        _names_the_queues(stack, pool, block)
        assert TRAINKIT_RESTART in block
        assert section.count("  ! pool ") == 1, section


def test_turning_node_join_on_taints_every_serving_node():
    """selftest.node_join on a running AWS stack: the group's new taint and label reach its
    nodes through UpdateNodegroupConfig (EKS API Reference: "The Kubernetes taints to be applied
    to the nodes in the node group after the update"), so every node is tainted NoSchedule with
    its jobs still running (contract/node_join.py). Staging, whose stack names no self-test
    image, runs without the check."""
    shipped = planned("staging")
    taint = {
        "effect": "NO_SCHEDULE",
        "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
        "value": "pending",
    }
    resources = [
        dataclasses.replace(r, inputs={**r.inputs, "taints": [*r.inputs["taints"], taint]})
        if r.name == "staging-a100-efa" and r.type == "aws:eks/nodeGroup:NodeGroup"
        else r
        for r in shipped.resources
    ]
    current = Plan(shipped.stack, shipped.project, resources, shipped.outputs)
    block = _block(_section(changes_block(current, _shipped_previous("staging"), "x")), "a100-efa")
    assert "selftest.node_join turned on: EKS applies the node group's new taint and label" in block
    assert (
        "every serving node becomes tainted NoSchedule (running pods stay; no new pod lands)"
        in block
    )


def test_an_unchanged_plan_prints_no_blast_radius():
    assert HEADING not in changes_block(planned("prod"), _shipped_previous("prod"), "x")


@functools.cache
def _mig_rendered() -> Rendering:
    return render_plan(mig_on_fabric_plan(), (SHARED_HELM,))


def test_staging_turning_mig_on_prints_the_section():
    """The whole section for one change, literal: staging's EFA group of A100 40 GB GPUs cut
    into MIG slices (tests/helpers/warning_stacks.mig_on_fabric)."""
    plan = mig_on_fabric_plan()
    previous = _shipped_previous("staging", current_sources(rendered("staging")))
    text = changes_block(plan, previous, "out/staging", _mig_rendered())
    assert _section(text) == "\n".join(
        [
            "GPU-stack blast radius (per pool: what the changes do to its nodes, the jobs that "
            "may run there, and how an evicted one restarts):",
            "  ! pool a100-efa:",
            "      - nvidia.com/mig.config: (none) -> all-1g.5gb: EKS applies the node group's "
            "new labels to its existing nodes in place (UpdateNodegroupConfig); the MIG manager "
            "repartitions the GPUs of each node: it stops the node's device plugin, GPU feature "
            "discovery and DCGM exporter meanwhile and evicts no pod, but a GPU that a running "
            "pod holds fails the repartition, leaving the node on its old layout with "
            "nvidia.com/mig.config.state=failed: let the pool's jobs end (or drain it) first "
            "(NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go)",
            "      - MIG on a pool with fabric efa: multi-node jobs are locked out (its GPUs are "
            "cut into MIG slices; distributed jobs train on whole GPUs): its efa fabric serves "
            "no job (plan warning mig-fabric-pool)",
            "      - DaemonSet nvidia-mig-manager rolls (ClusterPolicy "
            "spec.migManager.config.name): the new pod applies the node's nvidia.com/mig.config "
            "again, which is a no-op where it is applied already; running pods are untouched "
            "[gpu-operator assets/state-mig-manager/0600_daemonset.yaml]",
            "      jobs: fails on a node while any of these runs there: workloads admitted to "
            "ClusterQueue shared (LocalQueues training/default) on flavor a100-efa",
        ]
    )
    assert json.dumps(plan.warnings).count("[warning mig-fabric-pool]") == 1


def test_a_driver_change_waits_for_training_where_the_operator_runs_the_driver():
    """Where the operator installs the driver (an existing cluster's nodes without one), a
    ClusterPolicy spec.driver change is the upgrade controller's: one node at a time, cordoned,
    its training pods waited for, then its other GPU pods deleted (../shared/PINS.md "Driver
    upgrades"); where `driver.enabled: false` (the AL2023 NVIDIA AMI) nothing rolls."""
    change = ResourceDiff(
        "update",
        CLUSTER_POLICY,
        "ClusterPolicy cluster-policy (x-gpu-operator)",
        False,
        (Change("spec.driver.version", "580.95.05", "595.91.07"),),
    )
    [(operand, why)] = operand_rolls([change], {"spec": {"driver": {"enabled": True}}})
    assert (operand.daemonset, why) == (
        "nvidia-driver-daemonset",
        "ClusterPolicy spec.driver.version",
    )
    assert operand.effect.startswith(
        "the upgrade controller takes 1 node at a time: cordons it, waits for its pods "
        "gpu-platform/workload=training to end (no time limit), then deletes its other GPU pods"
    )
    assert operand_rolls([change], {"spec": {"driver": {"enabled": False}}}) == []


def test_a_chart_daemonset_that_rolls_is_named_on_the_pools_it_tolerates():
    """node-feature-discovery's worker (rendered by the gpu-operator chart, tolerating the GPU
    taint: components/data/gpu_operator.py) rolls when its ConfigMap's checksum changes: named
    on every pool of prod, with no job disturbed."""
    path = "gpu-operator/charts/node-feature-discovery/templates/worker.yaml"
    (text,) = [t for p, t in current_sources(rendered("prod"))["prod-gpu-operator"] if p == path]
    checksum = re.search(r"checksum/config: (\w+)", text).group(1)
    earlier = edited_render("prod", "prod-gpu-operator", path, checksum, "0000")
    text = changes_block(planned("prod"), _shipped_previous("prod", earlier), "x", rendered("prod"))
    section = _section(text)
    for pool in stack_config("prod").gpu_pools:
        block = _block(section, pool.name)
        assert "DaemonSet gpu-operator/gpu-operator-node-feature-discovery-worker rolls" in block
        assert "      jobs: none disturbed" in block


def test_a_changed_mig_layout_reconfigures_the_pools_that_name_it():
    """The label stays, the layout it names changes in the MIG manager's ConfigMap (the chart's
    templates/mig_config.yaml): the MIG manager repartitions that pool's GPUs as well."""
    plan = mig_on_fabric_plan()
    sources = dict(current_sources(_mig_rendered()))
    files = dict(sources["staging-gpu-operator"])
    path = "gpu-operator/templates/mig_config.yaml"
    assert "          1g.5gb: 7\n" in files[path]
    files[path] = files[path].replace("          1g.5gb: 7\n", "          1g.5gb: 6\n", 1)
    sources["staging-gpu-operator"] = tuple(files.items())
    previous = PreviousPlan([r.as_json() for r in plan.resources], plan.outputs, sources)
    block = _block(_section(changes_block(plan, previous, "x", _mig_rendered())), "a100-efa")
    assert "MIG layout all-1g.5gb changed in the MIG manager's ConfigMap" in block
    assert MIG_FAILED in block


@pytest.mark.parametrize("stack", CANARY_STACKS)
def test_a_pool_that_rolls_through_a_canary_names_its_own_group_and_the_canary_first(stack):
    """A pool's canary group carries the pool's labels too: the pool's entry must name the
    pool's own node group (whose nodes run its jobs), and say that the change reaches it only
    after the canary's Job passed (components/selftest/canary.py; docs/operations.md, "Rolling a
    GPU-stack change")."""
    env, cfg = canary_env_and_config(stack)
    plan = canary_plan(stack)
    earlier = copy.deepcopy([r.as_json() for r in plan.resources])
    for r in earlier:
        if r["type"] == "aws:eks/nodeGroup:NodeGroup":
            r["inputs"]["releaseVersion"] = "1.30.0-20240101"
    previous = PreviousPlan(earlier, plan.outputs, {})
    section = _section(changes_block(plan, previous, "x"))
    pools = canary_pools(cfg)
    assert pools, stack
    for pool in pools:
        block = _block(section, pool.name)
        assert f"node group {env}-{pool.name} rolls every node" in block, block
        assert f"node group {env}-{pool.name}-canary" not in block, block
        assert f"Job canary-{pool.name}" in block, block
    assert section.count("  ! pool ") == len(cfg.gpu_pools), section


def _pool(**labels: str) -> Pool:
    return Pool("p", labels, (), {}, "efa", True, "g")


def test_a_pods_required_node_affinity_keeps_it_off_a_pool_its_terms_rule_out():
    """Kubernetes "Assigning Pods to Nodes": required terms are ORed, a term's expressions
    ANDed; a label the pool does not declare may still be written at runtime."""
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "group", "operator": "In", "values": ["a"]}]},
                    {"matchExpressions": [{"key": "group", "operator": "In", "values": ["b"]}]},
                ]
            }
        }
    }
    pod = {"affinity": affinity}
    assert runs_on(pod, _pool(group="a")) and runs_on(pod, _pool(group="b"))
    assert not runs_on(pod, _pool(group="c"))
    assert runs_on(pod, _pool())  # the label may come at runtime
    gone = {"matchExpressions": [{"key": "group", "operator": "DoesNotExist"}]}
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ] = [gone]
    assert not runs_on(pod, _pool(group="a")) and runs_on(pod, _pool())


def test_the_device_plugin_never_rolls_on_a_pool_that_keeps_it_off():
    """gpu-operator v26.7.0 assets/state-device-plugin/0500_daemonset.yaml selects
    nvidia.com/gpu.deploy.device-plugin=true; a DRA pool's nodes carry it "false"."""
    (plugin,) = [o for o in OPERANDS if o.daemonset == "nvidia-device-plugin-daemonset"]
    (exporter,) = [o for o in OPERANDS if o.daemonset == "nvidia-dcgm-exporter"]
    off = _pool(**{"nvidia.com/gpu.deploy.device-plugin": "false"})
    assert not operand_runs_on(plugin, off) and operand_runs_on(plugin, _pool())
    assert operand_runs_on(exporter, off)
