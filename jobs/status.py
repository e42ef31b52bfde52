"""`python -m jobs status NAME --stack S [--team T]`: what a submitted job is (jobs/state.py), its
restarts and their causes, its goodput, the checkpoint it would resume from, its checkpoint
interval beside the Young–Daly interval from its pool's failure rate, and its platform ledger
(jobs/platform_ledger.py: goodput and badput by cause, priced, for every job). Without NAME:
the team's summary of every job's platform ledger.

The cluster's object says the state and JobSet's restart counts; trainkit's goodput series
(contract/training_metrics.py, pushed to the Pushgateway as push job `training-goodput`) say the
causes, the GPU-seconds, the last checkpoint's step and what a save costs; the recorded
Young–Daly interval (components/observability/alerts.py, checkpoint_rules) comes with them. They
are read from the stack's
Prometheus through the API server's service proxy (`kubectl get --raw /api/v1/namespaces/<ns>/
services/<service>:<port>/proxy/...`, Kubernetes API "proxy" subresource of a Service), so the
command needs nothing but the kubeconfig `--apply` uses. Without Prometheus the state and
restarts are still printed, with why goodput is missing.

Exit 0 when the job was found; 1 when no job of that name is in the namespace (or the cluster
could not be asked); 2 on a bad stack, team or kubeconfig."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from components.observability.fleet_health import YOUNG_DALY
from components.vocabulary import prometheus_service
from contract.training_metrics import (
    ALLOCATED_GPU_SECONDS,
    CHECKPOINT_INTERVAL_SECONDS,
    CHECKPOINT_SECONDS,
    GOODPUT_PUSH_JOB,
    GOODPUT_SERIES,
    JOB_NODES,
    LAST_CHECKPOINT_STEP,
    LOST_GPU_SECONDS,
    PRODUCTIVE_GPU_SECONDS,
    RESTART_SECONDS,
    RESTARTS,
)
from jobs.common import SubmitError, destination, kubeconfig, load_workers
from jobs.kubectl import Kubectl, KubectlError, resource_type
from jobs.platform_ledger import platform_lines, team_lines
from jobs.state import JobState, job_state
from model.config import ConfigError, PlatformConfig
from model.stacks import ROOT, stack_config

# What a platform job is on the cluster: a JobSet (issue 28), or a batch Job, as the platform
# rendered jobs before; one `kubectl get` asks for both.
JOB_TYPES = ",".join(
    resource_type(api, kind)
    for api, kind in (("jobset.x-k8s.io/v1alpha2", "JobSet"), ("batch/v1", "Job"))
)


def prometheus_proxy(cfg: PlatformConfig) -> tuple[str, str]:
    """The Prometheus Service's `namespace` and `name:port`, the one the platform gives KEDA
    and the self-test (components/vocabulary.prometheus_service)."""
    service = prometheus_service(cfg)
    return service.namespace, f"{service.name}:{service.port}"


def goodput_query(namespace: str, name: str) -> str:
    """Every goodput series of the job, by its identity (the Pushgateway's grouping labels,
    kept by the ServiceMonitor's honorLabels), and its recorded Young–Daly interval (which keeps
    the identity, not the push's `job`), in one instant query."""
    names = "|".join(GOODPUT_SERIES)
    job = f'namespace="{namespace}",job_name="{name}"'
    return f'{{__name__=~"{names}",job="{GOODPUT_PUSH_JOB}",{job}}} or {YOUNG_DALY}{{{job}}}'


def interval_line(goodput: Goodput) -> str:
    """The interval the job checkpoints at and what each save costs it, beside the interval
    that loses least to its pool's failures (docs/training.md, "How often to checkpoint")."""
    used, cost = goodput.total(CHECKPOINT_INTERVAL_SECONDS), goodput.total(CHECKPOINT_SECONDS)
    if used is None or cost is None:
        return "checkpoint interval: unknown until the job has saved twice"
    line = f"checkpoint interval: {used:.0f} s of steps, each save holding the ranks {cost:.1f} s"
    best, nodes = goodput.total(YOUNG_DALY), goodput.total(JOB_NODES)
    if best is None:
        return f"{line}; Young–Daly: unknown (no failure in its pool over alerts.fleet_window)"
    return f"{line}; Young–Daly on {nodes:.0f} node(s) of its pool: {best:.0f} s"


@dataclass
class Goodput:
    """The job's figures by series name and `cause` ("" where a series has none)."""

    values: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))

    def total(self, series: str) -> float | None:
        by_cause = self.values.get(series)
        return sum(by_cause.values()) if by_cause else None

    def by_cause(self, series: str) -> dict[str, float]:
        return {c: v for c, v in sorted(self.values.get(series, {}).items()) if c}


class PrometheusError(Exception):
    """Prometheus could not answer; the message says why."""


def query_goodput(cluster: Kubectl, cfg: PlatformConfig, namespace: str, name: str) -> Goodput:
    """Prometheus HTTP API `GET /api/v1/query` (prometheus.io/docs/prometheus/latest/querying/
    api/): `{"status": "success", "data": {"resultType": "vector", "result": [{"metric":
    {...}, "value": [<unix time>, "<value>"]}]}}`, or `"status": "error"` with `errorType`
    and `error`."""
    where, service = prometheus_proxy(cfg)
    path = (
        f"/api/v1/namespaces/{where}/services/{service}/proxy/api/v1/query"
        f"?query={quote(goodput_query(namespace, name), safe='')}"
    )
    try:
        answer = json.loads(cluster.raw(path))
    except KubectlError as error:
        raise PrometheusError(
            f"Prometheus ({where}/{service}) could not be reached through the API server: {error}"
        ) from None
    except json.JSONDecodeError:
        raise PrometheusError(
            f"Prometheus ({where}/{service}) answered something not JSON"
        ) from None
    if answer.get("status") != "success":
        raise PrometheusError(
            f"Prometheus ({where}/{service}) refused the query: "
            f"{answer.get('errorType', '?')}: {answer.get('error', '')}"
        )
    found = Goodput()
    for sample in answer["data"]["result"]:
        metric = sample["metric"]
        by_cause = found.values[metric["__name__"]]
        cause = metric.get("cause", "")
        # One series per job and cause; the same one scraped from two targets (an `instance`
        # apart) is one figure, not two.
        by_cause[cause] = max(by_cause.get(cause, 0.0), float(sample["value"][1]))
    return found


def causes(figures: dict[str, float], unit: str = "") -> str:
    return ", ".join(f"{cause} {value:.0f}{unit}" for cause, value in figures.items())


def report(state: JobState, goodput: Goodput | None, missing: str) -> list[str]:
    lines = [f"{state.title}: {state.phase}" + (f" ({state.why})" if state.why else "")]
    restarts = f"restarts: {state.restart_summary()}"
    if goodput is not None and goodput.by_cause(RESTARTS):
        restarts += f"; causes (trainkit): {causes(goodput.by_cause(RESTARTS))}"
        spent = goodput.total(RESTART_SECONDS)
        if spent is not None:
            restarts += f"; {spent:.0f} s between attempts"
    lines.append(restarts)
    allocated = goodput.total(ALLOCATED_GPU_SECONDS) if goodput else None
    productive = goodput.total(PRODUCTIVE_GPU_SECONDS) if goodput else None
    if goodput is None:
        lines.append(f"goodput: unknown: {missing}")
    elif not allocated or productive is None:
        lines.append(
            f'goodput: none pushed yet (no {ALLOCATED_GPU_SECONDS} of job="{GOODPUT_PUSH_JOB}" '
            "for this job in Prometheus)"
        )
    else:
        line = (
            f"goodput: {100 * productive / allocated:.1f}% ({productive:.0f} of {allocated:.0f} "
            "GPU-seconds productive)"
        )
        lost = goodput.by_cause(LOST_GPU_SECONDS)
        if lost:
            line += f"; lost: {causes(lost, ' GPU-s')}"
        lines.append(line)
    step = goodput.total(LAST_CHECKPOINT_STEP) if goodput else None
    folder = state.checkpoint_dir or "no TRAINKIT_CHECKPOINT_DIR in its pods"
    at = f"step {step:.0f} in " if step is not None else ""
    lines.append(f"resumes from: {at}{folder}")
    if goodput is not None and allocated:
        lines.append(interval_line(goodput))
    return lines


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jobs status",
        description="A submitted job's state, restarts and their causes, goodput and the "
        "checkpoint it would resume from.",
    )
    p.add_argument(
        "name",
        nargs="?",
        help="the job's name, as submit printed it; without it, the team's summary: each job's "
        "platform ledger and the team's goodput and badput by cause, priced",
    )
    p.add_argument("--stack", required=True, help="stacks/Pulumi.<stack>.yaml")
    p.add_argument("--team", help="the team it was submitted for (default: the training namespace)")
    p.add_argument("--kubeconfig", help="default: existing.kubeconfig_path, else KUBECONFIG")
    return p


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    args = parser().parse_args(argv)
    try:
        cfg = stack_config(args.stack, root)
        namespace = destination(cfg, args.team, load_workers(cfg, root)).team.name
        config = kubeconfig(args.kubeconfig, cfg, os.environ)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except SubmitError as error:
        print(f"error: cannot look for {args.name} on {args.stack}:\n{error}", file=sys.stderr)
        return 2
    binary = shutil.which("kubectl")
    if binary is None:
        print("error: jobs status runs kubectl, which is not on PATH", file=sys.stderr)
        return 2
    cluster = Kubectl.of_stack(binary, config, cfg)
    if args.name is None:
        try:
            lines = team_lines(cfg, cluster, JOB_TYPES, namespace, int(time.time()))
        except KubectlError as error:
            print(
                f"error: could not ask the cluster for {namespace}'s jobs: {error}", file=sys.stderr
            )
            return 1
        print("\n".join(lines))
        return 0
    try:
        found = cluster.get(JOB_TYPES, args.name, namespace)
    except KubectlError as error:
        print(f"error: could not ask the cluster for {args.name}: {error}", file=sys.stderr)
        return 1
    if not found:
        print(
            f"error: no JobSet or Job named {args.name} in namespace {namespace} (stack "
            f"{args.stack}{', team ' + args.team if args.team else ''}); another team's job "
            "needs its --team",
            file=sys.stderr,
        )
        return 1
    # A JobSet first: its own Jobs are named `<name>-<replicatedJob>-<index>`, never `<name>`.
    state = job_state(found[0])
    goodput, missing = None, ""
    try:
        goodput = query_goodput(cluster, cfg, namespace, args.name)
    except PrometheusError as error:
        missing = str(error)
    print("\n".join(report(state, goodput, missing)))
    productive = goodput.total(PRODUCTIVE_GPU_SECONDS) if goodput else None
    trainkit = (productive, goodput.by_cause(LOST_GPU_SECONDS)) if productive is not None else None
    try:
        print("\n".join(platform_lines(cfg, cluster, found[0], int(time.time()), trainkit)))
    except KubectlError as error:
        print(f"platform ledger: unknown: the Workload or pods could not be read: {error}")
    return 0
