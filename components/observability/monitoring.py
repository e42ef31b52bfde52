"""Monitoring: kube-prometheus-stack (Prometheus, Alertmanager, Grafana) with the platform's
dashboards, as pure builders and the thin component that declares them.

Prometheus selects every ServiceMonitor, PodMonitor, PrometheusRule, Probe and ScrapeConfig in
the cluster, so the GPU Operator's DCGM exporter and Kueue are scraped without extra labels.
The platform's own PodMonitor scrapes training jobs that serve metrics (the recipes do), in every
training namespace.
Grafana's admin password is generated, kept in a Secret and exported only as a Pulumi secret.
Dashboards are JSON files in components/observability/dashboards, loaded by Grafana's sidecar from
ConfigMaps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.base import PLATFORM_LABELS, PlatformComponent
from components.context import StackContext
from components.helm import pinned_release
from components.kubernetes_object import KubernetesObject
from components.observability.alerts import NODE_LABELS_READ
from components.observability.node_series import POD_LABELS_READ
from components.vocabulary import (
    JOBSET_NAME_LABEL,
    METRICS_LABEL,
    METRICS_PORT_NAME,
    MONITORING_API,
    MONITORING_RELEASE,
    ServiceAddress,
)
from model.config.observability import ObservabilitySettings

DASHBOARDS = Path(__file__).parent / "dashboards"
# The sidecar loads every ConfigMap with this label, in every namespace (chart default
# `grafana.sidecar.dashboards.searchNamespace: ALL`).
DASHBOARD_LABEL = {"grafana_dashboard": "1"}
GP3_CLASS = "gp3"
EBS_CSI_DRIVER = "ebs.csi.aws.com"
ADMIN_SECRET = "grafana-admin"
# The keys the chart reads by default (`grafana.admin.userKey` / `passwordKey`).
USER_KEY, PASSWORD_KEY = "admin-user", "admin-password"
TRAINING_MONITOR = "training-jobs"
# Training metrics move per step; a 15 s scrape keeps a step-time curve readable whatever the
# stack's global scrape interval.
TRAINING_SCRAPE_INTERVAL = "15s"
# What the training series call the job: the goodput's grouping label too
# (contract/training_metrics.IDENTITY_LABELS), so a job's step times and goodput join on it.
JOB_NAME = "job_name"


def pod_label_meta(key: str) -> str:
    """A pod label as Prometheus's pod discovery offers it: `__meta_kubernetes_pod_label_<name>`,
    every character outside [a-zA-Z0-9_] turned into `_` (Prometheus docs, kubernetes_sd_config,
    role pod)."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def gp3_storage_class() -> dict[str, Any]:
    """Prometheus's volumes on AWS: encrypted gp3 through the EBS CSI driver, created in the zone
    the pod lands in (WaitForFirstConsumer), since an EBS volume cannot leave its zone."""
    return {
        "provisioner": EBS_CSI_DRIVER,
        "parameters": {"type": "gp3", "encrypted": "true"},
        "volume_binding_mode": "WaitForFirstConsumer",
        "allow_volume_expansion": True,
        # Metrics history outlives the release: a reinstall or rename finds its volume again.
        "reclaim_policy": "Retain",
    }


def storage_class(settings: ObservabilitySettings, on_aws: bool) -> str | None:
    """gp3 on AWS (the config refuses another class there); on an existing cluster the class
    the stack names, or None: the cluster's default StorageClass."""
    return GP3_CLASS if on_aws else settings.storage_class


def monitoring_values(
    settings: ObservabilitySettings,
    storage_class_name: str | None,
    node_selector: dict[str, str],
    node_labels: Sequence[str] = NODE_LABELS_READ,
) -> dict[str, Any]:
    """kube-prometheus-stack's values."""
    nil_uses_helm_values_off = {
        f"{kind}SelectorNilUsesHelmValues": False
        for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig")
    }
    placed = {"nodeSelector": node_selector} if node_selector else {}
    return {
        "prometheus": {
            "prometheusSpec": {
                # With these false, an empty selector matches every object of the kind in
                # every namespace, not only those labelled for this release.
                **nil_uses_helm_values_off,
                "retention": f"{settings.retention_days}d",
                "retentionSize": f"{settings.retention_size_gib}GiB",
                "scrapeInterval": f"{settings.scrape_interval_seconds}s",
                "storageSpec": {
                    "volumeClaimTemplate": {
                        "spec": {
                            # Omitted, the claim gets the cluster's default StorageClass.
                            **(
                                {"storageClassName": storage_class_name}
                                if storage_class_name
                                else {}
                            ),
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": f"{settings.storage_gib}Gi"}},
                        }
                    }
                },
                **placed,
            }
        },
        "alertmanager": {"enabled": True, "alertmanagerSpec": {**placed}},
        "prometheusOperator": {**placed},
        "kube-state-metrics": {
            # `nodes=[k1,k2]` (kube-state-metrics --metric-labels-allowlist): the node labels
            # the alerts read, and the pod labels that name a pod's job (GpuIdle, the team cost
            # rules); kube_node_labels and kube_pod_labels carry no other.
            "metricLabelsAllowlist": [
                f"nodes=[{','.join(node_labels)}]",
                f"pods=[{','.join(POD_LABELS_READ)}]",
            ],
            **placed,
        },
        "grafana": {
            "enabled": True,
            "admin": {
                "existingSecret": ADMIN_SECRET,
                "userKey": USER_KEY,
                "passwordKey": PASSWORD_KEY,
            },
            "sidecar": {"dashboards": {"enabled": True, **_sidecar_label()}},
            **placed,
        },
    }


def _sidecar_label() -> dict[str, str]:
    ((label, value),) = DASHBOARD_LABEL.items()
    return {"label": label, "labelValue": value}


# Rows that read metrics only some stacks have, each added to the dashboard it names where its
# metrics exist: an empty panel is a "No data" nobody can explain.
ROWS = DASHBOARDS / "rows"
SELFTEST_HISTORY = "selftest-history"
# Where a pool has a reservation window (components/observability/reservations.py).
RESERVATIONS = "reservations"
# The Team cost dashboard's USD, where a pool has a price (an existing cluster's have none).
TEAM_COST_USD = "team-cost-usd"


# The dashboard that reads only Kueue's metrics: declared only where Kueue runs
# (scheduling.enabled), or every panel of it would say "No data".
QUEUES = "queues"


# The uid of the Prometheus data source the dashboard files name: kube-prometheus-stack's
# (88.5.3 values.yaml, grafana.sidecar.datasources.uid), which the platform's release keeps.
FILES_DATASOURCE_UID = "prometheus"


def _on_datasource(node: Any, uid: str) -> None:
    """Points every Prometheus data source reference under `node` at `uid`."""
    if isinstance(node, dict):
        source = node.get("datasource")
        if isinstance(source, dict) and source.get("type") == "prometheus":
            source["uid"] = uid
        for value in node.values():
            _on_datasource(value, uid)
    elif isinstance(node, list):
        for value in node:
            _on_datasource(value, uid)


def dashboards(
    selftest_history: bool = False,
    kueue: bool = True,
    datasource_uid: str = FILES_DATASOURCE_UID,
    reservations: bool = False,
    priced: bool = False,
) -> dict[str, str]:
    """The dashboards kept in the repository, by file stem, as the JSON text Grafana loads; with
    the self-test history row where the periodic self-test pushes its figures, the Team cost
    dashboard's USD rows where a pool has a price, and the Queues
    dashboard where Kueue runs, every panel reading the Prometheus data source `datasource_uid`
    (a cluster's own Grafana may name it otherwise). The Training job dashboard's goodput rows
    read what every stack's Pushgateway holds (components/observability/pushgateway.py)."""
    found = {
        path.stem: path.read_text()
        for path in sorted(DASHBOARDS.glob("*.json"))
        if kueue or path.stem != QUEUES
    }
    boards = {stem: json.loads(text) for stem, text in found.items()}
    added = (
        [SELFTEST_HISTORY] * selftest_history
        + [RESERVATIONS] * reservations
        + [TEAM_COST_USD] * priced
    )
    for stem in added:
        rows = json.loads((ROWS / f"{stem}.json").read_text())
        boards[rows["dashboard"]]["panels"] += rows["panels"]
        found[rows["dashboard"]] = ""
    for stem, board in boards.items():
        if datasource_uid != FILES_DATASOURCE_UID:
            _on_datasource(board, datasource_uid)
            found[stem] = ""
        if not found[stem]:
            found[stem] = json.dumps(board, indent=2, ensure_ascii=False) + "\n"
    return found


def dashboard_titles(kueue: bool = True) -> list[str]:
    return [json.loads(text)["title"] for text in dashboards(kueue=kueue).values()]


def training_pod_monitor(namespace: str, training_namespaces: Sequence[str]) -> dict[str, Any]:
    """One PodMonitor for every training job that serves metrics
    (components/scheduling/training_job.py: the port named `metrics`, the pod label
    `gpu-platform/metrics: training`), in the training namespaces only, so that a team's own pods
    elsewhere are never scraped by accident. Prometheus adds `namespace` and `pod` to each series
    (honorLabels stays false), and `job_name`, the JobSet a pod belongs to: the straggler rules
    compare the ranks of one job."""
    return {
        "apiVersion": MONITORING_API,
        "kind": "PodMonitor",
        "metadata": {"name": TRAINING_MONITOR, "namespace": namespace, "labels": PLATFORM_LABELS},
        "spec": {
            "namespaceSelector": {"matchNames": list(training_namespaces)},
            "selector": {"matchLabels": dict(METRICS_LABEL)},
            "podMetricsEndpoints": [
                {
                    "port": METRICS_PORT_NAME,
                    "interval": TRAINING_SCRAPE_INTERVAL,
                    "relabelings": [
                        {
                            "sourceLabels": [pod_label_meta(JOBSET_NAME_LABEL)],
                            "targetLabel": JOB_NAME,
                        }
                    ],
                }
            ],
        },
    }


@dataclass(frozen=True)
class MonitoringArgs:
    context: StackContext
    settings: ObservabilitySettings
    namespace: str
    on_aws: bool
    node_selector: dict[str, str]
    # Prometheus's and Grafana's Services and Grafana's Prometheus data source
    # (components/vocabulary): the platform's release's, or the cluster's own.
    prometheus: ServiceAddress
    grafana_service: str
    datasource_uid: str
    # Where training jobs run: the training namespace and every team's.
    training_namespaces: Sequence[str] = ()
    # The periodic self-test pushes its history: the fleet dashboard shows it.
    selftest_history: bool = False
    # The node labels the alerts read (components/alerts.node_labels_read).
    node_labels: Sequence[str] = NODE_LABELS_READ
    # Kueue runs (scheduling.enabled): the Queues dashboard has metrics to show.
    kueue: bool = True
    # A pool has a reservation window: the fleet dashboard shows its GPUs used against paid.
    reservations: bool = False
    # A pool has a price per GPU-hour: the Team cost dashboard shows USD.
    priced: bool = False
    after: Sequence[pulumi.Resource] = ()
    # False: the cluster runs its own kube-prometheus-stack (existing.addons); the platform
    # declares its dashboards and PodMonitor for it, and no release, StorageClass or Grafana
    # admin Secret.
    install: bool = True


class Monitoring(PlatformComponent):
    """kube-prometheus-stack in the monitoring namespace, its admin Secret and dashboards."""

    PLANE = "observability"

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        env, ns, settings = args.context.env, args.namespace, args.settings
        before_release: list[pulumi.Resource] = list(args.after)
        # Stack outputs: what the plan says of monitoring, and the Grafana admin password (a
        # secret) where the platform installs Grafana.
        self.outputs = {"monitoring": monitoring_report(args)}
        if not args.install:
            self._on_top(args)
            # What depends on monitoring waits for the objects declared on top of it.
            self.release: pulumi.Resource = self
            self.register_outputs(self.outputs)
            return
        if args.on_aws:
            before_release.append(
                k8s.storage.v1.StorageClass(
                    f"{env}-{GP3_CLASS}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=GP3_CLASS),
                    **gp3_storage_class(),
                    opts=self.child(),
                )
            )
        password = random.RandomPassword(
            f"{env}-grafana-admin",
            random.RandomPasswordArgs(length=32, special=False),
            self.child(),
        )
        # The password lives in the Secret and in this secret output only; the chart reads it
        # through grafana.admin.existingSecret, so it never appears in the release's values.
        self.outputs["grafana_admin_password"] = pulumi.Output.secret(password.result)
        before_release.append(
            k8s.core.v1.Secret(
                f"{env}-{ADMIN_SECRET}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=ADMIN_SECRET, namespace=ns),
                # The provider marks RandomPassword.result secret, and a Secret's data with it.
                string_data={USER_KEY: settings.grafana.admin_user, PASSWORD_KEY: password.result},
                opts=self.child(depends_on=list(args.after)),
            )
        )
        self._dashboards(args)
        self.release = pinned_release(
            f"{env}-{MONITORING_RELEASE}",
            MONITORING_RELEASE,
            ns,
            monitoring_values(
                settings,
                storage_class(settings, args.on_aws),
                args.node_selector,
                args.node_labels,
            ),
            self.child(depends_on=before_release),
            context=args.context,
        )
        self._training_monitor(args, [self.release])
        self.register_outputs({"release": self.release.name, **self.outputs})

    def _on_top(self, args: MonitoringArgs) -> None:
        """What the platform owns on a kube-prometheus-stack the cluster runs."""
        self._dashboards(args)
        self._training_monitor(args, list(args.after))

    def _dashboards(self, args: MonitoringArgs) -> None:
        for stem, text in dashboards(
            args.selftest_history,
            args.kueue,
            args.datasource_uid,
            args.reservations,
            args.priced,
        ).items():
            k8s.core.v1.ConfigMap(
                f"{args.context.env}-dashboard-{stem}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=f"dashboard-{stem}", namespace=args.namespace, labels=DASHBOARD_LABEL
                ),
                data={f"{stem}.json": text},
                opts=self.child(depends_on=list(args.after)),
            )

    def _training_monitor(self, args: MonitoringArgs, after: list[pulumi.Resource]) -> None:
        # The release (ours or the cluster's) installs the PodMonitor CRD.
        if args.training_namespaces:
            KubernetesObject(
                f"{args.context.env}-{TRAINING_MONITOR}",
                training_pod_monitor(args.namespace, args.training_namespaces),
                self.child(depends_on=after),
            )


def monitoring_report(args: MonitoringArgs) -> dict:
    """What the plan says of monitoring: retention and storage only of the platform's release
    (the cluster's own keeps its own)."""
    settings = args.settings
    release = {
        "retention": f"{settings.retention_days}d or {settings.retention_size_gib}GiB",
        "storage": f"{settings.storage_gib}Gi on StorageClass "
        + (storage_class(settings, args.on_aws) or "(the cluster's default)"),
    }
    return {
        **(release if args.install else {}),
        "prometheus": args.prometheus.url,
        "grafana_service": args.grafana_service,
        "dashboards": dashboard_titles(args.kueue),
    }
