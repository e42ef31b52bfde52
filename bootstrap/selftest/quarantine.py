"""Quarantine (SELFTEST_CORDON_ON_FAIL=true): a node that FAILs a hardware check is cordoned
(`spec.unschedulable: true`, what `kubectl cordon` sets) and labelled with the check
(SELFTEST_CORDON_LABEL, `gpu-platform/selftest-failed=hardware.pcie_link`), by its own local rank
0 through the in-cluster API, as one JSON merge patch. The program runs the pods as a
ServiceAccount that may patch nodes and nothing more (docs/monitoring.md, "Returning a
quarantined node", says how to bring one back).

Only a fault of the node itself quarantines it: its GPUs, their links and memory, its fabric
devices, its NVMe cache, and the collectives inside it. A FAIL of the fabric's settings (NCCL on
sockets, no GPUDirect RDMA), of the shared file system, of a cross-node figure (which node would
it be?), of training, or a check that crashed (a fault of the check, not a finding) leaves the
node schedulable."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from contract.env import SELFTEST_CORDON_LABEL, SELFTEST_CORDON_ON_FAIL
from selftest.kube import ApiServer, KubeError
from selftest.result import CheckResult

DEFAULT_LABEL = "gpu-platform/selftest-failed"
HARDWARE_PREFIXES = ("hardware.", "nvme.")
HARDWARE_CHECKS = frozenset(
    {
        "inventory.gpu_count",
        "inventory.fabric_devices",
        "inventory.gpu_model",
        "collectives.allreduce_busbw_intra_node",
        "collectives.allreduce_latency_intra_node",
    }
)
# A label value (Kubernetes "Labels and Selectors", syntax and character set): at most 63
# characters, alphanumerics, '-', '_' and '.', beginning and ending with an alphanumeric.
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._-]")
LABEL_VALUE_MAX = 63
ROW = "report.quarantine"


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


def cordon_patch(label: str, failed: list[str]) -> dict:
    return {
        "spec": {"unschedulable": True},
        "metadata": {"labels": {label: label_value(failed[0])}},
    }


def enabled(env: dict[str, str]) -> bool:
    return env.get(SELFTEST_CORDON_ON_FAIL, "").lower() == "true"


def quarantine(env: dict[str, str], node: str, failed: list[str]) -> Outcome:
    """Cordon and label `node` for its failed hardware checks (the caller checks `enabled`)."""
    label = env.get(SELFTEST_CORDON_LABEL) or DEFAULT_LABEL
    try:
        ApiServer.in_cluster(env).patch_node(node, cordon_patch(label, failed))
    except KubeError as error:
        return Outcome(node, tuple(failed), False, f"could not cordon: {error}", problem=True)
    return Outcome(
        node, tuple(failed), True, f"cordoned, labelled {label}={label_value(failed[0])}"
    )


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
