"""`python -m jobs usage --stack S --month YYYY-MM [--team T] [--format csv|table]`: each team's
GPU-hours and their cost in a month, by ClusterQueue, pool and job: a finance export.

GPU-hours are the month's exact sum of the team cost rules' GPUs running
(components/observability/team_cost.py, `gpu_platform_team:gpus_running`, physical GPUs of
Running pods by namespace, cluster_queue, pool, job_name), one instant query at the month's end
(or now, for the month under way) over a subquery at the rules' 5-minute interval: each point
stands for the 5 minutes that end at it, as the rules' month to date counts them, and the points
are those of the UTC month, its first instant in and the next month's out. USD is GPU-hours at
each pool's price per GPU-hour (model/cost.py, pool_gpu_hour_prices: the catalog's, in the stack's
region and capacity kind), the price the rules record; an existing cluster's pools have none, so
its export has GPU-hours only.

CSV columns (one row per team, queue, pool and job with GPU-hours in the month; `job` empty for
a pod of no Job or JobSet):
  month          the month, YYYY-MM (UTC)
  team           the team's namespace
  cluster_queue  the ClusterQueue its LocalQueue points at
  pool           the GPU pool the pods ran on
  job            the JobSet's name, else the Job's
  gpu_hours      physical GPU-hours, 3 decimals
  gpu_hour_usd   the pool's price per GPU-hour; empty where the pool has none
  usd            gpu_hours x gpu_hour_usd, 2 decimals; empty where the pool has no price

Prometheus is asked at --prometheus-url, else through the API server's service proxy as
`jobs status` asks it (jobs/status.py). Exit 0 with the export; 1 when Prometheus cannot answer;
2 on a bad stack, month, team or format."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlencode

from components.observability.team_cost import INTERVAL_MINUTES, RUNNING
from jobs.common import SubmitError, kubeconfig
from jobs.kubectl import Kubectl, KubectlError
from jobs.status import PrometheusError, prometheus_proxy
from model.config import ConfigError, PlatformConfig
from model.cost import pool_gpu_hour_prices
from model.stacks import ROOT, stack_config

COLUMNS = ("month", "team", "cluster_queue", "pool", "job", "gpu_hours", "gpu_hour_usd", "usd")
MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
STEP = INTERVAL_MINUTES * 60


class UsageError(Exception):
    """Bad input: the message names the flag, the value and what is valid."""


@dataclass(frozen=True)
class Window:
    """The month's first instant and the end of what is asked: the next month's first instant,
    or now (to the rules' interval) while the month runs."""

    month: str
    start: int
    end: int


def month_window(month: str, now: datetime) -> Window:
    found = MONTH.match(month)
    if not found:
        raise UsageError(f"--month {month}: not a month; give YYYY-MM, e.g. 2026-11")
    year, number = int(found.group(1)), int(found.group(2))
    start = datetime(year, number, 1, tzinfo=UTC)
    after = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
    if start > now:
        raise UsageError(f"--month {month}: has not begun (now {now:%Y-%m-%d %H:%M} UTC)")
    end = min(int(after.timestamp()), int(now.timestamp()) // STEP * STEP)
    return Window(month, int(start.timestamp()), end)


def usage_query(window: Window, team: str | None) -> tuple[str, int]:
    """The query and the time to ask it at: the subquery's points are the multiples of STEP in
    (time - range, time], so asking one second before the window's end over its length takes
    every point from its start on and none of the next month's."""
    selector = f'{{namespace="{team}"}}' if team else ""
    length = window.end - window.start
    query = (
        f"sum by (namespace, cluster_queue, pool, job_name) "
        f"(sum_over_time({RUNNING}{selector}[{length}s:{STEP}s])) * {STEP} / 3600"
    )
    return query, window.end - 1


def ask(query: str, at: int, url: str | None, cluster: Kubectl | None, cfg: PlatformConfig) -> list:
    """Prometheus HTTP API `GET /api/v1/query?query=...&time=...` (prometheus.io/docs/
    prometheus/latest/querying/api/, "Instant queries"): the result vector."""
    params = urlencode({"query": query, "time": str(at)}, quote_via=quote)
    if url:
        where = url
        try:
            with urllib.request.urlopen(f"{url.rstrip('/')}/api/v1/query?{params}") as answer:
                body = answer.read()
        except (urllib.error.URLError, OSError) as error:
            raise PrometheusError(f"Prometheus at {url} could not be reached: {error}") from None
    else:
        namespace, service = prometheus_proxy(cfg)
        where = f"{namespace}/{service}"
        path = f"/api/v1/namespaces/{namespace}/services/{service}/proxy/api/v1/query?{params}"
        try:
            body = cluster.raw(path)
        except KubectlError as error:
            raise PrometheusError(
                f"Prometheus ({where}) could not be reached through the API server: {error}"
            ) from None
    try:
        answer = json.loads(body)
    except json.JSONDecodeError:
        raise PrometheusError(f"Prometheus ({where}) answered something not JSON") from None
    if answer.get("status") != "success":
        raise PrometheusError(
            f"Prometheus ({where}) refused the query: "
            f"{answer.get('errorType', '?')}: {answer.get('error', '')}"
        )
    return answer["data"]["result"]


def rows(result: list, window: Window, cfg: PlatformConfig) -> list[dict[str, str]]:
    prices = pool_gpu_hour_prices(cfg)
    found = []
    for sample in result:
        labels = sample["metric"]
        hours = float(sample["value"][1])
        price = prices.get(labels.get("pool", ""))
        usd = price.usd if price else None
        found.append(
            {
                "month": window.month,
                "team": labels.get("namespace", ""),
                "cluster_queue": labels.get("cluster_queue", ""),
                "pool": labels.get("pool", ""),
                "job": labels.get("job_name", ""),
                "gpu_hours": f"{hours:.3f}",
                "gpu_hour_usd": "" if usd is None else f"{usd:g}",
                "usd": "" if usd is None else f"{hours * usd:.2f}",
            }
        )
    return sorted(found, key=lambda r: tuple(r[c] for c in COLUMNS[1:5]))


def as_csv(found: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(found)
    return out.getvalue()


def as_table(found: list[dict[str, str]], window: Window, cfg: PlatformConfig) -> str:
    if not found:
        return f"{window.month}: no GPU-hours recorded"
    shown = [{**r, "job": r["job"] or "-", "usd": r["usd"] or "no price"} for r in found]
    columns = ("team", "cluster_queue", "pool", "job", "gpu_hours", "usd")
    widths = {c: max(len(c), *(len(r[c]) for r in shown)) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in columns) for r in shown]
    for team in sorted({r["team"] for r in found}):
        mine = [r for r in found if r["team"] == team]
        hours = sum(float(r["gpu_hours"]) for r in mine)
        usd = sum(float(r["usd"]) for r in mine if r["usd"])
        budget = next((t.monthly_budget_usd for t in cfg.scheduling.teams if t.name == team), None)
        of = f" of a ${budget:,.2f} budget" if budget else ""
        lines.append(f"{window.month} {team}: {hours:.3f} GPU-hours, ${usd:,.2f}{of}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jobs usage",
        description="Each team's GPU-hours and their cost in a month (UTC), by ClusterQueue, "
        "pool and job.",
    )
    p.add_argument("--stack", required=True, help="stacks/Pulumi.<stack>.yaml")
    p.add_argument("--month", required=True, help="YYYY-MM, UTC")
    p.add_argument("--team", help="one team (default: every team)")
    p.add_argument("--format", choices=("csv", "table"), default="table")
    p.add_argument("--prometheus-url", help="default: the stack's Prometheus, by kubeconfig")
    p.add_argument("--kubeconfig", help="default: existing.kubeconfig_path, else KUBECONFIG")
    return p


def main(argv: list[str] | None = None, root: Path = ROOT, now: datetime | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        cfg = stack_config(args.stack, root)
        teams = [t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)]
        if args.team is not None and args.team not in teams:
            raise UsageError(
                f"--team {args.team}: not a team of {args.stack}; one of {', '.join(teams)}"
            )
        window = month_window(args.month, now or datetime.now(UTC))
        cluster = None
        if not args.prometheus_url:
            binary = shutil.which("kubectl")
            if binary is None:
                raise UsageError(
                    "without --prometheus-url, jobs usage runs kubectl, which is not on PATH"
                )
            config = kubeconfig(args.kubeconfig, cfg, os.environ)
            cluster = Kubectl.of_stack(binary, config, cfg)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except (UsageError, SubmitError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    query, at = usage_query(window, args.team)
    try:
        result = ask(query, at, args.prometheus_url, cluster, cfg)
    except PrometheusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    found = rows(result, window, cfg)
    if args.format == "csv":
        sys.stdout.write(as_csv(found))
    else:
        print(as_table(found, window, cfg))
    return 0
