"""The self-test's alerts (issue 39's lifecycle of a node's health): a node whose last run failed
a check or measured a figure below its floor, a pool whose nodes have gone untested for twice
the schedule (the periodic runs, components/selftest/schedule.py); a new node still untested
after its pool's limit, and a pool whose node-join circuit breaker released nodes untested
(components/selftest/node_join.py). alerts.py groups them with the others."""

from __future__ import annotations

from components.observability.node_series import SELFTEST_JOB, as_hostname, pool_nodes
from components.observability.rule_types import Alert
from components.vocabulary import NODE_JOIN_TAINT, QUARANTINE_LABEL
from contract import node_join as join
from model.config import PlatformConfig
from model.config.node_join import join_timeout_minutes, pools_tested_on_join
from model.config.selftest_schedule import longest_gap_minutes, scheduled, scheduled_pools

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
            as_hostname(failed),
            "0s",
            "critical",
            "A node failed a check in its last self-test run",
            "{{ $labels.Hostname }}: check {{ $labels.check }} FAILed in the node's last "
            "self-test run; its report names the cause.",
            "a check FAILed in a node's last self-test run",
        ),
        Alert(
            "SelfTestBelowFloor",
            as_hostname(below),
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
            as_hostname(stuck_nodes(cfg)),
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
