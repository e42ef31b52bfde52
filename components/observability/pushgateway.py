"""The stack's Pushgateway (prometheus-community chart prometheus-pushgateway, pinned in
model/versions.py): it holds what outlives the pods that push it, on every stack, since every
stack runs monitoring. Two kinds of push land here:

- trainkit's goodput of every training job (contract/training_metrics.py, push job
  `training-goodput`), whose address the job builder hands every job; the goodput rows and alerts
  read it (components/observability/monitoring.py, alerts.py);
- the periodic self-test's figures and check statuses (components/selftest/schedule.py, push job
  `gpu-platform-selftest`), where the self-test runs on a schedule.

Prometheus scrapes it through the chart's ServiceMonitor with `honorLabels: true`, so the pushed
`job` and `instance` win over the scrape's own (Pushgateway README, "Configure the Pushgateway as
a target to scrape"). It keeps what it holds on a volume across restarts.

Only the pods that must reach it do: every namespace jobs run in (they push and, through the
same API, could delete), Prometheus (it scrapes), and the sweep; the chart's NetworkPolicy
admits them on its port and nothing else. The sweep, an hourly CronJob beside it, deletes the
goodput groups of jobs that stopped pushing longer ago than
observability.pushgateway_retention_hours (components/observability/pushgateway_sweep.py says
why a sweep).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from components.base import PlatformComponent
from components.context import StackContext
from components.control.namespaces import job_namespaces
from components.helm import pinned_release
from components.kubernetes_object import KubernetesObject
from components.observability import pushgateway_sweep
from components.observability.monitoring import storage_class
from components.registry_mirror import Route, mirrored
from components.vocabulary import BATCH_API, PUSHGATEWAY, pushgateway_url
from contract.training_metrics import GOODPUT_PUSH_JOB
from model.config import PlatformConfig
from model.config.observability import PUSHGATEWAY_VOLUME_GIB
from model.versions import PUSHGATEWAY_IMAGE_TAG, PUSHGATEWAY_SWEEP_IMAGE

PUSHGATEWAY_DATA = "/data/pushgateway.data"
# The label every namespace carries with its own name, set by the API server (Kubernetes docs,
# "Well-Known Labels, Annotations and Taints": kubernetes.io/metadata.name).
NAMESPACE_NAME = "kubernetes.io/metadata.name"
# prometheus-operator labels every Prometheus pod it runs so, whichever release made the
# Prometheus (v0.93.0 pkg/prometheus/server/operator.go makeSelectorLabels).
PROMETHEUS_POD = {"app.kubernetes.io/name": "prometheus"}
SWEEP = "pushgateway-sweep"
SWEEP_POD = {"app.kubernetes.io/name": SWEEP}
SWEEP_MOUNT = "/sweep"
SWEEP_SCRIPT = Path(pushgateway_sweep.__file__)
# Hourly, off the hour; the sweep takes seconds.
SWEEP_SCHEDULE = "23 * * * *"


def pushgateway_clients(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The NetworkPolicy peers admitted to the Pushgateway's port: every namespace jobs run in,
    Prometheus's pods and the sweep's in the monitoring namespace."""
    monitoring = {"matchLabels": {NAMESPACE_NAME: cfg.namespaces.monitoring}}
    return [
        *(
            {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME: ns}}}
            for ns in job_namespaces(cfg)
        ),
        {"namespaceSelector": monitoring, "podSelector": {"matchLabels": PROMETHEUS_POD}},
        {"namespaceSelector": monitoring, "podSelector": {"matchLabels": SWEEP_POD}},
    ]


def pushgateway_values(cfg: PlatformConfig, node_selector: dict[str, str]) -> dict[str, Any]:
    """The chart's values: scraped with the pushed labels kept, persistent, locked down."""
    ns = cfg.namespaces.monitoring
    volume_class = storage_class(cfg.observability, cfg.provider == "aws")
    return {
        "image": {"tag": PUSHGATEWAY_IMAGE_TAG},
        "serviceMonitor": {
            "enabled": True,
            # The chart's default is a fixed `monitoring`; the stack's namespace may differ.
            "namespace": ns,
            "honorLabels": True,
        },
        # The chart mounts the volume at /data; only --persistence.file makes the server write
        # there (Pushgateway README, "Persistence"), every 5 minutes by default.
        "persistentVolume": {
            "enabled": True,
            "size": f"{PUSHGATEWAY_VOLUME_GIB}Gi",
            **({"storageClass": volume_class} if volume_class else {}),
        },
        "extraArgs": [f"--persistence.file={PUSHGATEWAY_DATA}"],
        "networkPolicy": {"customSelectors": pushgateway_clients(cfg)},
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"memory": "256Mi"},
        },
        **({"nodeSelector": node_selector} if node_selector else {}),
    }


_RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def sweep_objects(
    cfg: PlatformConfig, node_selector: dict[str, str], mirror: Route = None
) -> list[dict[str, Any]]:
    """The sweep's ConfigMap (its script) and CronJob. No ServiceAccount token: it talks to the
    Pushgateway only, and holds no right on the Kubernetes API."""
    ns = cfg.namespaces.monitoring
    meta = {"namespace": ns, "labels": SWEEP_POD}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SWEEP, **meta},
        "data": {SWEEP_SCRIPT.name: SWEEP_SCRIPT.read_text()},
    }
    retention_s = cfg.observability.pushgateway_retention_hours * 3600
    pod = {
        "automountServiceAccountToken": False,
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        **({"nodeSelector": node_selector} if node_selector else {}),
        "containers": [
            {
                "name": "sweep",
                "image": mirrored(PUSHGATEWAY_SWEEP_IMAGE, mirror),
                "command": ["python", f"{SWEEP_MOUNT}/{SWEEP_SCRIPT.name}"],
                "env": [
                    {"name": "PUSHGATEWAY_URL", "value": pushgateway_url(ns)},
                    {"name": "SWEEP_JOB", "value": GOODPUT_PUSH_JOB},
                    {"name": "RETENTION_SECONDS", "value": str(retention_s)},
                ],
                "volumeMounts": [{"name": "script", "mountPath": SWEEP_MOUNT, "readOnly": True}],
                "securityContext": _RESTRICTED_CONTAINER,
                "resources": {
                    "requests": {"cpu": "10m", "memory": "32Mi"},
                    "limits": {"memory": "128Mi"},
                },
            }
        ],
        "volumes": [{"name": "script", "configMap": {"name": SWEEP}}],
    }
    cron_job = {
        "apiVersion": BATCH_API,
        "kind": "CronJob",
        "metadata": {"name": SWEEP, **meta},
        "spec": {
            "schedule": SWEEP_SCHEDULE,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": SWEEP_POD},
                "spec": {
                    "backoffLimit": 2,
                    "activeDeadlineSeconds": 600,
                    "template": {"metadata": {"labels": SWEEP_POD}, "spec": pod},
                },
            },
        },
    }
    return [config_map, cron_job]


@dataclass(frozen=True)
class PushgatewayArgs:
    context: StackContext
    cfg: PlatformConfig
    node_selector: dict[str, str]
    # The monitoring release (ours or the cluster's): its ServiceMonitor CRD.
    after: Sequence[pulumi.Resource] = ()
    # The URN of the component that declared the release before (the SelfTest, where the
    # self-test ran on a schedule): the release keeps its state there (`aliases`).
    former_parent: pulumi.Input[str] | None = None


class Pushgateway(PlatformComponent):
    """The Pushgateway's release in the monitoring namespace; `release` is what pushers wait
    for."""

    PLANE = "observability"

    def __init__(self, name: str, args: PushgatewayArgs, opts=None):
        super().__init__(name, opts)
        cfg = args.cfg
        moved = [pulumi.Alias(parent=args.former_parent)] if args.former_parent else []
        self.release = pinned_release(
            f"{args.context.env}-{PUSHGATEWAY}",
            PUSHGATEWAY,
            cfg.namespaces.monitoring,
            pushgateway_values(cfg, args.node_selector),
            self.child(depends_on=list(args.after), aliases=moved),
            context=args.context,
        )
        for obj in sweep_objects(cfg, args.node_selector, args.context.image_route):
            KubernetesObject(
                f"{args.context.env}-{obj['kind'].lower()}-{SWEEP}",
                obj,
                # In the monitoring namespace; it needs nothing of the release until it runs.
                self.child(depends_on=list(args.after)),
            )
        self.register_outputs({})
