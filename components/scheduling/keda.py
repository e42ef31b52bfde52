"""Workload autoscaling through KEDA: the release, and a `ScaledObject` per autoscaler.

KEDA's metrics server is the cluster's only external-metrics API (prometheus-adapter is heading
for deprecation, kubernetes-sigs/prometheus-adapter#701). A ScaledObject with a Prometheus
trigger makes KEDA create and feed the `autoscaling/v2` HPA of its target. Two kinds:

- GPU: the average GPU utilisation of the target's pods, from the GPU Operator's DCGM exporter;
- queue depth: the pending workloads of a Kueue ClusterQueue, for worker Deployments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.base import PlatformComponent
from components.context import StackContext
from components.control.cluster import ClusterHandle
from components.helm import pinned_release
from components.kubernetes_object import KubernetesObject
from components.vocabulary import prometheus_service
from model.config import PlatformConfig
from model.config.keda import (
    GpuAutoscalerSettings,
    QueueAutoscalerSettings,
    ScaledTargetSettings,
)

KEDA = "keda.sh/v1alpha1"
# The external-metrics API group version KEDA's metrics server registers (its chart's
# APIService `v1beta1.external.metrics.k8s.io`); no other release may register it.
EXTERNAL_METRICS_API = "v1beta1.external.metrics.k8s.io"


# ------------------------------------------------------------------------------- queries


def pod_pattern(kind: str, name: str) -> str:
    """The names of the target's pods, and no other workload's: a Deployment's pods are
    `<name>-<replicaset hash>-<suffix>`, a StatefulSet's `<name>-<ordinal>`. A looser
    `<name>-.*` would also match `<name>-canary-...`, another Deployment's pods."""
    if kind == "StatefulSet":
        return f"{name}-[0-9]+"
    return f"{name}-[a-z0-9]+-[a-z0-9]+"


def gpu_utilization_query(namespace: str, kind: str, name: str) -> str:
    """Average GPU utilisation per pod, averaged over the target's pods. DCGM reports one
    series per GPU, with the GPU pod's labels renamed `exported_*` (the ServiceMonitor keeps
    `honorLabels: false`); averaging per pod first weighs every pod once, as the HPA's own
    utilisation average does, whatever number of GPUs a pod holds."""
    selector = f'exported_namespace="{namespace}", exported_pod=~"{pod_pattern(kind, name)}"'
    return f"avg(avg by (exported_pod) (DCGM_FI_DEV_GPU_UTIL{{{selector}}}))"


def queue_depth_query(cluster_queue: str) -> str:
    """Pending workloads of the queue, both Kueue v0.19.2 `status` values (`active`: waiting
    in the admission queue; `inadmissible`: waiting for the cluster to change) summed."""
    return f'sum(kueue_pending_workloads{{cluster_queue="{cluster_queue}"}})'


# ------------------------------------------------------------------------------ builders


def behavior(scaler: ScaledTargetSettings) -> dict[str, Any]:
    """Scale up by at most `scale_up_pods` per period: a GPU pod may wait minutes for a node,
    and the HPA would otherwise keep adding pods for load the first ones will take. Scale down
    only past the stabilisation window."""
    return {
        "scaleUp": {
            "policies": [
                {
                    "type": "Pods",
                    "value": scaler.scale_up_pods,
                    "periodSeconds": scaler.scale_up_period_seconds,
                }
            ]
        },
        "scaleDown": {"stabilizationWindowSeconds": scaler.scale_down_stabilization_seconds},
    }


def _scaled_object(
    scaler: ScaledTargetSettings, namespace: str, trigger: dict[str, Any], **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": KEDA,
        "kind": "ScaledObject",
        "metadata": {"name": scaler.name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": scaler.kind, "name": scaler.name},
            "minReplicaCount": scaler.min_replicas,
            "maxReplicaCount": scaler.max_replicas,
            **spec,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior(scaler)}},
            "triggers": [trigger],
        },
    }


def gpu_scaled_object(
    scaler: GpuAutoscalerSettings, namespace: str, prometheus: str
) -> dict[str, Any]:
    """metricType `Value`: the HPA compares the average itself with the target, so desired
    replicas = ceil(current × utilisation / target), the HPA's utilisation rule. The default
    `AverageValue` would divide the query by the replica count: ceil(utilisation / target),
    one or two replicas whatever the load."""
    trigger = {
        "type": "prometheus",
        "metricType": "Value",
        "metadata": {
            "serverAddress": prometheus,
            "query": gpu_utilization_query(namespace, scaler.kind, scaler.name),
            "threshold": str(scaler.target_utilization),
        },
    }
    return _scaled_object(scaler, namespace, trigger)


def queue_scaled_object(
    scaler: QueueAutoscalerSettings, namespace: str, prometheus: str
) -> dict[str, Any]:
    """metricType `AverageValue`: desired replicas = ceil(pending / queue_length_target), one
    worker per `queue_length_target` pending workloads. `cooldownPeriod` applies to scaling to
    zero only; the scale-down window covers the rest."""
    trigger = {
        "type": "prometheus",
        "metricType": "AverageValue",
        "metadata": {
            "serverAddress": prometheus,
            "query": queue_depth_query(scaler.cluster_queue),
            "threshold": str(scaler.queue_length_target),
        },
    }
    return _scaled_object(scaler, namespace, trigger, cooldownPeriod=scaler.cooldown_seconds)


def scaled_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """Every ScaledObject of the stack, GPU autoscalers first."""
    auto, training = cfg.workload_autoscaling, cfg.namespaces.training
    prometheus = prometheus_service(cfg).url
    objects = [gpu_scaled_object(s, s.namespace or training, prometheus) for s in auto.gpu]
    objects += [queue_scaled_object(s, s.namespace or training, prometheus) for s in auto.queue]
    return objects


def autoscaler_report(obj: dict[str, Any]) -> dict[str, Any]:
    """What the plan shows of one autoscaler: its target, bounds and what it holds."""
    spec = obj["spec"]
    (trigger,) = spec["triggers"]
    target = spec["scaleTargetRef"]
    return {
        "target": f"{target['kind']} {obj['metadata']['namespace']}/{target['name']}",
        "min": spec["minReplicaCount"],
        "max": spec["maxReplicaCount"],
        "query": trigger["metadata"]["query"],
        "threshold": f"{trigger['metadata']['threshold']} ({trigger['metricType']})",
    }


def keda_values(node_selector: dict[str, str]) -> dict[str, Any]:
    # The operator, its metrics server and its webhooks run on the system nodes.
    return {"nodeSelector": node_selector}


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class WorkloadAutoscalingArgs:
    context: StackContext
    cfg: PlatformConfig
    cluster: ClusterHandle
    node_selector: dict[str, str]
    # The namespaces KEDA and the targets live in.
    after: Sequence[pulumi.Resource] = ()
    # False: the cluster runs its own KEDA (existing.addons): only the ScaledObjects.
    install: bool = True


class WorkloadAutoscaling(PlatformComponent):
    """KEDA in the platform's system namespace, and the stack's ScaledObjects."""

    # Beside Kueue: both decide how much of the GPU fleet workloads get.
    PLANE = "scheduling"

    def __init__(
        self, name: str, args: WorkloadAutoscalingArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        # The release (ours or the cluster's) installs the ScaledObject CRD and the webhook that
        # validates them.
        before: list[pulumi.Resource] = [*args.cluster.schedulable, *args.after]
        if args.install:
            before = [
                pinned_release(
                    f"{args.context.env}-keda",
                    "keda",
                    args.cfg.namespaces.system,
                    keda_values(args.node_selector),
                    self.child(depends_on=before),
                    context=args.context,
                )
            ]
        reports: dict[str, dict[str, Any]] = {}
        for obj in scaled_objects(args.cfg):
            meta = obj["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            KubernetesObject(
                f"{args.context.env}-scaledobject-{meta['namespace']}-{meta['name']}",
                obj,
                self.child(depends_on=before),
            )
            reports[key] = autoscaler_report(obj)
        # Stack output: each autoscaler with its target and bounds.
        self.outputs = {"workload_autoscalers": reports}
        self.register_outputs(self.outputs)
