"""Team cost benchmark: `make bench-rules`.

What the team cost figures cost Prometheus as a month fills with jobs. A range selector hands
the engine every sample in its range, so what matters is which series are read over the month:

- the month to date (components/observability/team_cost.py), every 5 minutes: it reads its own
  previous value over 31 days, kept per team, queue and pool, so its samples grow with the days
  gone and not with the jobs;
- the Team cost dashboard's GPU-hours by job, each time the table loads: the GPUs running per
  job over the month so far, whose series exist only while a job runs;
- `python -m jobs usage` for the month, once: the same series through a 5-minute subquery.

Prometheus 2.42 (the Debian package's server, promtool's version) serves a TSDB backfilled with
`promtool tsdb create-blocks-from openmetrics`: JOBS jobs spread over the month's first DAYS
days, each running 8 GPUs for JOB_HOURS hours, and the month to date of each team, written at
the rules' 5-minute step as the rules would have. Each query is asked at the last step through
the HTTP API (`stats=all`, `totalQueryableSamples`, with
`--enable-feature=promql-per-step-stats`), best of REPEATS.

Measured on 2026-12-05 (2 cores, this bench before the fix): with the month to date kept per
job, one evaluation at 1,000 jobs on the 28th took 1,934 ms and loaded 16,144,328 samples (the
rule reads its previous value twice); Prometheus refuses a query past 50 million
(`--query.max-samples`), about 3,100 jobs by the 28th.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from components.observability.monitoring import dashboards
from components.observability.team_cost import (
    GPU_HOURS_MTD,
    INTERVAL_MINUTES,
    MONTH_STAMP,
    RUNNING,
    team_cost_rules,
)
from jobs.usage import month_window, usage_query
from model.stacks import stack_config

STEP = INTERVAL_MINUTES * 60
JOBS = (100, 1000, 10000)
DAYS = 28
JOB_HOURS = 24
TEAMS = 8
GPUS = 8
REPEATS = 5
MONTH_START = datetime(2026, 11, 1, tzinfo=UTC)
END = int(MONTH_START.timestamp()) + DAYS * 86400
MONTH = 2026 * 12 + 11
POOL = "h100-ondemand"


def team_labels(team: int) -> str:
    return f'namespace="team-{team}",cluster_queue="shared",pool="{POOL}"'


def openmetrics(jobs: int) -> str:
    """What the rules would have written by END: each job's GPUs running while it ran (jobs
    start evenly over the days), and each team's month to date and the month stamp at every
    step."""
    steps = range(int(MONTH_START.timestamp()) + STEP, END + 1, STEP)
    per_job = JOB_HOURS * 3600 // STEP
    spacing = max(1, (len(steps) - per_job) // jobs)
    lines = [f"# TYPE {RUNNING} gauge"]
    running_by_team: dict[int, list[float]] = {t: [0.0] * len(steps) for t in range(TEAMS)}
    for job in range(jobs):
        team = job % TEAMS
        labels = f'{{{team_labels(team)},job_name="job-{job:05d}"}}'
        first = (job * spacing) % (len(steps) - per_job)
        for i in range(first, first + per_job):
            lines.append(f"{RUNNING}{labels} {GPUS} {steps[i]}")
            running_by_team[team][i] += GPUS
    lines.append(f"# TYPE {MONTH_STAMP} gauge")
    lines += [f"{MONTH_STAMP} {MONTH} {t}" for t in steps]
    lines.append(f"# TYPE {GPU_HOURS_MTD} gauge")
    for team, running in running_by_team.items():
        total = 0.0
        for t, gpus in zip(steps, running, strict=True):
            total += gpus * STEP / 3600
            lines.append(f"{GPU_HOURS_MTD}{{{team_labels(team)}}} {total} {t}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """Prometheus serving `data`, with no scrape and no rule of its own."""

    def __init__(self, data: Path):
        self.port = free_port()
        config = data.parent / "prometheus.yml"
        config.write_text("global: {}\n")
        self.process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=10y",
                "--enable-feature=promql-per-step-stats",
                "--log.level=error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def query(self, expr: str, at: int) -> tuple[float, int, int]:
        """Wall seconds, the samples it loaded and the series it returned."""
        params = urllib.parse.urlencode({"query": expr, "time": at, "stats": "all"})
        started = time.perf_counter()
        with urllib.request.urlopen(
            f"http://127.0.0.1:{self.port}/api/v1/query?{params}", timeout=300
        ) as answer:
            body = json.load(answer)
        wall = time.perf_counter() - started
        samples = body["data"]["stats"]["samples"]["totalQueryableSamples"]
        return wall, samples, len(body["data"]["result"])

    def best(self, expr: str, at: int) -> tuple[float, int, int]:
        runs = [self.query(expr, at) for _ in range(REPEATS)]
        return min(r[0] for r in runs), runs[0][1], runs[0][2]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def queries() -> list[tuple[str, str, int]]:
    """(what, PromQL, time) of the three readers, as the program writes them for prod."""
    rule = next(r.expr for r in team_cost_rules(stack_config("prod")) if r.name == GPU_HOURS_MTD)
    board = json.loads(dashboards()["team-cost"])
    table = next(p for p in board["panels"] if p["id"] == 3)["targets"][0]["expr"]
    # As Grafana sends it: every team chosen, the panel's range the month so far.
    table = table.replace("$team", ".*").replace(
        "$__range", f"{END - MONTH_START.timestamp():.0f}s"
    )
    usage, at = usage_query(month_window("2026-11", datetime.fromtimestamp(END, UTC)), None)
    return [
        ("month to date rule", rule, END),
        ("dashboard by job", table, END),
        ("jobs usage", usage, at),
    ]


def measure(jobs: int) -> list[tuple[float, int, int]]:
    work = Path(tempfile.mkdtemp(prefix="bench-rules-"))
    try:
        source = work / "series.om"
        source.write_text(openmetrics(jobs))
        data = work / "data"
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(source), str(data)],
            check=True,
            capture_output=True,
        )
        source.unlink()
        server = Server(data)
        try:
            return [server.best(expr, at) for _, expr, at in queries()]
        finally:
            server.stop()
    finally:
        shutil.rmtree(work)


def main() -> None:
    readers = [what for what, _, _ in queries()]
    print(
        f"Team cost on Prometheus 2.42 on day {DAYS} of a month: jobs of {GPUS} GPUs for "
        f"{JOB_HOURS} h, {TEAMS} teams; best of {REPEATS}\n"
    )
    print(f"{'jobs':>6}" + "".join(f"{w + ' ms':>24}{'samples':>12}" for w in readers))
    rows = {}
    for jobs in JOBS:
        rows[jobs] = measure(jobs)
        print(f"{jobs:>6}" + "".join(f"{1000 * s:>24.1f}{n:>12,}" for s, n, _ in rows[jobs]))
    low, high = JOBS[0], JOBS[-1]
    ratio = rows[high][0][1] / rows[low][0][1]
    print(
        f"\nmonth to date samples, {high:,} jobs over {low:,}: {ratio:.2f} (target: 1, flat in "
        "jobs); every query under Prometheus's 50,000,000-sample limit"
    )


if __name__ == "__main__":
    main()
