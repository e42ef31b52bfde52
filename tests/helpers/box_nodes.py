"""The nodes of each GPU pool in the cluster in a box, as the plan declares them, and the
scheduler's fit of a pod onto one.

A node of an AWS pool carries its managed node group's `labels` and `taints` as planned
(out/<stack>/resources.json; EKS maps NO_SCHEDULE to NoSchedule, API reference "Taint"), as
they are once its node-join check has passed (the startup taint gone, the label `passed`), and the
labels EKS adds (`kubernetes.io/hostname`, `node.kubernetes.io/instance-type`,
`eks.amazonaws.com/nodegroup`, the network layers of its type) and GPU Feature Discovery's
`nvidia.com/gpu.clique` on NVLink-domain types (tests/helpers/aws_topology.py); a node of an
existing cluster's pool the pool's `node_selector` labels, which the admin's nodes carry.
Allocatable: the GPUs the device plugin advertises (components/data/gpu_operator.
advertised_resources: a time-sliced GPU is several), the pool's
EFA devices, the RDMA shared device's `rdmaHcaMax` from the rendered NicClusterPolicy, the
pool's 2 MiB hugepages, and the CPUs and memory the instance type has less the kubelet's
reservation (the static CPU manager's whole reserved CPUs) or, on an existing cluster, its
flavor's.

The fit is the default scheduler's filters for what training pods use (kube-scheduler
framework plugins NodeAffinity, TaintToleration, NodeResourcesFit), each refusal worded as its
plugin's reason: "node(s) didn't match Pod's node affinity/selector", "node(s) had untolerated
taint {key: value}", "Insufficient <resource>".

Each node is this machine's CPU standing in for a GPU node: `stand_in` gives a container the
view such a node gives (one process where the pod asks for a rank per GPU; no GPU, no RDMA
device, gloo over loopback), the only change the box makes to what a pod runs besides its
paths and network (tests/helpers/box_kubelet.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from components.data.gpu_operator import advertised_resources
from components.vocabulary import EFA_RESOURCE, GPU_RESOURCE, rdma_resource
from contract import node_join
from contract.env import (
    SELFTEST_BASELINE_POOL,
    SELFTEST_DCGM_URL,
    SELFTEST_EXPECTED_FABRIC_DEVICES,
    SELFTEST_EXPECTED_GPUS,
    SELFTEST_FABRIC,
    SELFTEST_FLOORS,
    SELFTEST_PROMETHEUS_URL,
)
from model.config import GpuPool, PlatformConfig
from tests.controllers.kueue_admission import quantity
from tests.controllers.label_selector import label_selector_matches
from tests.helpers.aws_topology import eks_gfd_labels

HOSTNAME = "kubernetes.io/hostname"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
CANARY_LABEL = "gpu-platform/canary"
EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}

# What a CPU node changes of a container's view, and why each is needed. torchrun starts the
# job's ranks on CPUs, two across the job (gloo, 2 cores): one per pod of a multi-node job, two
# in a job of one pod, instead of one per GPU. The self-test expects the node's hardware: no GPU
# and no fabric device on a CPU node, gloo over loopback; the GPUs' telemetry (the DCGM exporter,
# the autoscaler's GPU series in Prometheus) is not there to check, so its URLs are not set, as
# on any CPU run. Its floors are the pool's GPU, fabric and disk figures, which this machine's
# CPU and disk do not speak for: its figures are reported, not judged. A run held to its pool's
# stored baseline (a canary's: bootstrap/selftest/baseline.py) keeps its Prometheus URL: the
# baseline is the platform's own recording rule, which a stand-in Prometheus serves
# (tests/cluster/test_canary.py), not the GPUs' telemetry.
STAND_IN_ENV = {
    SELFTEST_EXPECTED_GPUS: "0",
    SELFTEST_EXPECTED_FABRIC_DEVICES: "0",
    SELFTEST_FABRIC: "tcp",
    SELFTEST_FLOORS: "{}",
}
NOT_ON_A_CPU = (SELFTEST_DCGM_URL, SELFTEST_PROMETHEUS_URL)
CPU_RANKS = 2
NPROC = re.compile(r"--nproc[-_]per[-_]node(=.*)?$")
NNODES = re.compile(r"--nnodes[=](\d+)$")


def stand_in(
    argv: list[str], env: dict[str, str], node: Node | None = None
) -> tuple[list[str], dict[str, str]]:
    nodes = next((int(m.group(1)) for w in argv if (m := NNODES.match(w))), 1)
    ranks = str(max(1, CPU_RANKS // nodes))
    words, value_next = [], False
    for word in argv:
        match = NPROC.match(word)
        if value_next:
            word, value_next = ranks, False
        elif match and match.group(1):
            word = word.split("=", 1)[0] + "=" + ranks
        elif match:
            value_next = True
        words.append(word)
    kept = (SELFTEST_PROMETHEUS_URL,) if env.get(SELFTEST_BASELINE_POOL) else ()
    env = {k: v for k, v in env.items() if k not in NOT_ON_A_CPU or k in kept}
    env.update({k: v for k, v in STAND_IN_ENV.items() if k in env})
    if node is not None and node.lost_gpu and SELFTEST_EXPECTED_GPUS in env:
        env[SELFTEST_EXPECTED_GPUS] = "1"
    return words, env


@dataclass
class Node:
    name: str
    pool: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    allocatable: dict[str, Any]
    # Pods running on it now: name -> (their sandbox process, their requests).
    pods: dict[str, tuple[Any, dict[str, Fraction]]] = field(default_factory=dict)
    # `kubectl cordon`: spec.unschedulable.
    unschedulable: bool = False
    # A GPU fell off the bus: a pod is given a GPU its processes cannot see.
    lost_gpu: bool = False
    # metadata.resourceVersion, which the API server changes on every write of the node.
    version: int = 1

    def as_object(self) -> dict[str, Any]:
        """The Node as the API server returns it."""
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": dict(self.labels),
                "resourceVersion": str(self.version),
            },
            "spec": {"taints": list(self.taints), "unschedulable": self.unschedulable},
            "status": {"allocatable": {k: str(v) for k, v in self.allocatable.items()}},
        }

    def merge_patch(self, patch: dict[str, Any]) -> None:
        """A JSON merge patch (RFC 7386) of its labels, taints and unschedulable."""
        self.version += 1
        for key, value in patch.get("metadata", {}).get("labels", {}).items():
            if value is None:
                self.labels.pop(key, None)
            else:
                self.labels[key] = value
        spec = patch.get("spec", {})
        if "taints" in spec:
            self.taints = list(spec["taints"] or [])
        if "unschedulable" in spec:
            self.unschedulable = bool(spec["unschedulable"])


def rdma_devices(objects: list[dict[str, Any]], resource: str) -> int:
    """rdmaHcaMax of the NicClusterPolicy's shared device plugin entry for `resource`."""
    for obj in objects:
        if obj.get("kind") != "NicClusterPolicy":
            continue
        plugin = obj["spec"].get("rdmaSharedDevicePlugin") or {}
        for entry in json.loads(plugin.get("config", "{}")).get("configList", []):
            if resource.endswith("/" + entry["resourceName"]):
                return int(entry["rdmaHcaMax"])
    return 0


def pool_nodes(
    cfg: PlatformConfig, resources: list[dict[str, Any]], objects: list[dict[str, Any]]
) -> list[Node]:
    """Every pool's nodes at its largest, named <pool>-<i>."""
    # A pool's canary group (components/selftest/canary.py) carries the pool's labels too, but
    # holds a node only while a GPU-stack change rolls: the box's nodes are the pool's own.
    groups = {
        r["inputs"]["labels"].get("gpu-platform/node-group"): r["inputs"]
        for r in resources
        if r["type"] == NODE_GROUP
        and r["inputs"].get("labels")
        and CANARY_LABEL not in r["inputs"]["labels"]
    }
    found = []
    for pool in cfg.gpu_pools:
        group = groups.get(pool.name)
        if group is not None:
            labels, taints, alloc = group_node(cfg, pool, group, objects)
            typed = labels["node.kubernetes.io/instance-type"]
        else:
            alloc = gpu_allocatable(cfg, pool, objects)
            flavor = cfg.scheduling.flavor(pool.name)
            alloc["cpu"] = str(flavor.cpus_per_node) if flavor.cpus_per_node else "1024"
            memory = flavor.memory_gib_per_node
            alloc["memory"] = f"{memory}Gi" if memory else "8Ti"
            labels, taints, typed = dict(pool.node_selector), [], None
        for i in range(pool.max_nodes):
            name = f"{pool.name}-{i}"
            own = {**labels, HOSTNAME: name, **(eks_gfd_labels(typed, i) if typed else {})}
            found.append(Node(name, pool.name, own, taints, dict(alloc)))
    return found


def canary_node(
    cfg: PlatformConfig, resources: list[dict[str, Any]], objects: list[dict[str, Any]], pool: str
) -> Node:
    """The one node of `pool`'s canary group (components/selftest/canary.py), as the planned
    group declares its labels and taints, named <pool>-canary-0."""
    (group,) = [
        r["inputs"]
        for r in resources
        if r["type"] == NODE_GROUP and (r["inputs"].get("labels") or {}).get(CANARY_LABEL) == pool
    ]
    (settings,) = [p for p in cfg.gpu_pools if p.name == pool]
    labels, taints, alloc = group_node(cfg, settings, group, objects)
    name = f"{pool}-canary-0"
    return Node(name, pool, {**labels, HOSTNAME: name}, taints, alloc)


def gpu_allocatable(
    cfg: PlatformConfig, pool: GpuPool, objects: list[dict[str, Any]]
) -> dict[str, Any]:
    """What a node of `pool` advertises besides its CPUs and memory."""
    alloc: dict[str, Any] = dict(advertised_resources(pool))
    alloc.setdefault(GPU_RESOURCE, pool.gpus_per_node)
    if pool.efa_interfaces:
        alloc[EFA_RESOURCE] = pool.efa_interfaces
    if cfg.fabric is not None and rdma_devices(objects, rdma_resource(cfg.fabric)):
        alloc[rdma_resource(cfg.fabric)] = rdma_devices(objects, rdma_resource(cfg.fabric))
    if pool.hugepages_2mi:
        alloc["hugepages-2Mi"] = f"{2 * pool.hugepages_2mi}Mi"
    return alloc


def group_node(
    cfg: PlatformConfig, pool: GpuPool, group: dict[str, Any], objects: list[dict[str, Any]]
) -> tuple[dict[str, str], list[dict[str, str]], dict[str, Any]]:
    """(labels, taints, allocatable) of a node of the planned managed node group `group`
    (its resource's inputs), which serves `pool`."""
    alloc = gpu_allocatable(cfg, pool, objects)
    (settings,) = [g for g in cfg.gpu_node_groups if g.name == pool.name]
    smallest = min(settings.instances, key=lambda i: i.vcpus)
    alloc["cpu"] = str(smallest.vcpus - settings.kubelet.reserved_cpus)
    alloc["memory"] = f"{smallest.memory_gib}Gi"
    labels = {**group["labels"], "eks.amazonaws.com/nodegroup": group["nodeGroupName"]}
    labels["node.kubernetes.io/instance-type"] = smallest.name
    taints = [
        {"key": t["key"], "value": t.get("value", ""), "effect": EFFECTS[t["effect"]]}
        for t in group.get("taints", [])
        # The box's nodes are up and tested: the node-join check has passed on each and
        # removed its startup taint (tests/controllers/test_node_join_rules.py models
        # the join itself; tests/image/selftest/test_node_join.py its patch).
        if t["key"] != node_join.TAINT_KEY
    ]
    if node_join.LABEL in labels:
        labels[node_join.LABEL] = node_join.PASSED
    return labels, taints, alloc


# ------------------------------------------------------------------------------ the fit


def tolerated(taint: dict[str, str], tolerations: list[dict[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def requests(pod_spec: dict[str, Any]) -> dict[str, Fraction]:
    """The pod's effective requests: its containers' summed, at least each init container's."""

    def of(container: dict[str, Any]) -> dict[str, Fraction]:
        res = container.get("resources", {})
        return {
            k: quantity(v) for k, v in {**res.get("limits", {}), **res.get("requests", {})}.items()
        }

    total: dict[str, Fraction] = {}
    for c in pod_spec["containers"]:
        for k, v in of(c).items():
            total[k] = total.get(k, Fraction(0)) + v
    for c in pod_spec.get("initContainers", []):
        for k, v in of(c).items():
            total[k] = max(total.get(k, Fraction(0)), v)
    return total


def misfit(pod_spec: dict[str, Any], node: Node) -> str | None:
    """Why the scheduler would not place the pod on the node; None when it would."""
    if node.unschedulable:
        return "node(s) were unschedulable"
    if not all(node.labels.get(k) == v for k, v in pod_spec.get("nodeSelector", {}).items()):
        return "node(s) didn't match Pod's node affinity/selector"
    required = (
        pod_spec.get("affinity", {}).get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
    )  # fmt: skip
    terms = required.get("nodeSelectorTerms")
    if terms and not any(label_selector_matches(term, node.labels) for term in terms):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in node.taints:
        if taint["effect"] in ("NoSchedule", "NoExecute") and not tolerated(
            taint, pod_spec.get("tolerations", [])
        ):
            return f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"
    used: dict[str, Fraction] = {}
    for _, pod in node.pods.values():
        for k, v in pod.items():
            used[k] = used.get(k, Fraction(0)) + v
    for resource, amount in requests(pod_spec).items():
        free = quantity(node.allocatable.get(resource, 0)) - used.get(resource, Fraction(0))
        if amount > free:
            return f"Insufficient {resource}"
    return None
