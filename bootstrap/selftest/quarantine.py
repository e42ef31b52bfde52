"""Quarantine (SELFTEST_CORDON_ON_FAIL=true): a node that FAILs a hardware check is cordoned
(`spec.unschedulable: true`, what `kubectl cordon` sets), labelled with the check
(SELFTEST_CORDON_LABEL, `gpu-platform/selftest-failed=hardware.pcie_link`) and tainted with the
same key and value, effect NoSchedule, by its own local rank 0 through the in-cluster API, as one
JSON merge patch. The program runs the pods as a ServiceAccount that may get and patch nodes and
nothing more (docs/monitoring.md, "Returning a quarantined node", says how to bring one back).

Why the taint: a restarted group must not land on the node again, and two controllers place it.
kube-scheduler filters on the label (every GPU pod requires its absence) and on taints; Kueue's
topology-aware scheduling ungates a restarted pod onto the node its workload was assigned unless
that node is NotReady or carries a NoSchedule/NoExecute taint the pods do not tolerate (kueue
v0.19.2 pkg/controller/tas/node_controller.go getWorkloadStatus, TASReplaceNodeOnNodeTaints;
topology_ungater.go). A cordon alone is lifted by anyone's `kubectl uncordon` and by the GPU
Operator's driver upgrade, which uncordons the nodes it upgrades; the platform's taint stays
until someone removes it.

A job's preflight (components/selftest/preflight.py) runs as the team's pods, which may not touch
nodes: each failing node's local rank 0 writes its verdict as the container's termination
message instead (`write_verdict`), and the platform's watcher (selftest/watch.py) quarantines
the node the pod ran on (`node_fault`).

Only a fault of the node itself quarantines it: its GPUs, their links and memory, its fabric
devices, its NVMe cache, the collectives inside it, a GPU whose results differ from its peers'
and an all-reduce contribution that arrived wrong (each FAILs on the rank it names only). A
FAIL of the fabric's settings (NCCL on sockets, no GPUDirect RDMA), of the shared file system,
of a cross-node figure (which node would it be?), of training, or a check that crashed (a fault
of the check, not a finding) leaves the node schedulable."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract import preflight
from contract import quarantine as marks
from contract.env import SELFTEST_CORDON_LABEL, SELFTEST_CORDON_ON_FAIL
from selftest.kube import ApiServer, KubeError
from selftest.result import CheckResult

DEFAULT_LABEL = marks.LABEL
HARDWARE_PREFIXES = ("hardware.", "nvme.")
HARDWARE_CHECKS = frozenset(
    {
        "inventory.gpu_count",
        "inventory.fabric_devices",
        "inventory.gpu_model",
        # A GPU whose results differ from its peers', and a rank whose all-reduce contribution
        # arrived wrong: each FAILs only on the rank it names (agreement.py, collectives.py).
        "agreement.gpu_results",
        "collectives.allreduce_correct",
        "collectives.allreduce_correct_intra_node",
        "collectives.allreduce_busbw_intra_node",
        "collectives.allreduce_latency_intra_node",
    }
)
# A label value (Kubernetes "Labels and Selectors", syntax and character set): at most 63
# characters, alphanumerics, '-', '_' and '.', beginning and ending with an alphanumeric.
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._-]")
LABEL_VALUE_MAX = 63
ROW = "report.quarantine"
TAINT_EFFECT = "NoSchedule"
# Where the kubelet reads a container's termination message (every container's default
# `terminationMessagePath`, Kubernetes docs "Determine the Reason for Pod Failure"), at most
# 4096 bytes; it creates the file writable by any user, so a non-root container with a
# read-only root file system writes it.
VERDICT_PATH = Path("/dev/termination-log")
# Tries when the node changed between reading it and patching it (HTTP 409).
CONFLICT_TRIES = 3


def is_hardware(check: str) -> bool:
    return check in HARDWARE_CHECKS or check.startswith(HARDWARE_PREFIXES)


def failures_by_node(per_rank: Iterable[tuple[str, int, list[CheckResult]]]) -> dict[str, list]:
    """The hardware checks each node FAILed, in report order, from every rank's own results."""
    found: dict[str, list[str]] = {}
    for node, _, results in per_rank:
        for result in results:
            if result.status == "FAIL" and is_hardware(result.name):
                names = found.setdefault(node, [])
                if result.name not in names:
                    names.append(result.name)
    return found


def label_value(check: str) -> str:
    """The check's name as a valid label value."""
    value = _NOT_ALLOWED.sub("_", check)[:LABEL_VALUE_MAX]
    return value.strip("._-") or "unknown"


@dataclass(frozen=True)
class Outcome:
    node: str
    failed: tuple[str, ...]
    cordoned: bool
    # What was done, or why not.
    message: str
    # True when the API refused or was out of reach: the node stays schedulable.
    problem: bool = False


def quarantine_patch(
    node: dict[str, Any], label: str, failed: list[str], at: datetime
) -> dict[str, Any]:
    """Cordon, the label, the taint `<label>=<check>:NoSchedule` and the annotation that says
    when and why (contract/quarantine.py: the API keeps no time of a NoSchedule taint), as one
    JSON merge patch, so no reader sees a quarantine without its time. A node's taints are an
    atomic list (core/v1 NodeSpec `taints`, x-kubernetes-list-type atomic), which a patch
    replaces whole: the node's other taints are kept as read, and its
    resourceVersion makes the API refuse the patch (409) if the node changed since."""
    value = label_value(failed[0])
    kept = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != label]
    return {
        "metadata": {
            "labels": {label: value},
            "annotations": {marks.ANNOTATION: marks.stamp(at, failed)},
            "resourceVersion": node["metadata"]["resourceVersion"],
        },
        "spec": {
            "unschedulable": True,
            "taints": [*kept, {"key": label, "value": value, "effect": TAINT_EFFECT}],
        },
    }


def enabled(env: dict[str, str]) -> bool:
    return env.get(SELFTEST_CORDON_ON_FAIL, "").lower() == "true"


def quarantine(
    env: dict[str, str],
    node: str,
    failed: list[str],
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Outcome:
    """Cordon, label, taint and annotate `node` for its failed hardware checks (the caller
    checks `enabled`): read the node, patch it, again if it changed in between."""
    label = env.get(SELFTEST_CORDON_LABEL) or DEFAULT_LABEL
    try:
        ApiServer.in_cluster(env).patch_node_as_read(
            node, lambda found: quarantine_patch(found, label, failed, clock()), CONFLICT_TRIES
        )
    except KubeError as error:
        return Outcome(node, tuple(failed), False, f"could not cordon: {error}", problem=True)
    value = label_value(failed[0])
    return Outcome(
        node, tuple(failed), True, f"cordoned, labelled and tainted {label}={value}:{TAINT_EFFECT}"
    )


def write_verdict(node: str, failed: list[str], path: Path = VERDICT_PATH) -> str | None:
    """The preflight's verdict on its own node as its termination message; why not, or None.
    The kubelet creates the file in every container: it is written, never created."""
    try:
        with path.open("r+") as log:
            log.write(json.dumps({"node": node, "failed": failed}))
            log.truncate()
    except OSError as error:
        return f"could not write the verdict to {path}: {error}"
    return None


def node_fault(pod: dict[str, Any]) -> tuple[str, list[str]] | None:
    """(node, its failed hardware checks) when the pod's preflight container failed with a
    verdict on the node the pod ran on, else None. The node is the API's `spec.nodeName`: a
    message naming another node, or a check that is no fault of a node, quarantines nothing."""
    node = (pod.get("spec") or {}).get("nodeName")
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        ended = ((status.get("state") or {}).get("terminated")) or {}
        if status.get("name") != preflight.CONTAINER or not ended.get("exitCode"):
            continue
        try:
            verdict = json.loads(ended.get("message") or "")
        except ValueError:
            return None
        if not isinstance(verdict, dict) or not node or verdict.get("node") != node:
            return None
        failed = [c for c in verdict.get("failed") or [] if isinstance(c, str) and is_hardware(c)]
        return (node, failed) if failed else None
    return None


def report_row(outcomes: list[Outcome]) -> CheckResult | None:
    """The report's record of what was quarantined: INFO, or WARN when a node that should have
    been cordoned could not be (it stays schedulable)."""
    if not outcomes:
        return None
    return CheckResult(
        ROW,
        "WARN" if any(o.problem for o in outcomes) else "INFO",
        sum(o.cordoned for o in outcomes),
        "nodes cordoned",
        reason="; ".join(f"{o.node} ({', '.join(o.failed)}): {o.message}" for o in outcomes),
        details={"outcomes": [o.__dict__ for o in outcomes]},
    )
