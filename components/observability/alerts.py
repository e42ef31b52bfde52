"""The platform's alerts as one PrometheusRule (monitoring.coreos.com/v1) in the monitoring
namespace: a pure builder of its spec from the config, and the component that declares it.

Series labels (FACTS.md, "Monitoring"): the DCGM exporter names the node `Hostname`, the GPU
`gpu` and `UUID`; its ServiceMonitor keeps `honorLabels: false`, so the pod that holds a GPU
is `exported_namespace` / `exported_pod` / `exported_container` (the scrape's own `namespace`
and `pod` are the exporter's). Alerts built on kube-state-metrics copy its `node` label into
`Hostname`, so every alert names a node the same way.

The training jobs' rules (goodput, stragglers) are components/observability/training_alerts.py;
the fleet's failure rate and the checkpoint interval it advises, fleet_health.py; each pool's
baseline of self-test figures, baseline.py; the node series they share, node_series.py; the rule
types all build, rule_types.py; idle GPUs named by job and team, idle.py; the self-test's
runs and the node-join check, selftest_alerts.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.base import PLATFORM_LABELS, PlatformComponent
from components.context import StackContext
from components.data.gpu_operator import (
    DEFAULT_CONFIG,
)
from components.kubernetes_object import KubernetesObject
from components.observability.baseline import BASELINE_GROUP, BASELINE_INTERVAL, baseline_rules
from components.observability.fleet_health import (
    FLEET_GROUP,
    FLEET_INTERVAL,
    checkpoint_rules,
    fleet_rules,
)
from components.observability.idle import idle_rules
from components.observability.node_series import (
    EKS_AGENT_CONDITIONS,
    GPU_RESOURCES,
    as_hostname,
    devices_per_gpu,
    ksm_label,
    pool_nodes,
)
from components.observability.reservations import reservation_rules
from components.observability.rule_types import Alert, Rule
from components.observability.selftest_alerts import node_join_rules, selftest_rules
from components.observability.team_cost import TEAM_COST_GROUP, TEAM_COST_INTERVAL, team_cost_rules
from components.observability.training_alerts import goodput_rules, straggler_rules
from components.vocabulary import MONITORING_API
from contract import node_join as join
from model.config import PlatformConfig
from model.config.gpu_operator import DEVICE_PLUGIN_LABEL, MIG_CONFIG_STATE_LABEL
from model.config.node_join import pools_tested_on_join

RULE_NAME = "gpu-platform-alerts"
GPU_DEVICES = f"kube_node_status_capacity{{{GPU_RESOURCES}}}"
# Node labels the alerts read. kube-state-metrics exports a node label only when its key is in
# `--metric-labels-allowlist` (monitoring_values sets it from this tuple), as `label_<key>`
# with the same character rule as resources.
NODE_LABELS_READ = (DEVICE_PLUGIN_LABEL, MIG_CONFIG_STATE_LABEL)


def node_labels_read(cfg: PlatformConfig) -> tuple[str, ...]:
    """Every node label the stack's rules read: the device-plugin config, the MIG manager's
    state, the labels that select each pool's nodes (SelfTestStale, NodeJoinStuck,
    MigNodeNoAllocatableGpu, the Fleet health records) and, where new nodes are tested, where
    each node's check stands (NodeJoinBreakerOpen)."""
    keys = {k for p in cfg.gpu_pools for k in p.node_selector}
    if pools_tested_on_join(cfg):
        keys.add(join.LABEL)
    return (*NODE_LABELS_READ, *sorted(keys - set(NODE_LABELS_READ)))


# GPU memory in use, in percent of the GPU's framebuffer (FB_USED and FB_FREE are MiB).
FB_PERCENT = "100 * DCGM_FI_DEV_FB_USED{sel} / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"
GPU = "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) on {{ $labels.Hostname }}"
POD = "pod {{ $labels.exported_namespace }}/{{ $labels.exported_pod }}"


def physical_gpus(cfg: PlatformConfig) -> str:
    """Physical GPUs per node (`node`): the devices the node advertises divided by the devices
    per GPU of the device-plugin config its label names. Capacity alone counts replicas and
    slices, while the exporter reports physical GPUs; and capacity, unlike a live count,
    keeps a GPU that fell off the bus."""
    devices = f"sum by (node) ({GPU_DEVICES})"
    label = ksm_label(DEVICE_PLUGIN_LABEL)
    keys_by_factor: dict[int, list[str]] = {}
    for key, factor in sorted(devices_per_gpu(cfg).items()):
        if key != DEFAULT_CONFIG:
            keys_by_factor.setdefault(factor, []).append(key)
    # A node without the label runs the `default` entry: whole GPUs.
    terms = [f'({devices} unless on(node) kube_node_labels{{{label}!=""}})']
    terms += [
        f'({devices} / {factor} and on(node) kube_node_labels{{{label}=~"{"|".join(keys)}"}})'
        for factor, keys in sorted(keys_by_factor.items())
    ]
    return " or ".join(terms)


def gpu_rules(cfg: PlatformConfig) -> list[Alert]:
    """Alerts on the GPUs themselves, from the DCGM exporter, on every provider."""
    a = cfg.alerts
    teams = "|".join(t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training))
    training_pod = f'{{exported_pod!="", exported_namespace=~"{teams}"}}'
    physical = as_hostname(physical_gpus(cfg))
    return [
        Alert(
            "GpuFramebufferFull",
            f"{FB_PERCENT.format(sel='')} > {a.framebuffer_full_percent}",
            a.framebuffer_full_for,
            "warning",
            "GPU memory nearly full: out-of-memory risk",
            f"{GPU} uses {{{{ $value | humanize }}}} % of its memory "
            f"(threshold {a.framebuffer_full_percent} %).",
            f"GPU memory used > {a.framebuffer_full_percent} %",
        ),
        Alert(
            "GpuTemperatureHigh",
            f"DCGM_FI_DEV_GPU_TEMP > {a.temperature_celsius}",
            a.temperature_for,
            "warning",
            "GPU running hot",
            f"{GPU} is at {{{{ $value }}}} °C, above {a.temperature_celsius} °C "
            f"for {a.temperature_for}.",
            f"GPU temperature > {a.temperature_celsius} celsius",
        ),
        Alert(
            "GpuMigrationCandidate",
            f"{FB_PERCENT.format(sel=training_pod)} > {a.migration_framebuffer_percent}",
            a.migration_for,
            "info",
            "Training pod near its GPU memory limit: checkpoint and requeue",
            f"{POD} uses {{{{ $value | humanize }}}} % of {GPU}'s memory "
            f"(threshold {a.migration_framebuffer_percent} %).",
            f"GPU memory used by a training pod > {a.migration_framebuffer_percent} %",
        ),
        Alert(
            "GpuXidError",
            # The gauge holds the last XID error code, 0 when none: any code in the window.
            f"max_over_time(DCGM_FI_DEV_XID_ERRORS[{a.xid_window}]) > 0",
            "0s",
            "critical",
            "GPU reported an XID error",
            f"{GPU} reported XID {{{{ $value }}}} within the last {a.xid_window}.",
            f"any XID error in the last {a.xid_window}",
        ),
        Alert(
            "GpuMissing",
            # A GPU node with more physical GPUs than the exporter reports on it: the exporter
            # is down (no series at all) or a GPU fell off the bus. The exporter reports a
            # series per GPU, per MIG instance under MIG and per pod on a shared GPU: distinct
            # `gpu` indexes count physical GPUs.
            f"{physical} > 0 unless on(Hostname) "
            f"(count by (Hostname) (count by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)) "
            f">= on(Hostname) {physical})",
            a.gpu_missing_for,
            "critical",
            "GPU node with GPUs the DCGM exporter does not report",
            "{{ $labels.Hostname }} has {{ $value }} GPUs, but the DCGM exporter "
            f"reports fewer (or none) for {a.gpu_missing_for}.",
            "DCGM exporter reports fewer GPUs than the node has",
        ),
    ]


def mig_rules(cfg: PlatformConfig) -> list[Alert]:
    """A node of a MIG pool that the MIG manager left advertising no GPU (gpu-operator issue
    2833): its allocatable GPUs and MIG slices stay 0, or the manager labelled the node
    `nvidia.com/mig.config.state=failed`. No series counts as 0: a device plugin that never
    registered leaves no allocatable series at all."""
    pools = [p for p in cfg.gpu_pools if p.sharing.mode == "mig"]
    if not pools:
        return []
    a = cfg.alerts
    nodes = " or ".join(pool_nodes(p.node_selector) for p in pools)
    allocatable = f"sum by (node) (kube_node_status_allocatable{{{GPU_RESOURCES}}})"
    none = f"({allocatable} or on(node) 0 * ({nodes})) == 0"
    failed = f'kube_node_labels{{{ksm_label(MIG_CONFIG_STATE_LABEL)}="failed"}}'
    return [
        Alert(
            "MigNodeNoAllocatableGpu",
            as_hostname(f"max by (node) (({none} or on(node) {failed}) and on(node) ({nodes}))"),
            a.mig_unallocatable_for,
            "critical",
            "MIG node advertises no GPU: the MIG manager left it unconfigured",
            "{{ $labels.Hostname }}, a node of a MIG pool, has advertised no GPU or MIG slice "
            "(or its MIG manager reported nvidia.com/mig.config.state=failed) for "
            f"{a.mig_unallocatable_for}.",
            "a MIG pool's node with 0 allocatable GPUs or MIG slices, or mig.config.state failed",
        )
    ]


def queue_rules(cfg: PlatformConfig) -> list[Alert]:
    """Queue depth per ClusterQueue, from Kueue's metrics (status `active` and
    `inadmissible`: every pending workload); none where Kueue is off, which exports nothing."""
    if not cfg.scheduling.enabled:
        return []
    a = cfg.alerts
    return [
        Alert(
            "KueueQueueBacklog",
            f"sum by (cluster_queue) (kueue_pending_workloads) > {a.queue_depth}",
            a.queue_depth_for,
            "warning",
            "Workloads are piling up in a queue",
            "ClusterQueue {{ $labels.cluster_queue }} holds {{ $value }} pending workloads, "
            f"more than {a.queue_depth} for {a.queue_depth_for}.",
            f"pending workloads per ClusterQueue > {a.queue_depth}",
        )
    ]


def node_rules(cfg: PlatformConfig) -> list[Alert]:
    """The EKS node monitoring agent's conditions (AWS only: an existing cluster runs no
    agent, so it is alerted from the exporter's XID and health metrics alone)."""
    if cfg.provider != "aws":
        return []
    a = cfg.alerts
    conditions = "|".join(EKS_AGENT_CONDITIONS)
    selector = f'{{condition=~"{conditions}", status="false"}}'
    return [
        Alert(
            "EksNodeConditionFailed",
            f"{as_hostname(f'kube_node_status_condition{selector}')} == 1",
            a.node_condition_for,
            "critical",
            "EKS node monitoring agent reports a failed node condition",
            "{{ $labels.Hostname }}: condition {{ $labels.condition }} is False "
            f"for {a.node_condition_for}.",
            f"EKS node condition False: {', '.join(EKS_AGENT_CONDITIONS)}",
        )
    ]


def alert_groups(cfg: PlatformConfig) -> dict[str, list[Rule]]:
    """The stack's rules, one group per source of metrics; a group's records come before the
    alerts that read them (Prometheus evaluates a group's rules in order)."""
    groups = {
        "gpu-platform.gpus": gpu_rules(cfg),
        "gpu-platform.idle": idle_rules(cfg),
        "gpu-platform.mig": mig_rules(cfg),
        "gpu-platform.queues": queue_rules(cfg),
        "gpu-platform.nodes": node_rules(cfg),
        "gpu-platform.selftest": selftest_rules(cfg),
        "gpu-platform.node-join": node_join_rules(cfg),
        "gpu-platform.goodput": goodput_rules(cfg),
        "gpu-platform.stragglers": straggler_rules(cfg),
        FLEET_GROUP: [*fleet_rules(cfg), *checkpoint_rules(cfg)],
        BASELINE_GROUP: baseline_rules(cfg),
        "gpu-platform.reservations": reservation_rules(cfg),
        TEAM_COST_GROUP: team_cost_rules(cfg),
    }
    return {name: rules for name, rules in groups.items() if rules}


# The groups evaluated at a set interval: the fleet records count samples as time; the
# baseline reads a long window of its own samples; the team cost adds its interval each time.
GROUP_INTERVALS = {
    FLEET_GROUP: FLEET_INTERVAL,
    BASELINE_GROUP: BASELINE_INTERVAL,
    TEAM_COST_GROUP: TEAM_COST_INTERVAL,
}


def prometheus_rule_spec(cfg: PlatformConfig) -> dict[str, Any]:
    """The PrometheusRule's spec."""
    return {
        "groups": [
            {
                "name": name,
                **({"interval": GROUP_INTERVALS[name]} if name in GROUP_INTERVALS else {}),
                "rules": [rule.rule(cfg.alerts) for rule in rules],
            }
            for name, rules in alert_groups(cfg).items()
        ]
    }


def alert_report(cfg: PlatformConfig) -> dict[str, str]:
    """For the plan: each alert with its threshold and duration."""
    return {
        alert.name: alert.condition + (f" for {alert.duration}" if alert.duration != "0s" else "")
        for rules in alert_groups(cfg).values()
        for alert in rules
        if isinstance(alert, Alert)
    }


def prometheus_rule(cfg: PlatformConfig, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": {
            "name": RULE_NAME,
            "namespace": namespace,
            "labels": PLATFORM_LABELS,
        },
        "spec": prometheus_rule_spec(cfg),
    }


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class GpuAlertsArgs:
    context: StackContext
    cfg: PlatformConfig
    namespace: str
    # What must exist first: the monitoring namespace and the release that installs the
    # PrometheusRule CRD.
    after: Sequence[pulumi.Resource] = ()


class GpuAlerts(PlatformComponent):
    PLANE = "observability"

    def __init__(self, name: str, args: GpuAlertsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        rule = KubernetesObject(
            f"{args.context.env}-{RULE_NAME}",
            prometheus_rule(args.cfg, args.namespace),
            self.child(depends_on=list(args.after)),
        )
        self.outputs = {"alerts": alert_report(args.cfg)}
        self.register_outputs({"rule": rule.id, **self.outputs})
