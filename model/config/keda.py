"""Workload autoscaling config: KEDA, GPU-utilisation autoscalers and queue-depth autoscalers.

Each autoscaler becomes a KEDA `ScaledObject` (components/scheduling/keda.py), which creates the
`autoscaling/v2` HPA. Rules that need the rest of the config (namespaces, Kueue's queues) are
in `check_workload_autoscaling`, which PlatformConfig calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, model_validator

from model.config.base import DnsLabel, FieldProblem, Int, Settings, one_of
from model.config.bounds import INT32_MAX
from model.config.references import CLUSTER_QUEUE, TEAM_NAMESPACE, refers

if TYPE_CHECKING:
    from model.config import PlatformConfig

# What an HPA (and so a ScaledObject) can scale here: workloads with a /scale subresource whose
# pods run until stopped. A Job has no /scale subresource: an HPA cannot scale it (FACTS.md);
# KEDA's ScaledJob starts Jobs instead.
SCALABLE_KINDS = ("Deployment", "StatefulSet")
JOB_KINDS = ("Job", "CronJob")


class ScaledTargetSettings(Settings):
    """What every autoscaler shares: its target workload, bounds and HPA behaviour."""

    name: DnsLabel = Field(description="Name of the Deployment or StatefulSet to scale.")
    namespace: Annotated[DnsLabel, refers(TEAM_NAMESPACE)] | None = Field(
        None, description="Namespace of the target. Default: namespaces.training."
    )
    kind: str = Field(
        "Deployment",
        description=f"Kind of the target: {' or '.join(SCALABLE_KINDS)} (an HPA cannot scale "
        "a Job).",
    )
    min_replicas: Int = Field(
        2, ge=0, le=INT32_MAX, description="Fewest replicas the autoscaler keeps."
    )
    max_replicas: Int = Field(
        10, ge=1, le=INT32_MAX, description="Most replicas the autoscaler makes."
    )
    scale_up_pods: Int = Field(
        2,
        ge=1,
        le=INT32_MAX,
        description="Scale-up policy: at most this many pods added per period.",
    )
    scale_up_period_seconds: Int = Field(
        60, ge=1, le=1800, description="Period of the scale-up policy, in seconds."
    )
    scale_down_stabilization_seconds: Int = Field(
        300,
        ge=0,
        le=3600,
        description="The HPA scales down only to the highest replica count it computed over "
        "this window, so a short dip does not kill pods that take minutes to start.",
    )

    @model_validator(mode="after")
    def _scalable(self) -> ScaledTargetSettings:
        if self.kind in JOB_KINDS:
            raise FieldProblem(
                "kind",
                f"{self.kind!r}: an HPA cannot scale a Job (it has no /scale subresource); "
                f"give {' or '.join(SCALABLE_KINDS)}, or run the work as a Kueue job",
            )
        try:
            one_of(self.kind, SCALABLE_KINDS, "a kind KEDA scales here", "valid kinds")
        except ValueError as error:
            raise FieldProblem("kind", str(error)) from None
        if self.min_replicas > self.max_replicas:
            raise FieldProblem(
                "min_replicas",
                f"{self.min_replicas} is above max_replicas {self.max_replicas}; give a "
                "min_replicas no larger than max_replicas",
            )
        return self


class GpuAutoscalerSettings(ScaledTargetSettings):
    """Scale a GPU workload on the average GPU utilisation of its pods (DCGM exporter)."""

    target_utilization: Int = Field(
        70,
        ge=1,
        le=100,
        description="Average GPU utilisation (percent, 1-100) of the target's pods to hold.",
    )

    @model_validator(mode="after")
    def _never_zero(self) -> GpuAutoscalerSettings:
        # At zero replicas no pod reports GPU utilisation, so nothing would scale it back up.
        if self.min_replicas == 0:
            raise FieldProblem(
                "min_replicas",
                "0: with no pods there is no GPU utilisation to scale back up on; give 1 or "
                "more (queue autoscalers may scale to zero)",
            )
        return self


class QueueAutoscalerSettings(ScaledTargetSettings):
    """Scale worker Deployments on the depth of a Kueue ClusterQueue (pending workloads)."""

    # Workers with nothing queued hold GPUs for nothing: scale to zero by default.
    min_replicas: Int = Field(
        0, ge=0, le=INT32_MAX, description="Fewest replicas; 0 scales to zero."
    )
    cluster_queue: Annotated[DnsLabel, refers(CLUSTER_QUEUE)] = Field(
        description="The Kueue ClusterQueue whose pending workloads drive the scaling."
    )
    queue_length_target: Int = Field(
        10, ge=1, le=INT32_MAX, description="Pending workloads per worker replica."
    )
    cooldown_seconds: Int = Field(
        300,
        ge=0,
        le=INT32_MAX,
        description="Wait after the queue empties before scaling to zero (KEDA cooldownPeriod).",
    )


class WorkloadAutoscalingSettings(Settings):
    """KEDA and the workload autoscalers it runs."""

    enabled: bool = Field(
        True,
        description="Install KEDA, the cluster's only external-metrics API (prometheus-adapter "
        "is heading for deprecation).",
    )
    gpu: list[GpuAutoscalerSettings] = Field(
        default_factory=list, description="GPU-utilisation autoscalers, one ScaledObject each."
    )
    queue: list[QueueAutoscalerSettings] = Field(
        default_factory=list, description="Queue-depth autoscalers, one ScaledObject each."
    )

    @model_validator(mode="after")
    def _keda_runs_them(self) -> WorkloadAutoscalingSettings:
        if not self.enabled and (self.gpu or self.queue):
            raise FieldProblem(
                "enabled", "false, but autoscalers are listed; KEDA runs them: set it true"
            )
        return self


def check_workload_autoscaling(cfg: PlatformConfig) -> None:
    """One autoscaler per workload; queue autoscalers read Kueue's metrics: Kueue must run
    (that the queue exists is check_references' rule)."""
    auto = cfg.workload_autoscaling
    seen: dict[tuple[str, str, str], str] = {}
    for key, scalers in (("gpu", auto.gpu), ("queue", auto.queue)):
        for i, s in enumerate(scalers):
            target = (s.namespace or cfg.namespaces.training, s.kind, s.name)
            if target in seen:
                raise FieldProblem(
                    f"workload_autoscaling.{key}[{i}].name",
                    f"{s.kind} {s.name!r} already has an autoscaler (workload_autoscaling."
                    f"{seen[target]}); two HPAs on one workload fight each other, give it one",
                )
            seen[target] = f"{key}[{i}]"
    for i, _ in enumerate(cfg.workload_autoscaling.queue):
        if not cfg.scheduling.enabled:
            raise FieldProblem(
                f"workload_autoscaling.queue[{i}].cluster_queue",
                "Kueue is off (scheduling.enabled: false), so no queue depth is exported",
            )
