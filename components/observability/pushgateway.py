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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.base import PlatformComponent
from components.context import StackContext
from components.helm import pinned_release
from components.observability.monitoring import storage_class
from components.vocabulary import PUSHGATEWAY
from model.config import PlatformConfig
from model.versions import PUSHGATEWAY_IMAGE_TAG

# The Pushgateway's own data: 2 GiB, the chart's default size, holds far more than one group
# of a few hundred series per node or job.
PUSHGATEWAY_VOLUME_GIB = 2
PUSHGATEWAY_DATA = "/data/pushgateway.data"


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
            mirror=args.context.registry_mirror,
        )
        self.register_outputs({})
