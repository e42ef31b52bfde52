"""The alert settings: thresholds and durations of the PrometheusRule
(components/observability/alerts.py).

Defaults are the source documents' numbers: GPU utilisation under 30 % for 30 minutes (idle),
framebuffer over 95 % (out-of-memory risk), temperature over 85 °C, framebuffer over 90 % on a
training pod (migration candidate), and a queue deeper than 10 workloads for longer than the
scale-up cooldown (300 s). The training job alerts' defaults are argued where they are declared:
a job's goodput under 50 % of its GPU time over an hour, a node whose slowest rank takes 140 % of
its job's median step time for 10 minutes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from model.config.base import FieldProblem, Int, Settings, shaped

if TYPE_CHECKING:
    from model.config import PlatformConfig

# Prometheus's duration syntax (prometheus/common model.ParseDuration): units from the largest
# down, each at most once, at least one; `30m`, `1h30m`, `300s`, `15d`.
_UNITS = (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_DURATION = re.compile(
    "".join(rf"(?:(\d+){u})?" for u, _ in _UNITS[:-1]) + r"(?:(\d+)s)?(?:(\d+)ms)?"
)
DURATION_WORDS = (
    "a Prometheus duration: a number and a unit (y, w, d, h, m, s, ms), e.g. 30m or 1h30m"
)

Duration = Annotated[str, shaped(r"(?!$)" + _DURATION.pattern, DURATION_WORDS)]


def seconds(duration: str) -> float:
    """The length of a Prometheus duration in seconds."""
    parts = _DURATION.fullmatch(duration).groups()
    whole = sum(int(n) * size for n, (_, size) in zip(parts, _UNITS, strict=False) if n)
    return whole + (int(parts[-1]) / 1000 if parts[-1] else 0)


def _percent(default: int, what: str) -> Int:
    return Field(default, ge=1, le=100, description=f"{what}, in percent (1-100).")


class AlertSettings(Settings):
    """Thresholds and durations of the platform's alerts (PrometheusRule in the monitoring
    namespace; runbooks in docs/monitoring.md, "Alerts and runbooks")."""

    runbook_base_url: str = Field(
        "docs/monitoring.md",
        min_length=1,
        description="Where the runbooks page is read (for example the site `make docs-site` "
        "builds, https://docs.example.com/gpu-platform/monitoring/, or "
        "https://git.example.com/gpu-platform/-/blob/main/docs/monitoring.md); each alert's "
        "runbook_url is this with its section's anchor (docs/monitoring.md, \"Alerts and "
        'runbooks").',
    )
    idle_utilisation_percent: Int = _percent(
        30,
        "GpuIdle fires when every GPU of a job (or of a pod of no job) stays below this "
        "utilisation for idle_for; the idle reclaimer's threshold too",
    )
    idle_for: Duration = Field("30m", description="How long a GPU stays under the idle threshold.")
    framebuffer_full_percent: Int = _percent(
        95, "GpuFramebufferFull fires above this share of GPU memory used (OOM risk)"
    )
    framebuffer_full_for: Duration = Field("5m", description="How long memory stays that full.")
    temperature_celsius: Int = Field(
        85, ge=30, le=120, description="GpuTemperatureHigh fires above this, in °C (30-120)."
    )
    temperature_for: Duration = Field("5m", description="How long the GPU stays that hot.")
    migration_framebuffer_percent: Int = _percent(
        90,
        "GpuMigrationCandidate fires above this share of GPU memory used by a training pod "
        "(checkpoint and requeue it)",
    )
    migration_for: Duration = Field("10m", description="How long a training pod stays that full.")
    xid_window: Duration = Field(
        "10m", description="GpuXidError stays firing this long after the last XID error."
    )
    gpu_missing_for: Duration = Field(
        "10m",
        description="How long a GPU node may advertise more GPUs than the DCGM exporter reports "
        "(exporter down or GPU fallen off the bus) before GpuMissing fires.",
    )
    mig_unallocatable_for: Duration = Field(
        "15m",
        description="How long a node of a MIG pool may advertise no GPU (or carry "
        "nvidia.com/mig.config.state=failed) before MigNodeNoAllocatableGpu fires: longer than "
        "the MIG manager takes to apply a layout, which stops the GPU pods and may reboot.",
    )
    queue_depth: Int = Field(
        10,
        ge=1,
        le=10000,
        description="KueueQueueBacklog fires when a ClusterQueue holds more pending workloads "
        "than this (1-10000).",
    )
    queue_depth_for: Duration = Field(
        "300s",
        description="How long the queue stays that deep: the scale-up cooldown of the queue "
        "policy, so that scaling had its chance first.",
    )
    node_condition_for: Duration = Field(
        "5m",
        description="provider aws only: how long an EKS node monitoring agent condition stays "
        "False before EksNodeConditionFailed fires.",
    )

    goodput_percent: Int = _percent(
        # A job that checkpoints at least once per window is credited, in any window, with
        # floor(W/P)·P of its W seconds (productive time counts when its checkpoint lands,
        # contract/training_metrics.py): never less than half. 50 % is the highest threshold a
        # healthy job never crosses; the large runs that publish theirs keep over 90 % over
        # weeks (Llama 3 405B: over 90 % effective training time over 54 days with 419
        # unexpected interruptions on 16,384 H100s; "The Llama 3 Herd of Models",
        # arXiv:2407.21783, section 3.3.4). Under half is not one restart: it is a job that
        # keeps restarting or keeps losing its work.
        50,
        "JobGoodputLow fires when a job keeps less than this share of its allocated GPU-seconds "
        "as productive (steps that survived into a checkpoint) over goodput_window",
    )
    goodput_window: Duration = Field(
        "1h",
        description="The window JobGoodputLow judges a job's goodput over; a job is judged only "
        "when it was allocated GPUs in the window and had pushed its figures before it. Keep it "
        "at least the longest checkpoint interval of the jobs: a window with no checkpoint "
        "credits no productive time.",
    )
    straggler_percent: Int = Field(
        # nvidia-resiliency-ext flags a rank whose relative performance score (the fastest
        # rank's time over its own) falls under 0.7 (docs/source/straggler_det/usage_guide.rst,
        # `gpu_relative_perf_threshold=0.7`): 1/0.7 ≈ 143 % of the fastest. The median is never
        # faster than the fastest, so 140 % of the median flags only ranks it would flag.
        140,
        ge=101,
        le=1000,
        description="TrainingStraggler fires when a node's slowest rank takes more than this "
        "share of its job's median step time, in percent (101-1000).",
    )
    straggler_for: Duration = Field(
        # Two of nvidia-resiliency-ext's straggler reports (report_time_interval=300 s in its
        # usage guide): a slow step (a checkpoint save, a data-loader stall) passes, a node
        # that throttles or lost a link stays.
        "10m",
        description="How long a node stays that slow before TrainingStraggler names it.",
    )
    fleet_window: Duration = Field(
        # A week holds a few failures of a large pool (Llama 3 405B: 419 unexpected
        # interruptions in 54 days on 16,384 GPUs, about 54 a week; "The Llama 3 Herd of
        # Models", arXiv:2407.21783, section 3.3.4) and fits the default retention (15 days).
        "7d",
        description="The window the Fleet health rules measure each node's and pool's time "
        'between failures and time to repair over (docs/monitoring.md, "Fleet health"): '
        "failures that began in it, and the time its nodes spent in and out of service.",
    )
    baseline_window: Duration = Field(
        # Two weeks: a pool that scaled to zero keeps its baseline that long after its last
        # node went (the cluster-autoscaler starts GPU groups from zero, so a canary may be
        # the pool's only node), the default schedule (every 4 h) refreshes it 84 times in it,
        # and it fits the default retention (15 days). Older figures are of a GPU stack
        # two changes back more often than not.
        "14d",
        description="How far back each node's last passing self-test figure counts toward its "
        "pool's baseline, which a GPU-stack change's canary is held to (docs/selftest.md, "
        '"Held to the pool\'s baseline").',
    )


# Every duration field (named `*_for` or `*_window`), for the retention check.
DURATION_FIELDS = tuple(n for n in AlertSettings.model_fields if n.endswith(("_for", "_window")))


def longest_window(settings: AlertSettings) -> tuple[str, str]:
    """The alert duration that looks furthest back: (field, value)."""
    name = max(DURATION_FIELDS, key=lambda n: seconds(getattr(settings, n)))
    return name, getattr(settings, name)


def check_retention(retention_days: int, settings: AlertSettings) -> None:
    """Prometheus must keep data for longer than the longest alert window, or that alert can
    never see its whole window after a restart."""
    name, window = longest_window(settings)
    if retention_days * 86400 < seconds(window):
        raise FieldProblem(
            "observability.retention_days",
            f"{retention_days} days is shorter than alerts.{name} ({window}), the longest alert "
            f"window; keep at least {window}",
        )


def check_alerts(cfg: PlatformConfig) -> None:
    """Rules across the alerts and the rest of the stack."""
    if cfg.provider != "aws" and "node_condition_for" in cfg.alerts.model_fields_set:
        raise FieldProblem(
            "alerts.node_condition_for",
            f"{cfg.alerts.node_condition_for}: only valid with provider aws: the conditions "
            "come from the EKS node monitoring agent; an existing cluster is alerted from the "
            "DCGM exporter's XID and health metrics; remove it",
        )
    check_retention(cfg.observability.retention_days, cfg.alerts)
