"""The run's results as Prometheus metrics, pushed to a Pushgateway (--pushgateway-url,
SELFTEST_PUSHGATEWAY_URL) so every run leaves a history: standard library only, the text
exposition format (version 0.0.4), one group per node.

Each node's group is `PUT /metrics/job/gpu-platform-selftest/node/<node>`: a PUT replaces the
whole group (Pushgateway README, "PUT method"), so a GPU or check that disappears does not
linger from an older run. Samples carry no timestamp (the Pushgateway rejects them); Prometheus
scrapes the Pushgateway with honorLabels: true so `node` and `job` stay as pushed.

Metrics (bootstrap/README.md, "Metrics"):
- gpu_platform_selftest_check_status{check,node,status}: 1 for the check's status, 0 for the
  other four (PASS, WARN, FAIL, SKIP, INFO);
- gpu_platform_selftest_figure{check,node,gpu,unit}: each numeric figure; `gpu` is the GPU's
  index on the node for per-GPU figures, "" for the node's;
- gpu_platform_selftest_figure_floor{check,node,gpu,unit}: the minimum a figure was held to,
  with the labels of that figure's series, so `figure < on(check, node, gpu, unit) figure_floor`
  joins (the SelfTestBelowFloor alert, the dashboard's history row). Only where the check marked
  its threshold a floor (CheckResult.floor): a latency's ceiling or an expected count is none;
- gpu_platform_selftest_last_run_timestamp_seconds{node}: when the run ended (Unix time)."""

from __future__ import annotations

import urllib.error
import urllib.parse
from collections.abc import Iterable

from trainkit.pushgateway import labels as _labels
from trainkit.pushgateway import put

from selftest.result import FRACTION_UNIT, SEVERITY, CheckResult, merge

JOB = "gpu-platform-selftest"
PREFIX = "gpu_platform_selftest_"
HELP = {
    "check_status": "1 for the status of the check in the node's last run, 0 for the others.",
    "figure": "A figure the node's last run measured, in `unit`; `gpu` empty for the node's.",
    "figure_floor": "The minimum the figure with the same labels was held to, in `unit`.",
    "last_run_timestamp_seconds": "When the node's last self-test run ended, Unix time.",
}
# A rank's results: (its node, its GPU index on the node, what it measured).
RankResults = tuple[str, int, list[CheckResult]]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def by_node(per_rank: Iterable[RankResults]) -> dict[str, list[tuple[int, list[CheckResult]]]]:
    """Each node's ranks: (GPU index, results)."""
    nodes: dict[str, list[tuple[int, list[CheckResult]]]] = {}
    for node, gpu, results in per_rank:
        nodes.setdefault(node, []).append((gpu, results))
    return nodes


def figure_rows(ranks: list[tuple[int, list[CheckResult]]]) -> list[CheckResult]:
    """The rows one node's figures are pushed from: a node's figure once, from the rank whose
    result the node reports; a per-GPU figure (its rank put its GPU index in details["gpu"])
    from every rank."""
    merged = merge([results for _, results in sorted(ranks, key=lambda r: r[0])])
    per_gpu = [r for _, results in ranks for r in results if "gpu" in r.details]
    return [r for r in merged if "gpu" not in r.details] + per_gpu


def samples(node: str, ranks: list[tuple[int, list[CheckResult]]]) -> dict[str, list[str]]:
    """Sample lines by metric for one node, from each of its ranks' results."""
    out: dict[str, list[str]] = {name: [] for name in HELP}
    merged = merge([results for _, results in sorted(ranks, key=lambda r: r[0])])
    for result in merged:
        for status in SEVERITY:
            out["check_status"].append(
                f"{PREFIX}check_status{_labels(check=result.name, node=node, status=status)} "
                f"{int(result.status == status)}"
            )
    figures: dict[str, float] = {}
    floors: dict[str, float] = {}
    for result in figure_rows(ranks):
        gpu = str(result.details.get("gpu", ""))
        _figure(figures, node, result.name, gpu, result.unit, result.value)
        if "fraction" in result.details:
            _figure(figures, node, result.name, gpu, FRACTION_UNIT, result.details["fraction"])
        if result.floor is not None:
            # The floor's series carries the figure's labels: the alert joins on all of them.
            _figure(floors, node, result.name, gpu, result.floor.unit, result.floor.value)
    for result in merged:
        for extra in result.details.get("figures", []):
            _figure(figures, node, result.name, str(extra["gpu"]), extra["unit"], extra["value"])
    out["figure"] = [f"{PREFIX}figure{labels} {value:g}" for labels, value in figures.items()]
    out["figure_floor"] = [
        f"{PREFIX}figure_floor{labels} {value:g}" for labels, value in floors.items()
    ]
    return out


def _figure(into: dict[str, float], node, check, gpu, unit, value) -> None:
    number = _number(value)
    if number is not None:
        into[_labels(check=check, node=node, gpu=gpu, unit=unit)] = number


def exposition(node: str, ranks: list[tuple[int, list[CheckResult]]], ended_at: float) -> str:
    """One node's group in the text exposition format."""
    lines_by_metric = samples(node, ranks)
    lines_by_metric["last_run_timestamp_seconds"] = [
        f"{PREFIX}last_run_timestamp_seconds{_labels(node=node)} {ended_at:.3f}"
    ]
    text = []
    for metric, lines in lines_by_metric.items():
        if lines:
            text += [f"# HELP {PREFIX}{metric} {HELP[metric]}", f"# TYPE {PREFIX}{metric} gauge"]
            text += lines
    return "\n".join(text) + "\n"


def group_url(base: str, node: str) -> str:
    return f"{base.rstrip('/')}/metrics/job/{JOB}/node/{urllib.parse.quote(node, safe='')}"


def push(base_url: str | None, per_rank: Iterable[RankResults], ended_at: float) -> CheckResult:
    """Push every node's group; the outcome is a check of its own (a Pushgateway that is down
    loses history, not the node's health: a WARN)."""
    name = "metrics.pushgateway"
    if not base_url:
        return CheckResult(name, "SKIP", reason="no Pushgateway configured (--pushgateway-url)")
    pushed, problems = 0, []
    for node, ranks in by_node(per_rank).items():
        body, url = exposition(node, ranks, ended_at), group_url(base_url, node)
        try:
            put(url, body)
            pushed += sum(1 for line in body.splitlines() if not line.startswith("#"))
        except urllib.error.HTTPError as error:
            problems.append(f"{url}: HTTP {error.code}: {error.read().decode(errors='replace')}")
        except OSError as error:
            problems.append(f"{url}: {error}")
    return CheckResult(
        name,
        "WARN" if problems else "PASS",
        pushed,
        "series",
        "HTTP 200 per node",
        f"Pushgateway PUT /metrics/job/{JOB}/node/<node>",
        "; ".join(problems).strip(),
    )
