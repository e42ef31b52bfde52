"""Metrics: this node's DCGM exporter answers (port 9400) and exports this node's GPUs; and
where GPU autoscalers are configured, Prometheus serves the metric they scale on for the
self-test's own pods (DCGM's pod labels arrive as exported_* with honorLabels false, FACTS.md)."""

from __future__ import annotations

import json
import os
import re
import socket
import time
import urllib.parse
import urllib.request

from contract.env import NODE_NAME, POD_NAME, POD_NAMESPACE
from selftest.context import SelfTestContext
from selftest.result import CheckResult

GPU_METRIC = "DCGM_FI_DEV_GPU_UTIL"
TIMEOUT_S = 5.0

# Prometheus text exposition format: `name{label="value",...} value [timestamp]`; label values
# escape backslash, double quote and newline.
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?\s*')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def parse_prometheus_text(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Samples as (metric name, labels, value); comment and blank lines skipped."""
    samples = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            raise ValueError(f"not a Prometheus sample line: {line!r}")
        name, _, body, value, _ = match.groups()
        labels = {
            key: re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group(0)], raw)
            for key, raw in _LABEL.findall(body or "")
        }
        samples.append((name, labels, float(value)))
    return samples


def exported_gpus(text: str, hostname: str | None) -> set[str]:
    """The `gpu` label of every GPU-utilisation series for this host (DCGM labels it `Hostname`,
    newer releases `hostname`); no hostname given counts every series."""
    gpus = set()
    for name, labels, _ in parse_prometheus_text(text):
        host = labels.get("Hostname", labels.get("hostname"))
        if name == GPU_METRIC and (hostname is None or host == hostname):
            gpus.add(labels.get("gpu", ""))
    return gpus


def http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        return response.read().decode()


def dcgm_check(ctx: SelfTestContext, hostname: str | None) -> CheckResult:
    name = "metrics.dcgm_exporter"
    if not ctx.dcgm_exporter_url:
        return CheckResult(name, "SKIP", reason="no DCGM exporter URL configured (CPU run)")
    started = time.perf_counter()
    try:
        text = http_get(ctx.dcgm_exporter_url)
    except OSError as error:
        return CheckResult(
            name, "FAIL", None, "GPUs", ctx.expected_gpus, "DCGM exporter on :9400",
            f"DCGM exporter unreachable at {ctx.dcgm_exporter_url}: {error}",
            time.perf_counter() - started,
        )  # fmt: skip
    gpus = exported_gpus(text, hostname)
    ok = len(gpus) == ctx.expected_gpus
    reason = "" if ok else (
        f"{len(gpus)} GPUs exported for host {hostname!r}, {ctx.expected_gpus} expected"
    )  # fmt: skip
    return CheckResult(
        name, "PASS" if ok else "FAIL", len(gpus), "GPUs", ctx.expected_gpus,
        f"{GPU_METRIC} series labelled with this node's hostname", reason,
        time.perf_counter() - started,
    )  # fmt: skip


def autoscaler_query(namespace: str, pod: str) -> str:
    """The per-pod GPU-utilisation series a KEDA Prometheus trigger scales on (FACTS.md)."""
    return f'{GPU_METRIC}{{exported_namespace="{namespace}",exported_pod="{pod}"}}'


def prometheus_series(prometheus_url: str, query: str) -> list[dict]:
    """The result vector of an instant query (Prometheus HTTP API /api/v1/query)."""
    url = f"{prometheus_url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    doc = json.loads(http_get(url))
    if doc.get("status") != "success":
        raise ValueError(f"Prometheus answered {doc.get('status')}: {doc.get('error')}")
    return doc["data"]["result"]


def autoscaler_check(ctx: SelfTestContext, namespace: str, pod: str) -> CheckResult:
    name = "metrics.autoscaler_metric"
    if not ctx.autoscaler_metric:
        return CheckResult(name, "SKIP", reason="no GPU autoscaler configured")
    if not ctx.prometheus_url:
        return CheckResult(name, "FAIL", reason="a GPU autoscaler is configured, but no "
                           "Prometheus URL to ask for its metric")  # fmt: skip
    started = time.perf_counter()
    query = autoscaler_query(namespace, pod)
    try:
        series = prometheus_series(ctx.prometheus_url, query)
    except (OSError, ValueError) as error:
        return CheckResult(name, "FAIL", None, "series", ">= 1", query,
                           f"Prometheus query failed at {ctx.prometheus_url}: {error}",
                           time.perf_counter() - started)  # fmt: skip
    ok = len(series) > 0
    return CheckResult(
        name, "PASS" if ok else "FAIL", len(series), "series", ">= 1", query,
        "" if ok else f"no {GPU_METRIC} series for pod {namespace}/{pod}",
        time.perf_counter() - started,
    )  # fmt: skip


def run(ctx: SelfTestContext, env: dict[str, str] | None = None) -> list[CheckResult]:
    """The node and pod come from the downward API (NODE_NAME, POD_NAMESPACE, POD_NAME)."""
    env = os.environ if env is None else env
    hostname = env.get(NODE_NAME) or socket.gethostname()
    pod = env.get(POD_NAME) or socket.gethostname()
    namespace = env.get(POD_NAMESPACE, "default")
    return [dcgm_check(ctx, hostname), autoscaler_check(ctx, namespace, pod)]
