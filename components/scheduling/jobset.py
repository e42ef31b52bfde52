"""JobSet (kubernetes-sigs/jobset v0.12.0): the controller every job the platform renders runs
under, one JobSet per job (components/scheduling/training_job.py). Its chart's release, on every
stack: the self-test runs as a JobSet wherever it runs, and a MultiKueue worker must serve the
kind, or its manager's connection fails (components/scheduling/kueue_frameworks.py).

The chart's one CRD sits in its crds/ folder (`crds/jobset.x-k8s.io_jobsets.yaml`): Helm installs
it with the first release and never upgrades it (Helm docs, "Custom Resource Definitions": "no
support at this time for upgrading or deleting CRDs using Helm"), as for the other charts whose
CRDs ship in crds/ (gpu-operator, network-operator, kube-prometheus-stack's). A pin bump applies
the new CRD first (docs/scheduling.md, "JobSet"). The chart has no value for controller feature
gates (templates/controller/configmap.yaml), so the gates stay JobSet's defaults: RestartJob and
InPlaceRestart off, which the platform's failure policy does not use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.base import PlatformComponent
from components.context import StackContext
from components.helm import pinned_release

CHART = "jobset"


def jobset_values(node_selector: dict[str, str], monitoring_namespace: str) -> dict[str, Any]:
    """The chart's values (shared/charts/jobset/0.12.0/values.yaml): the controller on the
    add-on nodes, and its metrics scraped. Every stack runs the platform's Prometheus Operator or
    its cluster's (existing.addons.kube_prometheus_stack, which must serve ServiceMonitors), so
    `prometheus.enable` renders the chart's ServiceMonitor, whose template fails without that
    API (templates/prometheus/monitor.yaml). Prometheus scrapes the controller's https port
    with its service-account token, which kube-prometheus-stack's ClusterRole lets it `get` on
    `/metrics`; without cert-manager the chart skips verifying the controller's self-signed
    certificate (`insecureSkipVerify: true`). `prometheusNamespace` names where the chart's
    Role binding looks for Prometheus's service accounts."""
    return {
        "controller": {"nodeSelector": dict(node_selector)},
        "prometheus": {"enable": True, "prometheusNamespace": monitoring_namespace},
    }


@dataclass(frozen=True)
class JobSetControllerArgs:
    context: StackContext
    namespace: pulumi.Input[str]
    node_selector: dict[str, str]
    monitoring_namespace: str
    # The nodes it runs on, its namespace, and the ServiceMonitor CRD's release.
    after: Sequence[pulumi.Resource] = ()


class JobSetController(PlatformComponent):
    """The JobSet controller and webhooks, from the pinned chart, in the platform's namespace
    beside Kueue; `release` is what jobs and Kueue wait for."""

    PLANE = "scheduling"

    def __init__(self, name: str, args: JobSetControllerArgs, opts=None):
        super().__init__(name, opts)
        self.release = pinned_release(
            f"{args.context.env}-jobset",
            CHART,
            args.namespace,
            jobset_values(args.node_selector, args.monitoring_namespace),
            self.child(depends_on=list(args.after)),
            context=args.context,
        )
        self.register_outputs({})
