"""DCGM's own diagnostic, `dcgmi diag -r 1` (deployment checks, seconds) in the short check
set and `-r 2` (adds the PCIe and GPU memory tests, about two minutes) in the full one, unless
the run sets its own level (--dcgm-level: the node-join check runs the pool's), against the
node's DCGM host engine (--dcgm-hostengine: the GPU Operator's standalone nv-hostengine, port
5555, which the program names on every run that includes this group). The diagnostic runs in
the engine, the image only asks (dcgmi, bootstrap/Dockerfile). SKIP with the reason when dcgmi
is not in the image or the engine does not answer.

The result table is read as dcgmi prints it: `| <test> | Pass / Fail / Warn / Skip [- All] |`,
with an `Error` or `Warning` row after a failing test whose text wraps over further rows."""

from __future__ import annotations

import re
import socket
import time

from contract.dcgm import CHECK_SET_LEVELS, DIAG_TIMEOUT_S, HOSTENGINE_PORT
from selftest.context import SelfTestContext
from selftest.result import CheckResult
from selftest.tools import run_tool

_ROW = re.compile(r"^\|\s(.{2,}?)\s*\|\s(.*?)\s*\|$")
_NOTES = {"Error", "Warning", "Info"}


def parse_diag(text: str) -> list[dict]:
    """Tests with their result and the error / warning text that follows them."""
    tests: list[dict] = []
    for line in text.splitlines():
        row = _ROW.match(line.strip())
        if not row or row.group(1).startswith("-") or row.group(1) == "Diagnostic":
            continue
        label, cell = row.group(1).strip(), row.group(2)
        if label in _NOTES and tests:
            tests[-1].setdefault(label.lower(), []).append(cell)
        elif not label and tests:  # a wrapped note continues the last one
            note = next((k for k in ("warning", "error", "info") if k in tests[-1]), None)
            if note:
                tests[-1][note][-1] += cell
        elif label:
            tests.append({"test": label, "result": cell})
    return [t for t in tests if t["result"].split(" ")[0] in ("Pass", "Fail", "Warn", "Skip")]


def diag_check(tests: list[dict], level: int) -> CheckResult:
    name = "hardware.dcgm_diag"
    if not tests:
        return CheckResult(name, "WARN", reason=f"dcgmi diag -r {level} printed no result table")
    failed = [t for t in tests if t["result"].startswith("Fail")]
    warned = [t for t in tests if t["result"].startswith("Warn")]

    def say(t: dict) -> str:
        notes = " ".join(t.get("error", []) + t.get("warning", []))
        return f"{t['test']}: {t['result']}" + (f" ({notes})" if notes else "")

    status = "FAIL" if failed else "WARN" if warned else "PASS"
    return CheckResult(
        name,
        status,
        len(failed),
        "tests failed",
        0,
        f"dcgmi diag -r {level}",
        "; ".join(say(t) for t in failed + warned),
        details={"tests": tests},
    )


# The engine's pod starts with the node's other GPU Operator pods, after the container toolkit
# is validated, and is ready 15 s later (its probes, gpu-operator v26.7.0 assets/state-dcgm/
# 0400_dcgm.yml): a node-join run on a node that has just joined may ask before it answers, and
# a SKIP then would release the node without DCGM's diagnostic.
ENGINE_WAIT_S = 120.0
RETRY_S = 5.0


def reachable(
    address: str, wait_s: float = 0.0, clock=time.monotonic, sleep=time.sleep
) -> str | None:
    """None when the host engine accepts a connection within `wait_s`, else why not."""
    host, _, port = address.rpartition(":") if ":" in address else (address, "", "")
    deadline = clock() + wait_s
    while True:
        try:
            with socket.create_connection((host, int(port or HOSTENGINE_PORT)), timeout=3):
                return None
        except OSError as error:
            if clock() >= deadline:
                waited = f" after {wait_s:g} s" if wait_s else ""
                return f"DCGM host engine at {address} unreachable{waited}: {error}"
        sleep(RETRY_S)


def run(ctx: SelfTestContext) -> CheckResult:
    name = "hardware.dcgm_diag"
    if not ctx.dcgm_hostengine:
        return CheckResult(
            name, "SKIP", reason="no DCGM host engine configured (--dcgm-hostengine)"
        )
    problem = reachable(ctx.dcgm_hostengine, ENGINE_WAIT_S)
    if problem:
        return CheckResult(name, "SKIP", reason=problem)
    level = ctx.dcgm_level or CHECK_SET_LEVELS[ctx.check_set]
    diag = run_tool(
        ["dcgmi", "diag", "--host", ctx.dcgm_hostengine, "-r", str(level)], DIAG_TIMEOUT_S[level]
    )
    if not diag.ok and not diag.text:
        return CheckResult(name, "SKIP", reason=diag.problem)
    # dcgmi exits non-zero when a test fails; the table still says which.
    return diag_check(parse_diag(diag.text), level)
