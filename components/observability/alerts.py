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
types all build, rule_types.py; idle GPUs named by job and team, idle.py.
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
    SELFTEST_JOB,
    devices_per_gpu,
    ksm_label,
    pool_nodes,
)
from components.observability.reservations import reservation_rules
from components.observability.rule_types import Alert, Rule
from components.observability.team_cost import TEAM_COST_GROUP, TEAM_COST_INTERVAL, team_cost_rules
from components.observability.training_alerts import goodput_rules, straggler_rules
from components.vocabulary import MONITORING_API, NODE_JOIN_TAINT, QUARANTINE_LABEL
from contract import node_join as join
from model.config import PlatformConfig
from model.config.gpu_operator import DEVICE_PLUGIN_LABEL, MIG_CONFIG_STATE_LABEL
from model.config.node_join import join_timeout_minutes, pools_tested_on_join
from model.config.selftest_schedule import longest_gap_minutes, scheduled, scheduled_pools

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


def _as_hostname(expr: str) -> str:
    return f'label_replace({expr}, "Hostname", "$1", "node", "(.+)")'


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
    physical = _as_hostname(physical_gpus(cfg))
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
            _as_hostname(f"max by (node) (({none} or on(node) {failed}) and on(node) ({nodes}))"),
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
            f"{_as_hostname(f'kube_node_status_condition{selector}')} == 1",
            a.node_condition_for,
            "critical",
            "EKS node monitoring agent reports a failed node condition",
            "{{ $labels.Hostname }}: condition {{ $labels.condition }} is False "
            f"for {a.node_condition_for}.",
            f"EKS node condition False: {', '.join(EKS_AGENT_CONDITIONS)}",
        )
    ]


# The Pushgateway keeps a node's last push until someone deletes it: only nodes still in the
# cluster alert, or a node scaled away would fire for ever.
STILL_A_NODE = "and on(node) kube_node_labels"


def stale_pools(cfg: PlatformConfig) -> str:
    """Seconds since any node of each scheduled pool last pushed, over twice the schedule's
    longest gap, by `pool`. A node that never pushed counts from its creation
    (kube_node_created), so a pool whose nodes came up recently is not stale yet, one with no
    node at all (scaled to zero) never is, and one whose runs are never admitted is. The
    Pushgateway's own push_time_seconds stamps each group on every push (Pushgateway README,
    "About timestamps")."""
    limit = 2 * longest_gap_minutes(cfg.selftest.schedule.cron) * 60
    pools = {p.name: p for p in cfg.gpu_pools}
    terms = []
    for name in scheduled_pools(cfg):
        seen = (
            f"max by (node) (push_time_seconds{{{SELFTEST_JOB}}} or kube_node_created) "
            f"and on(node) {pool_nodes(pools[name].node_selector)}"
        )
        terms.append(f'label_replace(time() - max({seen}) > {limit}, "pool", "{name}", "", "")')
    return " or ".join(terms)


def selftest_rules(cfg: PlatformConfig) -> list[Alert]:
    """A node whose last self-test run failed a check, or measured a figure below its floor
    (where the periodic self-test pushes its results: components/selftest/schedule.py), and a
    pool whose nodes have gone untested for twice the schedule."""
    if not scheduled(cfg):
        return []
    limit_hours = 2 * longest_gap_minutes(cfg.selftest.schedule.cron) / 60
    limit = f"{limit_hours:g} h"
    failed = (
        f"max by (node, check) (gpu_platform_selftest_check_status{{{SELFTEST_JOB}, "
        f'status="FAIL"}}) == 1 {STILL_A_NODE}'
    )
    below = (
        f"gpu_platform_selftest_figure{{{SELFTEST_JOB}}} < on(job, check, node, gpu, unit) "
        f"gpu_platform_selftest_figure_floor{{{SELFTEST_JOB}}} {STILL_A_NODE}"
    )
    return [
        Alert(
            "SelfTestFailed",
            _as_hostname(failed),
            "0s",
            "critical",
            "A node failed a check in its last self-test run",
            "{{ $labels.Hostname }}: check {{ $labels.check }} FAILed in the node's last "
            "self-test run; its report names the cause.",
            "a check FAILed in a node's last self-test run",
        ),
        Alert(
            "SelfTestBelowFloor",
            _as_hostname(below),
            "0s",
            "warning",
            "A self-test figure fell below its floor",
            # A node's own figure (busbw, IOPS) is pushed with gpu="", which Prometheus stores
            # as no label at all: only a GPU's figure names the GPU.
            "{{ $labels.Hostname }}{{ with $labels.gpu }} GPU {{ . }}{{ end }}: "
            "{{ $labels.check }} measured {{ $value }} {{ $labels.unit }} in its last self-test "
            "run, below its floor.",
            "a figure of a node's last self-test run below its floor",
        ),
        Alert(
            "SelfTestStale",
            stale_pools(cfg),
            "0s",
            "warning",
            "No self-test result from a pool for twice its schedule",
            "Pool {{ $labels.pool }} has nodes, but none has pushed a self-test result for "
            "{{ $value | humanizeDuration }}, over twice the schedule's longest gap "
            f"({limit}): its runs are not admitted (no idle node, or the last run still "
            "waits in Kueue and blocks the next) or fail before they push.",
            f"no self-test push from any node of a scheduled pool for over {limit}",
        ),
    ]


def node_join_limit_seconds(cfg: PlatformConfig, pool: str) -> int:
    """How long a node of `pool` may keep the startup taint before it alerts: twice the
    check's limit there, one run cut off by it and the next (the DaemonSet starts it again),
    which also covers the node's start, its DaemonSets and the pull of the self-test's image."""
    return 2 * join_timeout_minutes(cfg, pool) * 60


def stuck_nodes(cfg: PlatformConfig) -> str:
    """Seconds since each node joined, for the nodes of each tested pool that still carry the
    startup taint past that pool's limit, by `pool`. kube-state-metrics exports every node taint
    as kube_node_spec_taint{node, key, value, effect} and the node's creation time as
    kube_node_created (kube-state-metrics docs/metrics/cluster/node-metrics.md)."""
    tainted = f'kube_node_spec_taint{{key="{NODE_JOIN_TAINT["key"]}"}}'
    terms = []
    for pool in pools_tested_on_join(cfg):
        limit = node_join_limit_seconds(cfg, pool.name)
        stuck = (
            f"time() - kube_node_created > {limit} and on(node) {tainted} "
            f"and on(node) {pool_nodes(pool.node_selector)}"
        )
        terms.append(f'label_replace({stuck}, "pool", "{pool.name}", "", "")')
    return " or ".join(terms)


def released_nodes(cfg: PlatformConfig) -> str:
    """How many nodes of each tested pool the circuit breaker released untested, by `pool`: the
    label bootstrap/selftest/node_join.py sets on a FAIL past selftest.node_join.max_failed_share
    (kube_node_labels carries it: node_labels_read)."""
    return " or ".join(
        f"label_replace(count({pool_nodes({**pool.node_selector, join.LABEL: join.RELEASED})}), "
        f'"pool", "{pool.name}", "", "")'
        for pool in pools_tested_on_join(cfg)
    )


def node_join_rules(cfg: PlatformConfig) -> list[Alert]:
    """A GPU node that still carries the node-join startup taint after its pool's limit: its
    check never passed (a FAIL keeps it, and the node is quarantined), never ran (its pod waits
    on a DaemonSet, an image or the GPUs) or cannot remove it. And a pool whose breaker opened:
    its nodes failed the check so often that the latest ones were released untested, and take
    jobs; the alert is the breaker's state, since only the node labels record it."""
    if not pools_tested_on_join(cfg):
        return []
    return [
        Alert(
            "NodeJoinBreakerOpen",
            released_nodes(cfg),
            "0s",
            "warning",
            "A pool's node-join breaker released nodes untested",
            "{{ $value }} node(s) of pool {{ $labels.pool }} failed their node-join check past "
            "the pool's circuit breaker (selftest.node_join.max_failed_share) and were released "
            "untested: they take jobs. When most new nodes fail, the check itself (its image, a "
            "floor) is the likelier fault.",
            "a tested pool has nodes its node-join breaker released untested "
            "(gpu-platform/node-join=released)",
        ),
        Alert(
            "NodeJoinStuck",
            _as_hostname(stuck_nodes(cfg)),
            "0s",
            "warning",
            "A new GPU node is still untested after its limit",
            "{{ $labels.Hostname }} (pool {{ $labels.pool }}) joined "
            "{{ $value | humanizeDuration }} ago and still carries the node-join startup taint: "
            "its self-test has not passed, so no job lands there; its node-join pod's log and "
            f"the node's {QUARANTINE_LABEL} label say why.",
            "a GPU node still carries the node-join taint twice its pool's check limit after "
            "it joined",
        ),
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
