"""What a GPU-stack change disturbs, pool by pool: the GPU Operator's DaemonSets that roll, the
nodes that are replaced or reconfigured, the jobs that may be running there, and the restart an
evicted one takes. A platform engineer reads it before `pulumi up`.

The gpu-operator chart renders the ClusterPolicy and the operator, not the DaemonSets on the
GPU nodes: the operator creates those from its own assets at runtime (NVIDIA/gpu-operator
v26.7.0 `assets/state-*/` and `assets/gpu-feature-discovery/`, one state per operand added in
`controllers/state_manager.go` init; each DaemonSet rewritten from its part of the ClusterPolicy
by `controllers/object_controls.go` Transform<Operand>). So a changed ClusterPolicy path is
mapped to the operands it rolls (OPERANDS); DaemonSets a chart or the program declares roll as
their own pod template says (plan/knock_on.py own_rolls).

The plan cannot know what runs: every job named here is "any running" one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from components.data.gpu_operator import DRIVER_UPGRADE_POLICY, MIG_PARTED_CONFIGMAP
from components.scheduling.failure_policy import RESTARTS_AFTER_EVICTION
from components.selftest.canary import job_name as canary_job_name
from components.vocabulary import CANARY_LABEL
from contract import node_join as join
from model.config.gpu_operator import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    DEVICE_PLUGIN_OFF,
    MIG_CONFIG_LABEL,
)
from model.config.pools import MIG_TAKES_NO_DISTRIBUTED_JOB
from model.config.scheduling import MULTI_NODE_FABRICS
from plan.diff import PreviousPlan, ResourceDiff
from plan.knock_on import NODE_GROUP, KnockOn, own_rolls
from plan.manifests import Source, outline_source, parse_source
from plan.replacements import GONE_UNTIL_CREATED, path_pattern

CLUSTER_POLICY = "kubernetes:nvidia.com/v1:ClusterPolicy"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
_FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
_CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
_LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
_CRON_JOB = "kubernetes:batch/v1:CronJob"
_JOB = "kubernetes:batch/v1:Job"
# The operator's own Deployment (the gpu-operator chart's templates/operator.yaml).
_OPERATOR = "gpu-operator"
# What happens to a pool's jobs: they are evicted (and restart), waited for, or in the way.
EVICTED, WAITED_FOR, IN_THE_WAY = "evicted", "waited for", "in the way"
_VERB = {
    EVICTED: "evicts any running",
    WAITED_FOR: "waits for any running",
    IN_THE_WAY: "fails on a node while any of these runs there",
}

_KEEP = "running pods are untouched"
_UPGRADE = DRIVER_UPGRADE_POLICY


@dataclass(frozen=True)
class Operand:
    """One DaemonSet the GPU Operator creates on GPU nodes, and what its roll does to them."""

    daemonset: str
    # The ClusterPolicy spec key whose `enabled: false` leaves it out.
    component: str
    # ClusterPolicy spec paths whose change rolls it (the Transform<Operand> that reads them).
    paths: tuple[str, ...]
    # The operator's asset it is made from (NVIDIA/gpu-operator v26.7.0).
    asset: str
    effect: str
    jobs: str = ""  # EVICTED, WAITED_FOR, IN_THE_WAY or "" (none disturbed)
    # Where it runs: every GPU pool, or only pools of MIG-capable GPUs (the operator labels
    # those nodes nvidia.com/gpu.deploy.mig-manager: state_manager.go addGPUStateLabels).
    mig_capable_only: bool = False
    # The deploy label a pool's nodes may carry `false` to keep it off them, where the platform
    # sets one (DRA pools: model/config/gpu_operator.py DEVICE_PLUGIN_DEPLOY_LABEL).
    deploy_label: str | None = None


# Every operand of the container workload config (state_manager.go gpuStateLabels
# "container", plus the MIG manager), each rewritten from its part of the ClusterPolicy by
# object_controls.go Transform<Operand>; spec.mig.strategy reaches the device plugin, GFD and
# the validator (applyMIGConfiguration, TransformValidatorComponent: MIG_STRATEGY), and
# spec.daemonsets (tolerations, priority class, update strategy: applyCommonDaemonsetConfig,
# applyUpdateStrategyConfig) every one.
OPERANDS: tuple[Operand, ...] = (
    # ../shared/PINS.md "Driver upgrades": the upgrade controller acts on the operator's driver
    # pods alone, as the platform's policy sets it.
    Operand(
        "nvidia-driver-daemonset",
        "driver",
        ("spec.driver",),
        "assets/state-driver/0500_daemonset.yaml",
        f"the upgrade controller takes {_UPGRADE['maxParallelUpgrades']} node at a time: cordons "
        f"it, waits for its pods {_UPGRADE['waitForCompletion']['podSelector']} to end (no time "
        "limit), then deletes its other GPU pods and reloads the driver (driver.upgradePolicy, "
        "components/data/gpu_operator.py DRIVER_UPGRADE_POLICY)",
        WAITED_FOR,
    ),
    # The node's other operands wait for it: their toolkit-validation init container waits for
    # /run/nvidia/validations/toolkit-ready (assets/state-device-plugin/0500_daemonset.yaml).
    Operand(
        "nvidia-container-toolkit-daemonset",
        "toolkit",
        ("spec.toolkit",),
        "assets/state-container-toolkit/0500_daemonset.yaml",
        "it installs the toolkit and configures the container runtime again; the node's GPU "
        "operands wait for it",
    ),
    # The kubelet keeps the devices it allocated in its checkpoint across a plugin's restart
    # (kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go, checkpoint; Kubernetes
    # docs "Device Plugins": a plugin registers with the kubelet, which then advertises its
    # resources).
    Operand(
        "nvidia-device-plugin-daemonset",
        "devicePlugin",
        ("spec.devicePlugin", "spec.mig.strategy"),
        "assets/state-device-plugin/0500_daemonset.yaml",
        "running pods keep the devices they hold; a new GPU pod waits until the new plugin "
        "registers with the kubelet",
        deploy_label=DEVICE_PLUGIN_DEPLOY_LABEL,
    ),
    Operand(
        "gpu-feature-discovery",
        "gfd",
        ("spec.gfd", "spec.mig.strategy"),
        "assets/gpu-feature-discovery/0500_daemonset.yaml",
        f"the node's nvidia.com/gpu.* labels are written again; {_KEEP}",
    ),
    Operand(
        "nvidia-dcgm",
        "dcgm",
        ("spec.dcgm",),
        "assets/state-dcgm/0400_dcgm.yml",
        f"a gap in the node's GPU metrics and health checks; {_KEEP}",
    ),
    Operand(
        "nvidia-dcgm-exporter",
        "dcgmExporter",
        ("spec.dcgmExporter",),
        "assets/state-dcgm-exporter/0800_daemonset.yaml",
        f"a gap in the node's GPU metrics (and the alerts on them); {_KEEP}",
    ),
    # NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go Run: isConfigAlreadyApplied
    # ends the run with state success and nothing touched.
    Operand(
        "nvidia-mig-manager",
        "migManager",
        ("spec.migManager",),
        "assets/state-mig-manager/0600_daemonset.yaml",
        "the new pod applies the node's nvidia.com/mig.config again, which is a no-op where it "
        f"is applied already; {_KEEP}",
        mig_capable_only=True,
    ),
    Operand(
        "nvidia-operator-validator",
        "validator",
        ("spec.validator", "spec.mig.strategy"),
        "assets/state-operator-validation/0500_daemonset.yaml",
        f"the node's validations run again; {_KEEP}",
    ),
    Operand(
        "nvidia-node-status-exporter",
        "nodeStatusExporter",
        ("spec.nodeStatusExporter",),
        "assets/state-node-status-exporter/0700_daemonset.yaml",
        f"a gap in the node's status metrics; {_KEEP}",
    ),
)
_EVERY_OPERAND = ("spec.daemonsets",)

# NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go, Reconfigure.Run: on a new
# nvidia.com/mig.config the MIG manager pauses the node's device plugin, GFD, DCGM and its
# exporter (shutdownKubernetesGPUClients) and evicts no pod; the mode change (mig-parted apply
# --mode-only) and the new layout (apply) fail on a GPU a running process holds, which sets
# nvidia.com/mig.config.state=failed (setState) unless WITH_REBOOT, false by default
# (cmd/nvidia-mig-manager/main.go --with-reboot) and not set by the platform, reboots the node.
MIG_RECONFIGURES = (
    "the MIG manager repartitions the GPUs of each node: it stops the node's device plugin, GPU "
    "feature discovery and DCGM exporter meanwhile and evicts no pod, but a GPU that a running "
    "pod holds fails the repartition, leaving the node on its old layout with "
    "nvidia.com/mig.config.state=failed: let the pool's jobs end (or drain it) first "
    "(NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go)"
)
# EKS API Reference, UpdateNodegroupConfig: "labels: The Kubernetes labels to apply to the nodes
# in the node group after the update", "taints: The Kubernetes taints to be applied to the nodes
# in the node group after the update"; terraform-provider-aws internal/service/eks/node_group.go
# resourceNodeGroupUpdate sends a labels or taints change with UpdateNodegroupConfig, which
# replaces no node.
EKS_RELABELS = (
    "EKS applies the node group's new labels to its existing nodes in place (UpdateNodegroupConfig)"
)
EKS_RETAINTS = (
    "EKS applies the node group's new taint and label to its existing nodes in place "
    "(UpdateNodegroupConfig)"
)
# An existing cluster's nodes are the admin's: the label takes effect when set on them.
ADMIN_RELABELS = "takes effect on each node as the admin sets the label on it (docs/gpu-nodes.md)"
# NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go: the MIG manager reconfigures when
# the node's label changes (ContinuouslySyncMigConfigChanges watches the node), and once when it
# starts; it does not watch its ConfigMap, and the operator puts no hash of it on the pod
# (gpu-operator v26.7.0 object_controls.go TransformMIGManager).
LAYOUT_CHANGED = (
    "the label is unchanged, so each node takes the new layout when its MIG manager pod next "
    "starts (it watches the label, not the ConfigMap)"
)
# EKS User Guide, "Understand each phase of node updates": the upgrade phase drains each old
# node (the eviction API, PodDisruptionBudgets respected) and terminates it.
NODE_ROLL = (
    "every node is replaced by a new one: EKS drains each old node through the eviction API, "
    "updateConfig.maxUnavailable at a time"
)


@dataclass(frozen=True)
class Pool:
    """A GPU pool as the plan declares it (the `gpu_pools` output, and its node group on AWS)."""

    name: str
    labels: dict[str, str]  # what its nodes carry: the node group's labels, or the selector
    taints: tuple[tuple[str, str], ...]  # (key, effect) of its nodes' taints
    node_labels: dict[str, str]  # the GPU Operator's labels (gpu_pools output)
    fabric: str
    mig_capable: bool
    node_group: str | None  # the EKS managed node group's name, on AWS
    # The group a change of its nodes' image rolls through first (components/selftest/canary.py)
    # and the Job that tests it there; None where the pool has no canary.
    canary: tuple[str, str] | None = None


@dataclass(frozen=True)
class Disturbance:
    pool: str
    cause: str
    effect: str
    jobs: str  # EVICTED, WAITED_FOR, IN_THE_WAY or ""


def _by_type(resources: Iterable[dict[str, Any]], token: str) -> list[dict[str, Any]]:
    return [r for r in resources if r["type"] == token]


def _taint_effect(effect: str) -> str:
    """EKS spells NO_SCHEDULE where Kubernetes spells NoSchedule."""
    return "".join(part.capitalize() for part in effect.split("_")) if "_" in effect else effect


def pools_of(resources: list[dict[str, Any]], outputs: dict[str, Any]) -> list[Pool]:
    """The plan's GPU pools: each with its node group where the plan declares one (the group
    whose labels carry the pool's selector), else its selector alone (an existing cluster)."""
    # A canary group carries its pool's labels too; only the pool's own group runs its jobs.
    all_groups = _by_type(resources, NODE_GROUP)
    groups = [g for g in all_groups if CANARY_LABEL not in (g["inputs"].get("labels") or {})]
    canaries = {
        g["inputs"]["labels"][CANARY_LABEL]: g["name"] for g in all_groups if g not in groups
    }
    canary_jobs = {
        j["inputs"]["metadata"]["name"]
        for j in _by_type(resources, _JOB)
        if CANARY_LABEL in (j["inputs"]["spec"]["template"]["spec"].get("nodeSelector") or {})
    }
    flavors = {
        f["inputs"]["metadata"]["name"]: f["inputs"]["spec"] for f in _by_type(resources, _FLAVOR)
    }
    found = []
    for name, report in (outputs.get("gpu_pools") or {}).items():
        selector = report.get("node_selector", {})
        group = next(
            (
                g
                for g in groups
                if selector and selector.items() <= (g["inputs"].get("labels") or {}).items()
            ),
            None,
        )
        if group is not None:
            labels = dict(group["inputs"]["labels"])
            taints = tuple(
                (t["key"], _taint_effect(t["effect"])) for t in group["inputs"].get("taints") or []
            )
        else:
            labels = dict(selector)
            taints = tuple(
                (t["key"], t["effect"]) for t in flavors.get(name, {}).get("nodeTaints", [])
            )
        found.append(
            Pool(
                name,
                labels,
                taints,
                dict(report.get("node_labels", {})),
                report.get("fabric", "tcp"),
                bool(report.get("mig_capable")),
                group["name"] if group is not None else None,
                (canaries[name], canary_job_name(name))
                if name in canaries and canary_job_name(name) in canary_jobs
                else None,
            )
        )
    return found


def _contradicts(requirement: dict[str, Any], labels: dict[str, str]) -> bool:
    """A node selector requirement the pool's known labels rule out (Kubernetes "Assigning Pods
    to Nodes", node affinity operators). A key the pool does not declare may still be written at
    runtime (the GPU Operator's and NFD's labels), so it rules nothing out but DoesNotExist."""
    key, operator = requirement["key"], requirement["operator"]
    if key not in labels:
        return False
    value, values = labels[key], requirement.get("values") or []
    return {
        "In": value not in values,
        "NotIn": value in values,
        "DoesNotExist": True,
    }.get(operator, False)


def _affinity_allows(pod: dict[str, Any], labels: dict[str, str]) -> bool:
    """The pod's required node affinity: one of its terms (ORed) not ruled out, each term's
    expressions ANDed."""
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(
        not any(_contradicts(r, labels) for r in term.get("matchExpressions") or [])
        for term in terms
    )


def operand_runs_on(operand: Operand, pool: Pool) -> bool:
    """Whether the GPU Operator runs the operand on the pool's nodes: the MIG manager on
    MIG-capable GPUs only, and none where the pool's nodes carry its deploy label `false`."""
    if operand.mig_capable_only and not pool.mig_capable:
        return False
    return (
        operand.deploy_label is None or pool.labels.get(operand.deploy_label) != DEVICE_PLUGIN_OFF
    )


def runs_on(pod: dict[str, Any], pool: Pool) -> bool:
    """Whether a pod spec may land on the pool's nodes: its node selector does not contradict
    their labels, and it tolerates their taints (the node-join startup taint aside: a serving
    node has lost it)."""
    selector = pod.get("nodeSelector") or {}
    if any(k in pool.labels and pool.labels[k] != v for k, v in selector.items()):
        return False
    if not _affinity_allows(pod, pool.labels):
        return False
    tolerations = pod.get("tolerations") or []

    def tolerated(key: str, effect: str) -> bool:
        return any(
            t.get("effect") in (effect, None, "")
            and (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            for t in tolerations
        )

    return all(tolerated(k, e) for k, e in pool.taints if k != join.TAINT_KEY)


# ------------------------------------------------------------------ what the changes disturb


def _rendered_name(d: ResourceDiff) -> tuple[str, str]:
    """A rendered object's kind and name, from `Kind namespace/name (release)`."""
    kind, _, rest = d.name.partition(" ")
    return kind, rest.rpartition(" (")[0].rpartition("/")[2]


def component_enabled(policy: dict[str, Any], component: str) -> bool:
    return (policy.get("spec", {}).get(component) or {}).get("enabled", True) is not False


def _cluster_policy(current: dict[str, tuple[Source, ...]]) -> dict[str, Any]:
    for sources in current.values():
        for _, text in sources:
            if "kind: ClusterPolicy" in text:
                for obj in outline_source(text):
                    if obj["kind"] == "ClusterPolicy":
                        return obj
    return {}


def operand_rolls(
    rendered: list[ResourceDiff], policy: dict[str, Any]
) -> list[tuple[Operand, str]]:
    """The operands a rendered change rolls, each with why: a changed ClusterPolicy path of its
    own, spec.daemonsets, or a new operator image (the operator renders every operand from
    its own assets)."""
    found: dict[str, tuple[Operand, str]] = {}
    for d in rendered:
        if d.action != "update":
            continue
        paths = [c.path for c in d.changes]
        if d.type == CLUSTER_POLICY:
            for operand in OPERANDS:
                own = [
                    p
                    for p in paths
                    if any(path_pattern(r).match(p) for r in (*operand.paths, *_EVERY_OPERAND))
                    and not p.endswith(".enabled")
                ]
                if own and component_enabled(policy, operand.component):
                    found.setdefault(
                        operand.daemonset, (operand, f"ClusterPolicy {', '.join(own)}")
                    )
        elif _rendered_name(d) == ("Deployment", _OPERATOR):
            image = [p for p in paths if p.endswith(".image")]
            if image:
                for operand in OPERANDS:
                    if component_enabled(policy, operand.component):
                        found.setdefault(operand.daemonset, (operand, "a new operator image"))
    return list(found.values())


def _pod_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec", {})
    template = spec.get("jobTemplate", {}).get("spec", spec).get("template", {})
    return template.get("spec", {})


def _daemonsets(
    rolls: list[KnockOn], resources: list[dict[str, Any]], current: dict[str, tuple[Source, ...]]
) -> list[tuple[str, dict[str, Any]]]:
    """The DaemonSets among the rolls with their pod specs: the program's own, or a chart's."""
    own = {r["name"]: r["inputs"] for r in _by_type(resources, DAEMON_SET)}
    found = []
    for k in rolls:
        if k.type != DAEMON_SET:
            continue
        if k.name in own:
            meta = own[k.name]["metadata"]
            found.append((f"{meta['namespace']}/{meta['name']}", own[k.name]))
            continue
        label, _, release = k.name.removeprefix("DaemonSet ").rpartition(" (")
        name = label.rpartition("/")[2]
        for _, text in current.get(release.rstrip(")"), ()):
            for obj in parse_source(text):
                meta = obj.get("metadata", {})
                if obj["kind"] == "DaemonSet" and meta.get("name") == name:
                    found.append((label, obj))
    return found


def _mig_layouts(text: Any) -> dict[str, Any]:
    try:
        return (yaml.safe_load(text) or {}).get("mig-configs", {}) if isinstance(text, str) else {}
    except yaml.YAMLError:
        return {}


def changed_mig_layouts(rendered: list[ResourceDiff]) -> set[str]:
    """The MIG manager's layouts whose entry changed in its ConfigMap."""
    changed = set()
    for d in rendered:
        if d.action == "update" and _rendered_name(d) == ("ConfigMap", MIG_PARTED_CONFIGMAP):
            for c in d.changes:
                before, after = _mig_layouts(c.before), _mig_layouts(c.after)
                changed |= {
                    k for k in before.keys() | after.keys() if before.get(k) != after.get(k)
                }
    return changed


def _node_group_changes(
    pool: Pool, diffs: list[ResourceDiff], effects: list[KnockOn]
) -> list[Disturbance]:
    """The pool's node group replaced, or rolled (a new AMI, version or launch template)."""
    mine = [k.effect for k in effects if k.type == NODE_GROUP and k.name == pool.node_group]
    mine += [
        "is replaced"
        for d in diffs
        if (d.type, d.name, d.action) == (NODE_GROUP, pool.node_group, "replace")
    ]
    if "is replaced" in mine:
        cause, effect = "is replaced", GONE_UNTIL_CREATED[NODE_GROUP]
    elif "rolls every node" in mine:
        cause, effect = "rolls every node", NODE_ROLL
    else:
        return []
    if pool.canary is not None:
        group, job = pool.canary
        effect = (
            f"only once its canary passed: {group} takes the change first, and Job {job} tests "
            "one new node against the pool's baseline; a failure stops `pulumi up` before this "
            f'group (docs/operations.md, "Rolling a GPU-stack change"). Then {effect}'
        )
    return [Disturbance(pool.name, f"node group {pool.node_group} {cause}", effect, EVICTED)]


def _mig_changes(pool: Pool, before: str | None, layouts: set[str]) -> list[Disturbance]:
    """The pool's MIG layout changed: its label (`before` the earlier plan's), or the layout
    the label names; and MIG turned on where a fabric then serves no job."""
    after = pool.node_labels.get(MIG_CONFIG_LABEL)
    if before == after and after not in layouts:
        return []
    if before == after:
        cause, how = f"MIG layout {after} changed in the MIG manager's ConfigMap", LAYOUT_CHANGED
    else:
        cause = f"{MIG_CONFIG_LABEL}: {before or '(none)'} -> {after or '(none)'}"
        how = EKS_RELABELS if pool.node_group else ADMIN_RELABELS
    found = [Disturbance(pool.name, cause, f"{how}; {MIG_RECONFIGURES}", IN_THE_WAY)]
    if after and not before and pool.fabric in MULTI_NODE_FABRICS:
        found.append(
            Disturbance(
                pool.name,
                f"MIG on a pool with fabric {pool.fabric}",
                f"multi-node jobs are locked out ({MIG_TAKES_NO_DISTRIBUTED_JOB}): its "
                f"{pool.fabric} fabric serves no job (plan warning mig-fabric-pool)",
                "",
            )
        )
    return found


def _node_join_turned_on(pool: Pool, earlier_group: dict[str, Any]) -> list[Disturbance]:
    """The pool's running node group takes the node-join startup taint."""
    had = {t["key"] for t in earlier_group.get("taints") or []}
    if not earlier_group or join.TAINT_KEY in had or join.TAINT_KEY not in dict(pool.taints):
        return []
    return [
        Disturbance(
            pool.name,
            "selftest.node_join turned on",
            f"{EKS_RETAINTS}: every serving node becomes tainted {join.TAINT_EFFECT} (running "
            f"pods stay; no new pod lands) and labelled {join.LABEL}={join.PENDING}, so the "
            "node-join DaemonSet tests each node as its jobs end",
            "",
        )
    ]


def disturbances(
    pools: list[Pool],
    previous: PreviousPlan,
    current: list[dict[str, Any]],
    diffs: list[ResourceDiff],
    effects: list[KnockOn],
    rendered: list[ResourceDiff],
    sources: dict[str, tuple[Source, ...]],
) -> list[Disturbance]:
    """Everything the changes do to each pool's nodes, in a fixed order: the node group, the
    MIG manager, the node-join taint, the operator's DaemonSets, the other DaemonSets."""
    found: list[Disturbance] = []
    earlier_pools = previous.outputs.get("gpu_pools") or {}
    earlier_groups = {g["name"]: g["inputs"] for g in _by_type(previous.resources, NODE_GROUP)}
    layouts = changed_mig_layouts(rendered)
    for pool in pools:
        found += _node_group_changes(pool, diffs, effects)
        if pool.name in earlier_pools:  # a new pool runs nothing yet
            before = earlier_pools[pool.name].get("node_labels", {}).get(MIG_CONFIG_LABEL)
            found += _mig_changes(pool, before, layouts)
            found += _node_join_turned_on(pool, earlier_groups.get(pool.node_group or "", {}))
    for operand, why in operand_rolls(rendered, _cluster_policy(sources)):
        found += [
            Disturbance(
                pool.name,
                f"DaemonSet {operand.daemonset} rolls ({why})",
                f"{operand.effect} [gpu-operator {operand.asset}]",
                operand.jobs,
            )
            for pool in pools
            if operand_runs_on(operand, pool)
        ]
    for label, obj in _daemonsets([*effects, *own_rolls(rendered)], current, sources):
        found += [
            Disturbance(
                pool.name, f"DaemonSet {label} rolls", f"its pod on each node restarts; {_KEEP}", ""
            )
            for pool in pools
            if runs_on(_pod_of(obj), pool)
        ]
    return found


# ------------------------------------------------------------------ who may be running there


def queues_on(pool: Pool, resources: list[dict[str, Any]]) -> list[str]:
    """`ClusterQueue X (LocalQueues ns/a, ns/b) on flavor F` for each queue that admits
    workloads to the pool: through a flavor whose node labels hold the pool's."""
    flavors = []
    for f in _by_type(resources, _FLAVOR):
        labels = f["inputs"]["spec"].get("nodeLabels") or {}
        if labels and labels.items() <= pool.labels.items():
            flavors.append(f["inputs"]["metadata"]["name"])
    local = {}
    for q in _by_type(resources, _LOCAL_QUEUE):
        meta = q["inputs"]["metadata"]
        local.setdefault(q["inputs"]["spec"]["clusterQueue"], []).append(
            f"{meta['namespace']}/{meta['name']}"
        )
    found = []
    for q in _by_type(resources, _CLUSTER_QUEUE):
        name = q["inputs"]["metadata"]["name"]
        listed = {
            f["name"]
            for g in q["inputs"]["spec"].get("resourceGroups", [])
            for f in g.get("flavors", [])
        }
        for flavor in flavors:
            if flavor in listed:
                queues = ", ".join(sorted(local.get(name, []))) or "none"
                found.append(f"ClusterQueue {name} (LocalQueues {queues}) on flavor {flavor}")
    return sorted(found)


def platform_jobs_on(pool: Pool, resources: list[dict[str, Any]]) -> list[str]:
    """The platform's own GPU jobs on the pool: CronJobs and DaemonSets whose pods select its
    nodes (the self-test's schedule, the node-join check)."""
    found = []
    for token, kind in ((_CRON_JOB, "CronJob"), (DAEMON_SET, "DaemonSet")):
        for r in _by_type(resources, token):
            pod = _pod_of(r["inputs"])
            selector = pod.get("nodeSelector") or {}
            if (
                selector
                and pool.labels
                and all(pool.labels.get(k, v) == v for k, v in selector.items())
                and any(pool.labels.get(k) == v for k, v in selector.items())
            ):
                meta = r["inputs"]["metadata"]
                found.append(f"{kind} {meta['namespace']}/{meta['name']}")
    return sorted(found)


# ------------------------------------------------------------------------------ the section


def format_blast_radius(
    found: list[Disturbance], pools: list[Pool], resources: list[dict[str, Any]]
) -> list[str]:
    """Per pool: each disturbance, then who may be running there and how an evicted job
    restarts."""
    if not found:
        return []
    lines = [
        "GPU-stack blast radius (per pool: what the changes do to its nodes, the jobs that may "
        "run there, and how an evicted one restarts):"
    ]
    for pool in pools:
        mine = [d for d in found if d.pool == pool.name]
        if not mine:
            continue
        lines.append(f"  ! pool {pool.name}:")
        lines += [f"      - {d.cause}: {d.effect}" for d in mine]
        jobs = [d.jobs for d in mine if d.jobs]
        if not jobs:
            lines.append("      jobs: none disturbed")
            continue
        verb = _VERB[next(j for j in (EVICTED, WAITED_FOR, IN_THE_WAY) if j in jobs)]
        who = [f"workloads admitted to {q}" for q in queues_on(pool, resources)]
        who += [f"the platform's {j}" for j in platform_jobs_on(pool, resources)]
        lines.append(f"      jobs: {verb}: {'; '.join(who) or 'no queue admits jobs here'}")
        if EVICTED in jobs:
            lines += [f"      restart: {job}: {what}" for job, what in RESTARTS_AFTER_EVICTION]
    return lines


def blast_radius(
    previous: PreviousPlan,
    current: list[dict[str, Any]],
    outputs: dict[str, Any],
    diffs: list[ResourceDiff],
    effects: list[KnockOn],
    rendered: list[ResourceDiff] = (),
    sources: dict[str, tuple[Source, ...]] | None = None,
) -> list[str]:
    """The section's lines (none where no change reaches a GPU pool): `current` and `outputs`
    this plan's, `diffs` and `effects` its diff against `previous` and the knock-on,
    `rendered` the rendered objects' diff and `sources` this plan's rendered releases."""
    pools = pools_of(current, outputs)
    found = disturbances(pools, previous, current, diffs, effects, list(rendered), sources or {})
    return format_blast_radius(found, pools, current)
