"""Kueue's admission of a workload as topology-aware scheduling (TAS) decides it, and whether a
pending workload makes the cluster-autoscaler start a node: small models of the controllers'
rules, written from their source at the pins, run over what a stack declares.

Kueue is kubernetes-sigs/kueue at v0.19.2 (`8eab68778fc1`); "CA" is kubernetes/autoscaler at
cluster-autoscaler-1.36.1, the image the stacks pin.

- A TAS flavor's nodes are those that carry the flavor's `nodeLabels` and every level of its
  Topology (`pkg/util/tas/node.go`, `NodeMatchesFlavor`; `pkg/cache/scheduler/tas_nodes_cache.go`,
  `find`): a node that lacks one level is not in the flavor at all.
- A ClusterQueue whose flavors all name a Topology is TAS-only (`pkg/cache/scheduler/
  clusterqueue.go`, `isTASOnly`), and every pod set in it is placed by TAS, annotated or not
  (`pkg/scheduler/flavorassigner/tas_flavorassigner.go`, `isTASImplied`). Elsewhere a pod set
  that asks for a topology (`kueue.x-k8s.io/podset-{required,preferred,unconstrained}-topology`)
  takes only a TAS flavor that has the level it names, and one that asks for none only a flavor
  without a Topology (`checkPodSetAndFlavorMatchForTAS`).
- A pod set with `kueue.x-k8s.io/podset-required-topology: <level>` is placed in one domain of
  that level or not at all; a domain is identified by its values at every level above and at it
  (`pkg/cache/scheduler/tas_flavor_snapshot.go`, findTopologyAssignment; `largest_domain`).
- TAS counts only nodes that exist (Kueue docs, "Topology Aware Scheduling", "Capacity
  calculation"); on a flavor with a ProvisioningRequest admission check it delays the topology
  request until the nodes are provisioned (`podSetTopologyRequest`: `DelayedTopologyRequest`;
  docs, "ClusterAutoscaler support"). Without that check a pool at zero nodes admits nothing.
- CA adds a node for a pending pod only when the pod's priority is not below
  `--expendable-pods-priority-cutoff`, -10 by default (CA `core/utils/expendable.go`,
  `IsExpendablePod`; `config/flags/flags.go`; FAQ "How does Cluster Autoscaler work with Pod
  Priority and Preemption?"). A ProvisioningRequest asks CA for nodes for its pod templates
  (Kueue `pkg/controller/admissionchecks/provisioning`): a workload on a flavor with that check
  gets nodes started for it, whatever its pods' priority.

Where a restarted group's pods may land once a node is quarantined (`placement_refusal`):
- Kueue keeps a JobSet's workload admitted across the JobSet's restarts, and its topology
  ungater ungates each recreated pod onto the domain the workload was assigned, adding the
  domain's node labels to the pod's nodeSelector (`pkg/controller/tas/topology_ungater.go`
  Reconcile, l. 185-325, the nodeSelector l. 315). It holds the pods back from a node only when
  the workload records it in `status.unhealthyNodes` (l. 270-289: "Gated pods must not be
  ungated onto such a node"), and the scheduler's second pass then assigns a replacement
  domain. The node controller records it there when the node is NotReady, or
  (`TASReplaceNodeOnNodeTaints`, beta and on by default since 0.17, `pkg/features/
  kube_features.go` l. 814-816) carries a NoSchedule or NoExecute taint that the pod sets do not
  tolerate, with the flavor's tolerations Kueue merged in (`pkg/controller/tas/
  node_controller.go` getWorkloadStatus l. 361-412, hasSchedulingTaints l. 414-418,
  podSetsWithEffectiveTolerationsOnNode l. 420, checkTaintTolerations and classifyTaints
  l. 727-779). A node label alone changes nothing.
- kube-scheduler then filters the node (kubernetes `pkg/scheduler/framework/plugins/`):
  NodeUnschedulable (`spec.unschedulable`, unless the pod tolerates
  `node.kubernetes.io/unschedulable:NoSchedule`), NodeAffinity (the nodeSelector and the
  required node affinity's terms: In, NotIn, Exists, DoesNotExist), TaintToleration (every
  NoSchedule and NoExecute taint tolerated). A toleration tolerates a taint as
  k8s.io/api core/v1 toleration.go ToleratesTaint says: an effect it names must be the
  taint's, a key it names must be the taint's (an empty key with Exists matches every taint),
  Exists ignores the value, Equal (or no operator) needs it equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# apis/kueue/v1beta2/topology_types.go: the pod-template annotations that ask for TAS.
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
TAS_ANNOTATIONS = (REQUIRED, PREFERRED, UNCONSTRAINED)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# CA config/flags/flags.go: --expendable-pods-priority-cutoff defaults to -10.
EXPENDABLE_CUTOFF = -10


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    gpus: int
    taints: tuple[Mapping[str, str], ...] = ()
    unschedulable: bool = False
    ready: bool = True


@dataclass(frozen=True)
class Kueue:
    """What Kueue reads: its objects by kind and name (LocalQueues by namespace/name)."""

    objects: tuple[dict[str, Any], ...]

    def named(self, kind: str) -> dict[str, dict[str, Any]]:
        found = {}
        for obj in self.objects:
            if obj["kind"] == kind:
                meta = obj["metadata"]
                key = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]
                found[key] = obj
        return found

    def levels(self, flavor: dict[str, Any]) -> list[str] | None:
        name = flavor["spec"].get("topologyName")
        if name is None:
            return None
        topology = self.named("Topology")[name]
        return [level["nodeLabel"] for level in topology["spec"]["levels"]]

    def queue_of(self, namespace: str, local_queue: str) -> dict[str, Any]:
        local = self.named("LocalQueue")[f"{namespace}/{local_queue}"]
        return self.named("ClusterQueue")[local["spec"]["clusterQueue"]]

    def flavors_of(self, queue: dict[str, Any]) -> list[dict[str, Any]]:
        flavors = self.named("ResourceFlavor")
        return [
            flavors[f["name"]]
            for group in queue["spec"].get("resourceGroups", [])
            for f in group["flavors"]
            if f["name"] in flavors
        ]

    def tas_only(self, queue: dict[str, Any]) -> bool:
        """clusterqueue.go isTASOnly: every flavor of every resource group names a Topology."""
        return all(self.levels(f) is not None for f in self.flavors_of(queue))

    def provisioned(self, queue: dict[str, Any], flavor: str) -> bool:
        """The queue waits for a ProvisioningRequest on `flavor` (an admission check of the
        provisioning controller, on every flavor or on this one)."""
        checks = self.named("AdmissionCheck")
        strategy = queue["spec"].get("admissionChecksStrategy", {})
        return any(
            checks[c["name"]]["spec"]["controllerName"] == PROVISIONING_CONTROLLER
            and (not c.get("onFlavors") or flavor in c["onFlavors"])
            for c in strategy.get("admissionChecks", [])
        )


def node_matches_flavor(node: Node, flavor: dict[str, Any], levels: Iterable[str]) -> bool:
    """pkg/util/tas/node.go NodeMatchesFlavor: the flavor's labels, and every level present."""
    labels = node.labels
    wanted = flavor["spec"].get("nodeLabels", {})
    return all(labels.get(k) == v for k, v in wanted.items()) and all(
        key in labels for key in levels
    )


def largest_domain(nodes: Iterable[Node], levels: list[str], level: str) -> int:
    """The most nodes one domain of `level` holds. A domain is the values of every level from
    the top down to `level` (v0.19.2 pkg/cache/scheduler/tas_flavor_snapshot.go: a domain's ID
    joins its ancestors' values), and a required level places every pod of the set in one
    domain of it or none ("podset-required-topology"; findTopologyAssignment)."""
    path = levels[: levels.index(level) + 1]
    sizes: dict[tuple[str, ...], int] = {}
    for node in nodes:
        key = tuple(node.labels[label] for label in path)
        sizes[key] = sizes.get(key, 0) + 1
    return max(sizes.values(), default=0)


def requested_level(annotations: Mapping[str, str]) -> str | None:
    for key in (REQUIRED, PREFERRED):
        if key in annotations:
            return annotations[key]
    return None


def flavor_refusal(
    kueue: Kueue, queue: dict[str, Any], flavor: dict[str, Any], annotations: Mapping[str, str]
) -> str | None:
    """tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS (the pods ask for GPUs, which
    every flavor covers, so a flavor without a Topology always overlaps them)."""
    name, levels = flavor["metadata"]["name"], kueue.levels(flavor)
    explicit = any(key in annotations for key in TAS_ANNOTATIONS)
    if not explicit and kueue.tas_only(queue):
        return None
    if explicit:
        if levels is None:
            return f'Flavor "{name}" does not support TopologyAwareScheduling'
        level = requested_level(annotations)
        if level is not None and level not in levels:
            return f'Flavor "{name}" does not contain the requested level'
        return None
    if levels is not None:
        return f'Flavor "{name}" supports only TopologyAwareScheduling'
    return None


def selects(pod_selector: Mapping[str, str], flavor: dict[str, Any]) -> bool:
    """The pod's node selector and the flavor's labels agree on every key both name (Kueue
    adds the flavor's labels to the pods; a conflict leaves no node)."""
    labels = flavor["spec"].get("nodeLabels", {})
    return all(labels.get(k, v) == v for k, v in pod_selector.items())


@dataclass(frozen=True)
class PodSet:
    """One pod set of a workload: the Job's pods, as Kueue reads their template."""

    namespace: str
    queue: str
    count: int
    gpus: int
    node_selector: Mapping[str, str]
    annotations: Mapping[str, str]
    priority_class: str | None


def pod_set(job: dict[str, Any]) -> PodSet:
    """A Job (or a CronJob's Job template) as Kueue's batch/job integration sees it: one pod
    set of `parallelism` pods (pkg/controller/jobs/job/job_controller.go, PodSets). A JobSet
    of one replicatedJob as the jobset integration sees it: one pod set of replicas ×
    min(parallelism, completions) pods, its TAS request on the replicatedJob's pod template
    (pkg/controller/jobs/jobset/jobset_controller.go, PodSets, podsCount); this model places
    one pod set, so a JobSet of several is refused here rather than half read."""
    meta, spec = job["metadata"], job["spec"]
    count = spec.get("parallelism", 1)
    if job["kind"] == "CronJob":
        meta, spec = {**meta, **spec["jobTemplate"]["metadata"]}, spec["jobTemplate"]["spec"]
        count = spec.get("parallelism", 1)
    elif job["kind"] == "JobSet":
        (replicated,) = spec["replicatedJobs"]
        spec = replicated["template"]["spec"]
        parallelism = spec.get("parallelism", 1)
        per_replica = min(parallelism, spec.get("completions", parallelism))
        count = replicated.get("replicas", 1) * per_replica
    template = spec["template"]
    container = template["spec"]["containers"][0]
    return PodSet(
        namespace=meta["namespace"],
        queue=meta.get("labels", {}).get(QUEUE_LABEL, "default"),
        count=count,
        gpus=int(container["resources"]["requests"].get("nvidia.com/gpu", 0)),
        node_selector=template["spec"].get("nodeSelector", {}),
        annotations=template["metadata"].get("annotations", {}),
        priority_class=template["spec"].get("priorityClassName"),
    )


def admission(
    kueue: Kueue, pods: PodSet, nodes: Iterable[Node], provisioned: bool = False
) -> str | None:
    """Why Kueue would never admit the pod set onto the nodes that exist, or None: the first
    flavor of its queue that it may take and, on a TAS flavor placed now (no provisioning
    first), enough existing nodes that carry every level for its pods (whole nodes: the
    platform's jobs take one pod per node), in one domain of a required level. `provisioned`:
    `nodes` are those that exist once the ProvisioningRequest is answered, onto which Kueue
    then places the delayed topology request (`podSetTopologyRequest`), so a flavor behind a
    provisioning check is judged on them too."""
    queue = kueue.queue_of(pods.namespace, pods.queue)
    nodes = list(nodes)
    why = []
    for flavor in kueue.flavors_of(queue):
        name = flavor["metadata"]["name"]
        if not selects(pods.node_selector, flavor):
            continue
        refusal = flavor_refusal(kueue, queue, flavor, pods.annotations)
        if refusal:
            why.append(refusal)
            continue
        levels = kueue.levels(flavor)
        if levels is None or (kueue.provisioned(queue, name) and not provisioned):
            return None
        matching = [n for n in nodes if node_matches_flavor(n, flavor, levels)]
        fitting = [n for n in matching if n.gpus >= pods.gpus]
        fit = len(fitting)
        if fit < pods.count:
            why.append(
                f'flavor "{name}": {fit} of the {len(nodes)} nodes carry {", ".join(levels)} '
                f"and fit a pod, {pods.count} needed, and TAS counts only nodes that exist"
            )
            continue
        required = pods.annotations.get(REQUIRED)
        largest = required and largest_domain(fitting, levels, required)
        if required and largest < pods.count:
            why.append(
                f'flavor "{name}": no one domain of {required} holds {pods.count} pods, the '
                f"largest holds {largest}"
            )
            continue
        return None
    return "; ".join(why) or f"no flavor of ClusterQueue {queue['metadata']['name']} selects it"


def starts_nodes(kueue: Kueue | None, pods: PodSet, priorities: Mapping[str, int]) -> str | None:
    """Why the workload would make the cluster-autoscaler start a node, or None: a
    ProvisioningRequest Kueue creates for it, or a pending pod whose priority is not below the
    expendable cutoff (a pod without a class has priority 0)."""
    if kueue is not None:
        queue = kueue.queue_of(pods.namespace, pods.queue)
        for flavor in kueue.flavors_of(queue):
            name = flavor["metadata"]["name"]
            if selects(pods.node_selector, flavor) and kueue.provisioned(queue, name):
                return f"ClusterQueue {queue['metadata']['name']} provisions flavor {name}"
    priority = priorities.get(pods.priority_class, 0) if pods.priority_class else 0
    if priority >= EXPENDABLE_CUTOFF:
        return f"priority {priority} ({pods.priority_class}) is not below {EXPENDABLE_CUTOFF}"
    return None


# --------------------------------------------------------------------- a quarantined node
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
# The label the ungater's domain for a node names it by (the lowest Topology level).
HOSTNAME = "kubernetes.io/hostname"
SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


def node_from(obj: Mapping[str, Any], gpus: int) -> Node:
    """A Node object as the controllers read it once the node lifecycle controller has seen it:
    a cordoned node also carries `node.kubernetes.io/unschedulable:NoSchedule` (kubernetes
    pkg/controller/nodelifecycle, TaintNodesByCondition)."""
    spec = obj.get("spec") or {}
    taints = tuple(spec.get("taints") or ())
    if spec.get("unschedulable"):
        taints += (UNSCHEDULABLE_TAINT,)
    meta = obj["metadata"]
    return Node(meta["name"], meta.get("labels", {}), gpus, taints, bool(spec.get("unschedulable")))


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """k8s.io/api core/v1 toleration.go ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and toleration.get("value", "") == taint.get("value", "")


def untolerated(node: Node, tolerations: Iterable[Mapping[str, Any]]) -> list[str]:
    """The node's NoSchedule and NoExecute taints that no toleration tolerates."""
    tolerations = list(tolerations)
    return [
        f"{t['key']}={t.get('value', '')}:{t['effect']}"
        for t in node.taints
        if t["effect"] in SCHEDULING_EFFECTS and not any(tolerates(x, t) for x in tolerations)
    ]


def _matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression["key"], expression["operator"]
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    inside = labels.get(key) in expression.get("values", [])
    return inside if operator == "In" else key not in labels or not inside


def scheduler_refusal(pod: Mapping[str, Any], node: Node) -> str | None:
    """Why kube-scheduler's filters keep the pod (its spec) off the node, or None."""
    tolerations = pod.get("tolerations", [])
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations):
        return f"node {node.name} is unschedulable (NodeUnschedulable)"
    wrong = {k: v for k, v in pod.get("nodeSelector", {}).items() if node.labels.get(k) != v}
    if wrong:
        return f"node {node.name} lacks the nodeSelector's {wrong} (NodeAffinity)"
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = (required or {}).get("nodeSelectorTerms")
    if terms and not any(
        all(_matches(e, node.labels) for e in term.get("matchExpressions", [])) for term in terms
    ):
        return f"node {node.name} matches no required node affinity term (NodeAffinity)"
    taints = untolerated(node, tolerations)
    if taints:
        return f"node {node.name} has untolerated taints {taints} (TaintToleration)"
    return None


def tas_refusal(node: Node, tolerations: Iterable[Mapping[str, Any]]) -> str | None:
    """Why Kueue's node controller records the assigned node as unhealthy for the workload, so
    that its ungater keeps the recreated pods off it and a replacement domain is chosen; None
    when it ungates them onto the node."""
    if not node.ready:
        return f"node {node.name} is NotReady"
    taints = untolerated(node, tolerations)
    if taints:
        return f"node {node.name} has taints the pod sets do not tolerate: {taints}"
    return None


def placement_refusal(
    pod: Mapping[str, Any], node: Node, flavor_tolerations: Iterable[Mapping[str, Any]], tas: bool
) -> str | None:
    """Why a restarted pod cannot land on the node it (or, with TAS, its workload) was on: with
    TAS, Kueue's node controller first (the pod's tolerations with the flavor's merged), then
    kube-scheduler on the pod as ungated (the node's hostname added to its nodeSelector);
    without, kube-scheduler alone on the pod as admitted (the flavor's tolerations added)."""
    admitted = {**pod, "tolerations": [*pod.get("tolerations", []), *flavor_tolerations]}
    if tas:
        why = tas_refusal(node, admitted["tolerations"])
        if why:
            return why
        selector = {**pod.get("nodeSelector", {}), HOSTNAME: node.labels.get(HOSTNAME, "")}
        admitted["nodeSelector"] = selector
    return scheduler_refusal(admitted, node)
