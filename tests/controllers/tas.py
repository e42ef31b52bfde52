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


def admission(kueue: Kueue, pods: PodSet, nodes: Iterable[Node]) -> str | None:
    """Why Kueue would never admit the pod set onto the nodes that exist, or None: the first
    flavor of its queue that it may take and, on a TAS flavor placed now (no provisioning
    first), enough existing nodes that carry every level for its pods (whole nodes: the
    platform's jobs take one pod per node)."""
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
        if levels is None or kueue.provisioned(queue, name):
            return None
        matching = [n for n in nodes if node_matches_flavor(n, flavor, levels)]
        fit = sum(1 for n in matching if n.gpus >= pods.gpus)
        if fit >= pods.count:
            return None
        why.append(
            f'flavor "{name}": {fit} of the {len(nodes)} nodes carry {", ".join(levels)} and '
            f"fit a pod, {pods.count} needed, and TAS counts only nodes that exist"
        )
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
