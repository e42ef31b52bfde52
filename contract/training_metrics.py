"""The series a training job produces that the program's dashboards and alerts read, each name
spelled once: bootstrap/trainkit writes them, components/observability reads them.

Goodput is pushed to the stack's Pushgateway (a job's figures must outlive its pods), grouped by
the job's identity; every series carries `namespace`, `job_name`, `team`, `queue` and `pool`.
GPU-seconds are whole-job totals over every attempt: allocated is every rank's wall time from
its attempt's start; productive is the time of the steps that survived into a checkpoint."""

from __future__ import annotations

# Pushgateway grouping: the `job` label of every goodput push.
GOODPUT_PUSH_JOB = "training-goodput"
IDENTITY_LABELS = ("namespace", "job_name", "team", "queue", "pool")

ALLOCATED_GPU_SECONDS = "gpu_platform_job_allocated_gpu_seconds"
PRODUCTIVE_GPU_SECONDS = "gpu_platform_job_productive_gpu_seconds"
# Work lost to restarts (steps done after the last checkpoint), by `cause` (contract/exits).
LOST_GPU_SECONDS = "gpu_platform_job_lost_gpu_seconds"
RESTARTS = "gpu_platform_job_restarts"
# Seconds from an attempt's last step to the next attempt's first.
RESTART_SECONDS = "gpu_platform_job_restart_seconds"
LAST_CHECKPOINT_STEP = "gpu_platform_job_last_checkpoint_step"
# What a checkpoint costs the job: the seconds rank 0 waited on its last save (what the
# Young–Daly interval reads), the step time between its last two saves (the interval it uses),
# and the nodes of its current attempt (a job on N nodes fails N times as often as one node).
CHECKPOINT_SECONDS = "gpu_platform_job_checkpoint_seconds"
CHECKPOINT_INTERVAL_SECONDS = "gpu_platform_job_checkpoint_interval_seconds"
JOB_NODES = "gpu_platform_job_nodes"

# Served by each node's local rank 0 with the other gauges (trainkit.metrics): every rank's
# last step time, labelled `rank` and `node`, for the straggler view and alert.
RANK_STEP_SECONDS = "gpu_platform_training_rank_step_seconds"

GOODPUT_SERIES = (
    ALLOCATED_GPU_SECONDS, PRODUCTIVE_GPU_SECONDS, LOST_GPU_SECONDS, RESTARTS,
    RESTART_SECONDS, LAST_CHECKPOINT_STEP, CHECKPOINT_SECONDS, CHECKPOINT_INTERVAL_SECONDS,
    JOB_NODES,
)  # fmt: skip
