"""Models of the controllers a joining GPU node meets (STYLE.md §17), each from its source at the
pin, and of the node-join check's documented effect (contract/node_join.py; the image's own
patches are held in tests/image/selftest/test_node_join.py):

- cluster-autoscaler, which must read the taint as a startup taint: the node then counts as
  one that will be ready shortly, and a template node of its group carries no such taint.
- the DaemonSet controller, which puts the check's pod on a node: the scheduler's filters with
  the tolerations it adds to every DaemonSet pod.
- kube-scheduler, which keeps every job off the node until the taint goes
  (tests/controllers/tas.py, scheduler_refusal)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from tests.controllers.tas import Node, scheduler_refusal

# kubernetes/autoscaler cluster-autoscaler/utils/taints/taints.go at cluster-autoscaler-1.35.0
# (and 1.36.1): TaintConfig.IsStartupTaint is a taint named by --startup-taint (or the
# deprecated --ignore-taint), or one whose key starts with IgnoreTaintPrefix or
# StartupTaintPrefix; SanitizeTaints drops such taints from a template node.
CA_STARTUP_PREFIXES = (
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
    "startup-taint.cluster-autoscaler.kubernetes.io/",
)


def ca_startup_taint(key: str, startup_taint_flags: Iterable[str] = ()) -> bool:
    return key in set(startup_taint_flags) or key.startswith(CA_STARTUP_PREFIXES)


def ca_template_taints(
    taints: Iterable[Mapping[str, str]], startup_taint_flags: Iterable[str] = ()
) -> list[Mapping[str, str]]:
    """SanitizeTaints, for the taints the platform sets: a startup taint is dropped."""
    return [t for t in taints if not ca_startup_taint(t["key"], startup_taint_flags)]


# kubernetes pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations (v1.35):
# every DaemonSet pod tolerates these, whatever its template says (network-unavailable only with
# hostNetwork, which the check does not use).
DAEMON_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def daemon_refusal(daemon_set: Mapping[str, Any], node: Node) -> str | None:
    """Why the DaemonSet controller runs no pod of `daemon_set` on `node` (its
    NodeShouldRunDaemonPod: the scheduler's node-name, node-affinity and taint filters on the
    template with the DaemonSet tolerations added), or None where it runs one."""
    pod = daemon_set["spec"]["template"]["spec"]
    return scheduler_refusal(
        {**pod, "tolerations": [*pod.get("tolerations", []), *DAEMON_TOLERATIONS]}, node
    )


def settled(
    node: dict[str, Any], passed: bool, label: str, taint_key: str, quarantine: dict
) -> dict[str, Any]:
    """The node once its check settled it, as contract/node_join.py says: on a PASS without the
    startup taint and labelled passed; on a FAIL quarantined (cordoned, labelled and tainted
    `quarantine`, its own taints kept) and labelled failed, the startup taint kept."""
    found = copy.deepcopy(node)
    labels, spec = found["metadata"]["labels"], found.setdefault("spec", {})
    taints = spec.get("taints", [])
    if passed:
        labels[label] = "passed"
        spec["taints"] = [t for t in taints if t["key"] != taint_key]
        return found
    labels[label] = "failed"
    labels[quarantine["key"]] = quarantine["value"]
    spec["unschedulable"] = True
    spec["taints"] = [*taints, quarantine]
    return found
