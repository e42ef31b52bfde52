"""XID events since boot: the NVIDIA driver logs each GPU fault to the kernel log as
`NVRM: Xid (PCI:<bus>): <code>, <text>`; each is reported with its documented meaning and what
to do, from NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors, "Xid Error Listing" and the
Ampere-and-later catalog's resolution buckets).

Faults of the node (memory, bus, NVLink, GSP) FAIL; faults an application causes (its own
page fault, an exception in its kernel) WARN: the node may be fine. A code not in the table is
a WARN naming it, so a new driver's XID is reported rather than ignored."""

from __future__ import annotations

import re
from collections import Counter

from selftest.context import SelfTestContext
from selftest.result import CheckResult
from selftest.tools import kernel_log

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/"
# code -> (meaning, what to do, node fault). Meanings as NVIDIA's Xid listing words them.
CATALOG: dict[int, tuple[str, str, bool]] = {
    13: (
        "Graphics Engine Exception",
        "restart the application; if it recurs, run DCGM diag",
        False,
    ),
    31: ("GPU memory page fault", "usually the application's bug: restart it", False),
    43: ("GPU stopped processing", "restart the application", False),
    45: ("Preemptive cleanup, due to previous errors", "look for the XID before it", False),
    48: ("Double Bit ECC Error (uncorrectable)", "reset the GPU; see hardware.row_remap", True),
    61: ("Internal micro-controller breakpoint/warning", "reset the GPU (reboot the node)", True),
    62: ("Internal micro-controller halt", "reset the GPU (reboot the node)", True),
    63: (
        "ECC page retirement or row remapping recording event",
        "reset the GPU (reboot the node) to apply the remap",
        True,
    ),
    64: (
        "ECC page retirement or row remapper recording failure",
        "reset the GPU; if it recurs, replace the GPU",
        True,
    ),
    74: ("NVLink error", "reset the GPU; if it recurs, check the NVLink / NVSwitch hardware", True),
    79: ("GPU has fallen off the bus", "reboot the node; if it recurs, replace the GPU", True),
    92: ("High single-bit ECC error rate", "watch it; run DCGM diag", True),
    94: ("Contained ECC error", "restart the application; reset the GPU when convenient", False),
    95: ("Uncontained ECC error", "reset the GPU (reboot the node)", True),
    119: ("GSP RPC timeout", "reset the GPU (reboot the node)", True),
    120: ("GSP error", "reset the GPU (reboot the node)", True),
}

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+),\s*(.*)$")


def parse_xids(log: str) -> list[tuple[str, int, str]]:
    """(PCI address, XID, the driver's text) for each XID line of a kernel log."""
    return [
        (m.group(1), int(m.group(2)), m.group(3).strip())
        for m in map(_XID.search, log.splitlines())
        if m
    ]


def xid_check(events: list[tuple[str, int, str]]) -> CheckResult:
    name = "hardware.xid"
    counts = Counter((bus, code) for bus, code, _ in events)
    lines, node_fault = [], False
    for (bus, code), n in sorted(counts.items(), key=lambda item: (item[0][1], item[0][0])):
        meaning, action, fault = CATALOG.get(
            code, ("not in this self-test's table", f"look it up in {CATALOG_URL}", False)
        )
        node_fault |= fault
        lines.append(f"Xid {code} on PCI:{bus} (x{n}): {meaning}: {action}")
    status = "FAIL" if node_fault else "WARN" if events else "PASS"
    return CheckResult(
        name,
        status,
        len(events),
        "XID events",
        0,
        f"kernel log since boot; meanings from NVIDIA's XID catalog ({CATALOG_URL})",
        "; ".join(lines),
        details={"events": events},
    )


def run(ctx: SelfTestContext) -> CheckResult:
    log = kernel_log()
    if not log.ok:
        return CheckResult("hardware.xid", "SKIP", reason=f"kernel log not readable: {log.problem}")
    return xid_check(parse_xids(log.text))
