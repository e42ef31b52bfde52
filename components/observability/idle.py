"""Idle GPUs named by job and team (issue 40 §3): the DCGM exporter's utilisation of each GPU
joined to the pod that holds it and the JobSet that pod belongs to, recorded per job, and the
GpuIdle alert on it (docs/monitoring.md, "GpuIdle"); the reclaimer reads the same record
(components/selftest/reclaim.py).

The join, as the stack scrapes both sides: the DCGM exporter's ServiceMonitor keeps
`honorLabels: false` (components/data/gpu_operator.py), so the GPU's pod is `exported_namespace`
/ `exported_pod` and `namespace` / `pod` are the exporter's own; kube-state-metrics is scraped
with `honorLabels: true` (kube-prometheus-stack 88.5.3 values.yaml,
`kube-state-metrics.prometheus.monitor.http.honorLabels`), so on kube_pod_labels `namespace` /
`pod` are the labelled pod's. kube_pod_labels carries a pod label only where
`--metric-labels-allowlist` names it (node_series.POD_LABELS_READ, set by monitoring_values), as
`label_<key>` with every character outside [a-zA-Z0-9_] turned into `_`. A team is its namespace
(jobs/team.py), so `team` is the namespace.
"""

from __future__ import annotations

from components.observability.node_series import ksm_label
from components.observability.rule_types import Alert, Record, Rule
from components.vocabulary import JOBSET_NAME_LABEL
from model.config import PlatformConfig

JOB_UTILISATION = "gpu_platform_job:gpu_utilisation:max"
GPU_UTIL = 'DCGM_FI_DEV_GPU_UTIL{exported_pod!=""}'


def _copy(expr: str, to: str, source: str) -> str:
    return f'label_replace({expr}, "{to}", "$1", "{source}", "(.+)")'


# Each pod of a JobSet, under the DCGM series' names for it; `max` folds the duplicate series a
# restarted kube-state-metrics leaves for a while, which would break a one-to-one join.
JOBSET = ksm_label(JOBSET_NAME_LABEL)
POD_JOB = (
    "max by (exported_namespace, exported_pod, job_name) ("
    + _copy(
        _copy(_copy(f'kube_pod_labels{{{JOBSET}!=""}}', "job_name", JOBSET), "exported_pod", "pod"),
        "exported_namespace",
        "namespace",
    )
    + ")"
)
_JOINED = f"{GPU_UTIL} * on(exported_namespace, exported_pod) group_left(job_name) {POD_JOB}"
# The busiest GPU of each job: a job is idle only when every one of its GPUs is.
JOB_UTILISATION_EXPR = (
    "max by (namespace, team, job_name) ("
    + _copy(_copy(_JOINED, "namespace", "exported_namespace"), "team", "exported_namespace")
    + ")"
)
# A GPU held by a pod of no JobSet (a notebook, a team's own Deployment), by pod.
_LONE = f"{GPU_UTIL} unless on(exported_namespace, exported_pod) {POD_JOB}"
LONE_POD_UTILISATION = (
    "max by (namespace, team, pod) ("
    + _copy(
        _copy(_copy(_LONE, "namespace", "exported_namespace"), "team", "exported_namespace"),
        "pod",
        "exported_pod",
    )
    + ")"
)


def idle_rules(cfg: PlatformConfig) -> list[Rule]:
    """Each job's busiest GPU, recorded, and GpuIdle: a job all of whose GPUs, or a pod of no
    job whose GPUs, stayed under the idle threshold for idle_for, on every stack."""
    a = cfg.alerts
    limit = a.idle_utilisation_percent
    return [
        Record(JOB_UTILISATION, JOB_UTILISATION_EXPR),
        Alert(
            "GpuIdle",
            f"{JOB_UTILISATION} < {limit} or {LONE_POD_UTILISATION} < {limit}",
            a.idle_for,
            "info",
            "A job's GPUs have been nearly idle: release the capacity",
            "{{ with $labels.job_name }}Job {{ $labels.namespace }}/{{ . }}"
            "{{ else }}Pod {{ $labels.namespace }}/{{ $labels.pod }}{{ end }} "
            f"(team {{{{ $labels.team }}}}) has kept every GPU under {limit} % utilisation "
            f"for {a.idle_for} (busiest now {{{{ $value }}}} %).",
            f"GPU utilisation (every GPU of a job) < {limit} %",
        ),
    ]


def idle_jobs_query(cfg: PlatformConfig, minutes: int) -> str:
    """The jobs whose busiest GPU stayed under the idle threshold for the last `minutes`, and
    that ran through all of them (a series that old: a job that just started is not idle yet),
    by `namespace` and `job_name`: what the reclaimer deactivates."""
    limit = cfg.alerts.idle_utilisation_percent
    return (
        f"max_over_time({JOB_UTILISATION}[{minutes}m]) < {limit} "
        f"and on(namespace, job_name) {JOB_UTILISATION} offset {minutes}m"
    )
