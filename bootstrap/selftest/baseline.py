"""Holding a run's figures to its pool's stored baseline: what a GPU-stack change's canary adds
to the self-test (docs/selftest.md, "Held to the pool's baseline").

With SELFTEST_BASELINE_POOL set, rank 0 asks Prometheus (SELFTEST_PROMETHEUS_URL) for the pool's
baseline, the series the program's rules record (contract/baseline.py: per check and unit, the
median of the pool's nodes' last passing figures), and holds each figure of HELD_FIGURES the run
measured, as it pushes them, to baseline × (1 − SELFTEST_BASELINE_TOLERANCE). Each node gets a
row `baseline.<check>` per held figure: FAIL below the bar, naming the figure, what was
measured, the baseline, the tolerance and the pool; PASS otherwise. A FAIL fails the run like
any check: the canary Job fails, and the roll stops.

No baseline to hold the run to (the pool never pushed a passing figure in the window, as on a
first roll, or Prometheus did not answer) is one WARN row, `baseline`, saying the run was held
to its floors only and why: never a silent PASS, and never a FAIL for want of history, which a
canary on a new stack or a new pool could never pass, stopping every first roll. A held figure
the pool has no baseline for is a WARN of its own."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping

from contract.baseline import BASELINE_RECORD, HELD_FIGURES, ROW_PREFIX
from contract.env import (
    SELFTEST_BASELINE_POOL,
    SELFTEST_BASELINE_TOLERANCE,
    SELFTEST_PROMETHEUS_URL,
)
from selftest import push
from selftest.metrics import prometheus_series
from selftest.result import SEVERITY, CheckResult, Floor

NAME = "baseline"
# A figure may fall 10 % below its pool's median before the canary fails: the spread of one
# pool's healthy nodes' figures (clocks, thermals, the run's own noise) stays inside it, while a
# stack that costs a tenth of the GPU's throughput is a regression worth stopping a roll for.
DEFAULT_TOLERANCE = 0.1
FLOORS_ONLY = "held to its floors only"
Baselines = dict[tuple[str, str], float]


def enabled(env: Mapping[str, str]) -> bool:
    return bool(env.get(SELFTEST_BASELINE_POOL))


def tolerance(env: Mapping[str, str]) -> float:
    """SELFTEST_BASELINE_TOLERANCE as a fraction in [0, 1); unset, DEFAULT_TOLERANCE. A bad
    value stops the run before any check, naming the variable and the value."""
    text = env.get(SELFTEST_BASELINE_TOLERANCE, "").strip()
    if not text:
        return DEFAULT_TOLERANCE
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < 1:  # NaN fails it too
        raise SystemExit(
            f"{SELFTEST_BASELINE_TOLERANCE}={text!r}: not a fraction from 0 up to (not "
            f"including) 1; e.g. {DEFAULT_TOLERANCE} lets a figure fall 10 % below its pool's "
            "baseline"
        )
    return value


def query(pool: str) -> str:
    return f'{BASELINE_RECORD}{{pool="{pool}"}}'


def baselines(prometheus_url: str, pool: str) -> Baselines:
    """The pool's baseline per held (check, unit); a figure not held is left out."""
    found = {}
    for series in prometheus_series(prometheus_url, query(pool)):
        key = (series["metric"].get("check", ""), series["metric"].get("unit", ""))
        if key in HELD_FIGURES:
            found[key] = float(series["value"][1])
    return found


def measured(ranks: list[tuple[int, list[CheckResult]]]) -> dict[tuple[str, str], list]:
    """One node's held figures as it pushes them, per (check, unit): [(GPU index or "", value)].
    A check that was not run (SKIP) measured nothing to hold."""
    found: dict[tuple[str, str], list] = {}
    for row in push.figure_rows(ranks):
        key = (row.name, row.unit)
        number = row.value if isinstance(row.value, int | float) else None
        if key in HELD_FIGURES and row.status != "SKIP" and number is not None:
            found.setdefault(key, []).append((row.details.get("gpu", ""), float(number)))
    return found


def hold_node(
    node: str, figures: dict[tuple[str, str], list], known: Baselines, tol: float, pool: str
) -> list[CheckResult]:
    """One node's rows: each held figure it measured against its pool's baseline."""
    rows = []
    for (check, unit), values in figures.items():
        name = ROW_PREFIX + check
        lowest = min(v for _, v in values)
        if (check, unit) not in known:
            why = f"pool {pool} has no baseline for {check} ({unit}): {FLOORS_ONLY}"
            rows.append(CheckResult(name, "WARN", lowest, unit, source=query(pool), reason=why))
            continue
        base = known[(check, unit)]
        bar = base * (1 - tol)
        under = [(gpu, v) for gpu, v in sorted(values, key=lambda f: f[1]) if v < bar]
        where = ", ".join(f"{v:.4g} {unit} on {_place(node, gpu)}" for gpu, v in under)
        reason = (
            f"{check}: {where} under pool {pool}'s baseline {base:.4g} {unit} less the "
            f"tolerance {tol:g} ({bar:.4g} {unit})"
            if under
            else ""
        )
        threshold = f">= {bar:.4g} ({1 - tol:.0%} of the baseline {base:.4g})"
        source = f"{query(pool)}, less {SELFTEST_BASELINE_TOLERANCE}={tol:g}"
        status = "FAIL" if under else "PASS"
        floor = Floor(bar, unit)
        rows.append(CheckResult(name, status, lowest, unit, threshold, source, reason, floor=floor))
    return rows


def _place(node: str, gpu) -> str:
    return f"node {node}" + ("" if gpu == "" else f" GPU {gpu}")


def hold(
    env: Mapping[str, str], prometheus_url: str | None, per_rank: Iterable[push.RankResults]
) -> dict[str, list[CheckResult]]:
    """Each node's baseline rows (pushed with its group); for every node, the one WARN where the
    pool has no baseline to hold the run to."""
    started = time.perf_counter()
    pool, tol = env[SELFTEST_BASELINE_POOL], tolerance(env)
    nodes = push.by_node(per_rank)
    known: Baselines = {}
    if not prometheus_url:
        why = f"no Prometheus to ask for pool {pool}'s baseline ({SELFTEST_PROMETHEUS_URL} unset)"
    else:
        try:
            known = baselines(prometheus_url, pool)
            why = (
                f"pool {pool} has no baseline ({query(pool)} is empty: none of its nodes pushed "
                "a passing figure in alerts.baseline_window, as on a first roll)"
            )
        except (OSError, ValueError, KeyError) as error:
            why = f"Prometheus at {prometheus_url} did not answer {query(pool)}: {error}"
    figures = {node: measured(ranks) for node, ranks in nodes.items()}
    if known and not any(figures.values()):
        why = f"the run measured none of the figures held to pool {pool}'s baseline"
    if not known or not any(figures.values()):
        warn = CheckResult(NAME, "WARN", source=query(pool), reason=f"{why}: {FLOORS_ONLY}",
                           duration_s=time.perf_counter() - started)  # fmt: skip
        return {node: [warn] for node in nodes}
    return {node: hold_node(node, found, known, tol, pool) for node, found in figures.items()}


def report_rows(by_node: dict[str, list[CheckResult]]) -> list[CheckResult]:
    """One row per name for the report: the worst node's (its reason names the node)."""
    worst: dict[str, CheckResult] = {}
    for rows in by_node.values():
        for row in rows:
            if row.name not in worst or SEVERITY[row.status] > SEVERITY[worst[row.name].status]:
                worst[row.name] = row
    return list(worst.values())
