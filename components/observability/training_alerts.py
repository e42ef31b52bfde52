"""The training jobs' rules: each job's goodput over a window, and the node that holds a
multi-rank job back (docs/monitoring.md, "Goodput and stragglers").

Their series (contract/training_metrics.py): the goodput trainkit pushes to the Pushgateway,
grouped by the job's identity (namespace, job_name, team, queue, pool; scraped with
honorLabels true, so the pushed `job` and `namespace` are kept), and every rank's step time that
each node's local rank 0 serves, scraped by the PodMonitor `training-jobs`, which names the job
`job_name` from its pods' JobSet label (components/observability/monitoring.py)."""

from __future__ import annotations

from components.observability.rule_types import Alert, Record, Rule
from contract.training_metrics import (
    ALLOCATED_GPU_SECONDS,
    GOODPUT_PUSH_JOB,
    IDENTITY_LABELS,
    PRODUCTIVE_GPU_SECONDS,
    RANK_STEP_SECONDS,
)
from model.config import PlatformConfig

JOB = ", ".join(IDENTITY_LABELS)
PUSHED = f'{{job="{GOODPUT_PUSH_JOB}"}}'
GOODPUT_RATIO = "gpu_platform_job:goodput:ratio"
STRAGGLER_RATIO = "gpu_platform_job:rank_step_seconds:slowest_over_median"
# A job's ranks by namespace and JobSet: every node's local rank 0 serves every rank's step
# time (gathered), so a rank's series comes once per node; one per rank is kept.
RANKS = f"max by (namespace, job_name, rank, node) ({RANK_STEP_SECONDS})"
MEDIAN = f"quantile by (namespace, job_name) (0.5, {RANKS})"
# A job of one rank has no straggler: its rank is its median.
SEVERAL_RANKS = f"and on(namespace, job_name) count by (namespace, job_name) ({RANKS}) > 1"
JOB_NAMED = "{{ $labels.namespace }}/{{ $labels.job_name }}"


def _in_window(metric: str, window: str) -> str:
    # The figures are whole-job totals that only grow; increase() also counts a total that
    # starts again from zero (a resubmitted job) from its new start.
    return f"sum by ({JOB}) (increase({metric}{PUSHED}[{window}]))"


def goodput_rules(cfg: PlatformConfig) -> list[Rule]:
    """Each job's goodput over the window (productive over allocated GPU-seconds), recorded,
    and the alert on it, on every stack: each has the Pushgateway trainkit pushes to
    (components/observability/pushgateway.py)."""
    a = cfg.alerts
    w = a.goodput_window
    ratio = (
        f"{_in_window(PRODUCTIVE_GPU_SECONDS, w)} / ({_in_window(ALLOCATED_GPU_SECONDS, w)} > 0)"
        # Judged only on a whole window: the job had pushed before it started. In its first
        # window no checkpoint may have landed yet, so nothing is productive so far.
        f" and on({JOB}) {ALLOCATED_GPU_SECONDS}{PUSHED} offset {w}"
    )
    return [
        Record(GOODPUT_RATIO, ratio),
        Alert(
            "JobGoodputLow",
            f"{GOODPUT_RATIO} < {a.goodput_percent / 100:g}",
            "0s",
            "warning",
            "A training job kept little of its GPU time",
            f"Job {JOB_NAMED} (team {{{{ $labels.team }}}}, queue {{{{ $labels.queue }}}}, "
            f"pool {{{{ $labels.pool }}}}) kept {{{{ $value | humanizePercentage }}}} of its "
            f"GPU-seconds over the last {w} as steps that reached a checkpoint, under "
            f"{a.goodput_percent} %: `python -m jobs status {{{{ $labels.job_name }}}}` shows "
            "its restarts and their causes.",
            f"a job's productive / allocated GPU-seconds over {w} < {a.goodput_percent} % "
            "(jobs allocated GPUs in the window)",
        ),
    ]


def straggler_rules(cfg: PlatformConfig) -> list[Rule]:
    """The slowest rank of each multi-rank job against its median, recorded, and the alert
    that names a node whose ranks stay that slow."""
    a = cfg.alerts
    share = a.straggler_percent / 100
    by_node = f"max by (namespace, job_name, node) ({RANKS})"
    return [
        Record(
            STRAGGLER_RATIO,
            f"max by (namespace, job_name) ({RANKS}) / {MEDIAN} {SEVERAL_RANKS}",
        ),
        Alert(
            "TrainingStraggler",
            f"{by_node} / on(namespace, job_name) group_left {MEDIAN} > {share:g} {SEVERAL_RANKS}",
            a.straggler_for,
            "warning",
            "A node holds a training job back",
            f"Node {{{{ $labels.node }}}}: its slowest rank of job {JOB_NAMED} has taken "
            "{{ $value | humanizePercentage }} of the job's median step time for "
            f"{a.straggler_for} (threshold {a.straggler_percent} %); every rank waits for it "
            "at each collective.",
            f"a node's slowest rank > {a.straggler_percent} % of its job's median step time",
        ),
    ]
