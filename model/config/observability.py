"""The observability config: Prometheus (kube-prometheus-stack) and Grafana, on every provider.

Prometheus keeps its data on a persistent volume: on AWS a gp3 StorageClass the platform declares
(EBS CSI driver); on an existing cluster the StorageClass the stack names, else the cluster's
default, since the platform cannot know which of the admin's classes suits Prometheus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from model.config.base import DnsLabel, FieldProblem, Int, Settings
from model.config.bounds import GP3_MAX_GIB

if TYPE_CHECKING:
    from model.config import PlatformConfig


class GrafanaSettings(Settings):
    admin_user: str = Field("admin", description="Grafana's admin login name.")
    admin_password: str | None = Field(
        None,
        description="Never set. The platform generates the admin password, keeps it in a "
        "Kubernetes Secret and exports it only as a Pulumi secret; a password here would sit "
        "in plain text in the stack file.",
    )


# The Pushgateway's own volume (components/observability/pushgateway.py): 2 GiB, the chart's
# default size, holds far more than one group of a few hundred series per node or job.
PUSHGATEWAY_VOLUME_GIB = 2


class ObservabilitySettings(Settings):
    """kube-prometheus-stack (Prometheus, Alertmanager, Grafana), pinned in model/versions.py."""

    retention_days: Int = Field(
        15,
        ge=1,
        le=36500,
        description="How long Prometheus keeps samples (its --storage.tsdb.retention).",
    )
    retention_size_gib: Int = Field(
        45,
        ge=1,
        le=GP3_MAX_GIB,
        description="Prometheus deletes the oldest blocks beyond this size; keep it below "
        "storage_gib so the volume never fills (the WAL and compaction need headroom).",
    )
    storage_gib: Int = Field(
        50, ge=1, le=GP3_MAX_GIB, description="Size of Prometheus's persistent volume."
    )
    storage_class: DnsLabel | None = Field(
        None,
        description="provider existing only: the StorageClass of Prometheus's volume (a "
        "single-writer ReadWriteOnce volume; block storage such as Ceph RBD is best). Unset: "
        "the cluster's default StorageClass. On AWS the platform declares `gp3` (EBS, "
        "encrypted).",
    )
    scrape_interval_seconds: Int = Field(
        30, ge=5, le=300, description="How often Prometheus scrapes every target."
    )
    pushgateway_retention_hours: Int = Field(
        24,
        ge=1,
        le=8760,
        description="How long the Pushgateway keeps a training job's goodput group after its "
        "last push: an hourly sweep deletes older ones (the Pushgateway itself keeps every "
        "group for ever). Prometheus has scraped them long before; the figures stay there.",
    )
    grafana: GrafanaSettings = Field(default_factory=GrafanaSettings)


def check_observability(cfg: PlatformConfig) -> None:
    """Rules that span the observability settings and the provider."""
    obs = cfg.observability
    if obs.grafana.admin_password is not None:
        raise FieldProblem(
            "observability.grafana.admin_password",
            "Grafana's admin password in plain config: remove it; the platform generates one, "
            "keeps it in a Kubernetes Secret and exports it as the Pulumi secret "
            "`grafana_admin_password` (`pulumi stack output --show-secrets`)",
        )
    if obs.retention_size_gib >= obs.storage_gib:
        raise FieldProblem(
            "observability.retention_size_gib",
            f"{obs.retention_size_gib} GiB, but the volume is {obs.storage_gib} GiB "
            "(observability.storage_gib): give a retention size below the volume's size",
        )
    if cfg.provider == "aws" and obs.storage_class is not None:
        raise FieldProblem(
            "observability.storage_class",
            "only valid with provider existing; on AWS Prometheus's volume uses the gp3 "
            "StorageClass the platform declares",
        )
