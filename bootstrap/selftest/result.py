"""One check's outcome, as the report carries it, and the guard that keeps a fault from ending
the run: whatever a check raises becomes a FAIL with its reason, and the rest still runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

# INFO: a figure measured with no threshold to hold it to. It is reported, never judged: it
# neither passes nor fails a run, and a report's status is one of the other four.
Status = Literal["PASS", "WARN", "FAIL", "SKIP", "INFO"]
# Worst first: a report's status is the worst of its checks'.
SEVERITY: dict[str, int] = {"FAIL": 3, "WARN": 2, "PASS": 1, "INFO": 0, "SKIP": 0}


# The unit of a figure measured as a share of its datasheet peak (details["fraction"]), which
# the Pushgateway gets as a figure of its own (push.py).
FRACTION_UNIT = "fraction of peak"


@dataclass(frozen=True)
class Floor:
    """A lower bound one of the check's figures was held to: `value` in `unit`, the unit of the
    figure it bounds (the check's own, or "fraction of peak"). Set only where a check judges a
    figure against a minimum, never read off `threshold`, which may also be a ceiling (a
    latency) or an expected count (GPUs, devices)."""

    value: float
    unit: str


@dataclass
class CheckResult:
    """A measured value against its threshold, and where that threshold comes from."""

    name: str
    status: Status
    value: float | int | str | None = None
    unit: str = ""
    threshold: float | int | str | None = None
    source: str = ""
    reason: str = ""
    duration_s: float = 0.0
    # Series for the HTML report's plots (bus bandwidth per size, loss per step, latencies);
    # not part of the JSON report's check schema.
    details: dict[str, Any] = field(default_factory=dict)
    # The minimum the figure was judged by, for the Pushgateway's figure_floor series (push.py);
    # like `details`, not part of the JSON report's check schema.
    floor: Floor | None = None

    def as_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc.pop("details")
        doc.pop("floor")
        return doc


def worst(statuses: Iterable[str]) -> Status:
    """The report's status: FAIL over WARN over PASS; nothing judged (only SKIPs and INFOs, or
    nothing) is a SKIP."""
    judged = [status for status in statuses if status != "INFO"]
    return max(judged, key=SEVERITY.__getitem__, default="SKIP")  # type: ignore[return-value]


def run_check(name: str, check: Callable[[], list[CheckResult]]) -> list[CheckResult]:
    """Run one group of checks; an exception is a FAIL naming it, never the end of the run."""
    started = time.perf_counter()
    try:
        return check()
    except Exception as error:  # a fault is reported as a FAIL, never the end of the run
        reason = f"{type(error).__name__}: {error}"
        return [CheckResult(name, "FAIL", reason=reason, duration_s=time.perf_counter() - started)]


def merge(per_rank: list[list[CheckResult]]) -> list[CheckResult]:
    """One row per check: the worst rank's result, naming that rank when ranks disagree. The
    inputs are left as they are (the Pushgateway's per-node figures read them again)."""
    by_name: dict[str, list[tuple[int, CheckResult]]] = {}
    for rank, results in enumerate(per_rank):
        for result in results:
            by_name.setdefault(result.name, []).append((rank, result))
    merged = []
    for entries in by_name.values():
        rank, chosen = max(entries, key=lambda e: (SEVERITY[e[1].status], -e[0]))
        if len({r.status for _, r in entries}) > 1:
            chosen = replace(chosen, reason=f"rank {rank}: {chosen.reason}".rstrip(": "))
        merged.append(chosen)
    return merged
