"""What each team's GPUs cost: GPU-hours by team, ClusterQueue, pool and job from what runs and
what Kueue admits, priced per pool from the catalog (model/cost.py, pool_gpu_hour_prices),
accumulated over the month, and the alerts on each team's monthly budget.

Sources (tests/helpers/metric_sources.py holds what each emits):
- kube-state-metrics (docs/metrics/workload/pod-metrics.md at v2.x, kube-prometheus-stack
  88.5.3): kube_pod_container_resource_requests{namespace, pod, container, node, resource,
  unit}, the extended resource named with `_` for every character outside [a-zA-Z0-9_];
  kube_pod_status_phase{namespace, pod, phase}, 1 for the pod's phase; kube_pod_labels{namespace,
  pod} with `label_<key>` for each pod label in `--metric-labels-allowlist`
  (node_series.POD_LABELS_READ).
- Kueue v0.19.2 (pkg/metrics/metrics.go): kueue_cluster_queue_resource_usage{cluster_queue,
  flavor, resource}, the quota its admitted workloads hold, with
  `metrics.enableClusterQueueResources` (components/scheduling/kueue.py sets it).

A team is its namespace (scheduling.teams[].name), its queue the ClusterQueue its LocalQueue
points at, a pool the node its pod runs on (the pool's node selector on kube_node_labels), a job
the pod's JobSet, else its Job. GPU-hours are physical GPUs': a shared or MIG-cut pool's devices
are divided by the devices per GPU its device-plugin config advertises.

Month to date, per team, queue and pool: a recording rule that adds, at each evaluation, the
group's interval of GPU-hours to its own value of the previous evaluation, kept only while the
month (UTC) it was recorded in is the current one (MONTH_STAMP, recorded after it, holds year * 12
+ month). A month's first evaluation finds last month's stamp and starts from zero, whenever it
runs; an evaluation Prometheus missed adds nothing (the spend is measured, not inferred), and one
after a gap finds the figure from before it (both are read over 31 days, a month at most). Not
per job: a range selector hands the engine every sample in its range, and a job's running sum
would be written again at every evaluation until the month ends, so one evaluation would load
the month's jobs times the days gone (`make bench-rules`, 2026-12-05: kept per job, 1,000 jobs on
the 28th loaded 16 million samples in one evaluation, and Prometheus refuses a query past 50
million, its `--query.max-samples` default, about 3,100 jobs by then; kept per team, 145,152
samples with 100 or 10,000 jobs). Each job's month is what the Team cost dashboard and `python -m
jobs usage` sum from the GPUs running, whose series exist only while the job runs.
"""

from __future__ import annotations

from components.data.gpu_operator import device_plugin_config_key
from components.observability.node_series import (
    GPU_RESOURCES,
    devices_per_gpu,
    ksm_label,
    pool_nodes,
)
from components.observability.rule_types import Alert, Record, Rule
from components.vocabulary import JOB_NAME_LABEL, JOBSET_NAME_LABEL
from model.config import PlatformConfig
from model.cost import pool_gpu_hour_prices

TEAM_COST_GROUP = "gpu-platform.team-cost"
# How often the group runs: each evaluation adds this much time to the month's GPU-hours.
INTERVAL_MINUTES = 5
TEAM_COST_INTERVAL = f"{INTERVAL_MINUTES}m"

QUEUES = "gpu_platform_team:cluster_queue:info"
PRICE = "gpu_platform_pool:gpu_hour_price:usd"
RUNNING = "gpu_platform_team:gpus_running"
ADMITTED = "gpu_platform_queue:gpus_admitted"
USD_PER_HOUR = "gpu_platform_team:usd_per_hour"
GPU_HOURS_MTD = "gpu_platform_team:gpu_hours:month_to_date"
USD_MTD = "gpu_platform_team:usd:month_to_date"
MONTH_STAMP = "gpu_platform:month:year_times_12_plus_month"
BUDGET = "gpu_platform_team:monthly_budget:usd"
BY = "namespace, cluster_queue, pool, job_name"
# What the month to date is kept by (the module's docstring says why not by job).
TEAM_BY = "namespace, cluster_queue, pool"
# The share of a team's budget at which each alert fires.
BUDGET_ALERTS = {"TeamBudgetNearlySpent": 0.8, "TeamBudgetSpent": 1.0}


def _literal(label: str, values: dict[str, float | int]) -> str:
    """One series per `label` value, with its literal value."""
    terms = " or ".join(
        f'label_replace(vector({value:g}), "{label}", "{name}", "", "")'
        for name, value in values.items()
    )
    return f"max by ({label}) ({terms})"


def team_queues(cfg: PlatformConfig) -> str:
    """1 per team, labelled with its namespace and the ClusterQueue its LocalQueue points at."""
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    terms = " or ".join(
        f'label_replace(label_replace(vector(1), "namespace", "{t.name}", "", ""), '
        f'"cluster_queue", "{t.cluster_queue}", "", "")'
        for t in teams
    )
    return f"max by (namespace, cluster_queue) ({terms})"


def pod_jobs() -> str:
    """Each pod's job: its JobSet's name, else its Job's, else none (a bare pod)."""
    jobs = (
        f'label_replace(kube_pod_labels, "job_name", "$1", "{ksm_label(JOB_NAME_LABEL)}", "(.+)")'
    )
    jobs = f'label_replace({jobs}, "job_name", "$1", "{ksm_label(JOBSET_NAME_LABEL)}", "(.+)")'
    return f"max by (namespace, pod, job_name) ({jobs})"


def pod_gpus(cfg: PlatformConfig) -> str:
    """Physical GPUs each running pod holds, by pool: its containers' GPU requests (whole GPUs,
    replicas of a shared one or MIG slices) over the devices per GPU of its node's pool."""
    per_gpu = devices_per_gpu(cfg)
    requests = (
        f"sum by (namespace, pod, node) (kube_pod_container_resource_requests{{{GPU_RESOURCES}}})"
    )
    running = 'max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1'
    held = f"({requests} and on(namespace, pod) ({running}))"
    terms = []
    for p in cfg.gpu_pools:
        factor = per_gpu[device_plugin_config_key(p)]
        gpus = held if factor == 1 else f"{held} / {factor}"
        terms.append(
            f'label_replace({gpus} and on(node) {pool_nodes(p.node_selector)}, "pool", '
            f'"{p.name}", "", "")'
        )
    return " or ".join(terms)


def running(cfg: PlatformConfig) -> str:
    return (
        f"sum by ({BY}) (({pod_gpus(cfg)}) * on(namespace, pod) group_left(job_name) "
        f"{pod_jobs()} * on(namespace) group_left(cluster_queue) {QUEUES})"
    )


def admitted(cfg: PlatformConfig) -> str:
    """GPUs Kueue's admitted workloads hold, by queue and pool: each pool's flavor is named
    after the pool (components/scheduling/kueue.py)."""
    usage = 'kueue_cluster_queue_resource_usage{resource="nvidia.com/gpu"}'
    return f'sum by (cluster_queue, pool) (label_replace({usage}, "pool", "$1", "flavor", "(.+)"))'


def month_to_date(interval_minutes: int) -> str:
    """The month's GPU-hours so far: the last evaluation's, while its month is this one, plus
    this interval's (the module's docstring says why a running sum)."""
    this_month = "(year() * 12 + month())"
    kept = (
        f"(last_over_time({GPU_HOURS_MTD}[31d]) and on() "
        f"(last_over_time({MONTH_STAMP}[31d]) == on() {this_month}))"
    )
    now = f"sum by ({TEAM_BY}) ({RUNNING}) * {interval_minutes} / 60"
    return f"sum by ({TEAM_BY}) (({kept} + {now}) or {kept} or {now})"


def priced(cfg: PlatformConfig) -> dict[str, float]:
    return {pool: p.usd for pool, p in pool_gpu_hour_prices(cfg).items() if p.usd is not None}


def budgets(cfg: PlatformConfig) -> dict[str, float]:
    return {
        t.name: t.monthly_budget_usd
        for t in cfg.scheduling.teams
        if t.monthly_budget_usd is not None
    }


def team_cost_rules(cfg: PlatformConfig, interval_minutes: int = INTERVAL_MINUTES) -> list[Rule]:
    """The records (queues, prices, GPUs running and admitted, their cost, month to date) and
    the budget alerts of the teams that have a budget, for a group evaluated every
    `interval_minutes` (the shipped TEAM_COST_INTERVAL; a test crosses a month at an hour)."""
    prices = priced(cfg)
    rules: list[Rule] = [Record(QUEUES, team_queues(cfg)), Record(RUNNING, running(cfg))]
    if cfg.scheduling.enabled:
        rules.append(Record(ADMITTED, admitted(cfg)))
    rules += [
        Record(GPU_HOURS_MTD, month_to_date(interval_minutes)),
        # After the running sum: it reads the stamp of the evaluation before.
        Record(MONTH_STAMP, "year() * 12 + month()"),
    ]
    if not prices:
        return rules
    rules += [
        Record(PRICE, _literal("pool", prices)),
        Record(USD_PER_HOUR, f"sum by ({BY}) ({RUNNING} * on(pool) group_left() {PRICE})"),
        Record(USD_MTD, f"sum by ({TEAM_BY}) ({GPU_HOURS_MTD} * on(pool) group_left() {PRICE})"),
    ]
    if budgets(cfg):
        rules += [Record(BUDGET, _literal("namespace", budgets(cfg))), *budget_alerts()]
    return rules


def budget_alerts() -> list[Alert]:
    spent = f"sum by (namespace) ({USD_MTD})"
    found = []
    for name, share in BUDGET_ALERTS.items():
        percent = f"{share:.0%}"
        expr = f"{spent} >= on(namespace) {share:g} * {BUDGET}"
        if share < 1:
            expr += f" < on(namespace) {BUDGET}"
        found.append(
            Alert(
                name,
                expr,
                "0s",
                "warning" if share < 1 else "critical",
                f"A team has spent {percent} of its monthly GPU budget",
                f'Team {{{{ $labels.namespace }}}} has spent ${{{{ $value | printf "%.2f" }}}} '
                f"of its GPUs this month (UTC), {percent} or more of its "
                "scheduling.teams[].monthly_budget_usd.",
                f"a team's month-to-date GPU spend >= {percent} of its monthly_budget_usd",
            )
        )
    return found
