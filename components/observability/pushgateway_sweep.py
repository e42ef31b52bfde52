"""Deletes the Pushgateway's groups of one push job that have not been pushed to for longer than
the retention: the goodput groups of training jobs that finished or died. The Pushgateway keeps
every group until someone deletes it (Pushgateway README, "About timestamps": no TTL), so without
this every job ever run stays a series Prometheus scrapes and the dashboards sum.

Why a sweep and not trainkit deleting its own group at a clean finish: a delete right after the
last push races Prometheus's scrape and loses the job's final figures, and a job that dies never
reaches it. After the retention, Prometheus has long kept the figures in its own storage.

It runs as `python /sweep/pushgateway_sweep.py` in a stock Python image, from the ConfigMap the
Pushgateway component declares (components/observability/pushgateway.py): standard library only,
no file of this repository beside it. Configured from its environment:
PUSHGATEWAY_URL, SWEEP_JOB (the push job whose groups it deletes), RETENTION_SECONDS.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import urllib.request

TIMEOUT_S = 30.0


def group_path(labels: dict[str, str]) -> str:
    """`/metrics/job@base64/<job>/<name>@base64/<value>...`: every value base64url-encoded, an
    empty one as `=` (Pushgateway README, "URL"), so no value needs a case of its own."""

    def encoded(value: str) -> str:
        return base64.urlsafe_b64encode(value.encode()).decode().rstrip("=") or "="

    parts = ["metrics", "job@base64", encoded(labels["job"])]
    for name, value in sorted(labels.items()):
        if name != "job":
            parts += [f"{name}@base64", encoded(value)]
    return "/" + "/".join(parts)


def stale(groups: list[dict], job: str, now: float, retention_s: float) -> list[dict[str, str]]:
    """The grouping labels of `job`'s groups last pushed over `retention_s` ago, as
    `GET /api/v1/metrics` lists them (pushgateway v1.11.3 api/v1/api.go: each group's `labels`,
    and per metric family its `metrics`, a gauge's `value` a decimal string)."""
    found = []
    for group in groups:
        labels = group["labels"]
        pushed = group.get("push_time_seconds", {}).get("metrics", [])
        if labels.get("job") == job and pushed and now - float(pushed[0]["value"]) > retention_s:
            found.append(labels)
    return found


def main() -> int:
    base = os.environ["PUSHGATEWAY_URL"].rstrip("/")
    job, retention_s = os.environ["SWEEP_JOB"], float(os.environ["RETENTION_SECONDS"])
    with urllib.request.urlopen(f"{base}/api/v1/metrics", timeout=TIMEOUT_S) as answer:
        groups = json.load(answer)["data"]
    old = stale(groups, job, time.time(), retention_s)
    for labels in old:
        request = urllib.request.Request(base + group_path(labels), method="DELETE")
        with urllib.request.urlopen(request, timeout=TIMEOUT_S):
            pass
    print(f"deleted {len(old)} of {len(groups)} groups: job {job}, unpushed for {retention_s:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
