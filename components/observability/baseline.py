"""Each pool's stored baseline, as recording rules: per pool, check and unit, the median of the
last passing figure of every node and GPU of the pool over alerts.baseline_window. A GPU-stack
change's canary runs the self-test's node set and holds its figures to it
(bootstrap/selftest/baseline.py; docs/selftest.md, "Held to the pool's baseline").

What the rules read is what every self-test run pushes (bootstrap/selftest/push.py): the
Pushgateway keeps one group per node, its last run, and Prometheus scrapes it for as long as the
group is there. A node's figure counts only while its check's status in the same group is PASS,
so a node whose last run failed keeps its last passing figure from earlier runs in the window.

Gone nodes: the Pushgateway keeps a group after its node left (no TTL; the sweep,
components/observability/pushgateway_sweep.py, deletes the training jobs' goodput groups, not
the self-test's), and Prometheus goes on scraping it. The first rule reads a figure only while
kube-state-metrics still lists the node in the pool (kube_node_labels), so a gone node's group
stops counting the moment the node goes, whether or not anything ever deletes it; its last
passing figures then count until they fall out of the window, as the figures of a node scaled
away in the window should: a pool that scaled to zero keeps its baseline for the canary that
starts it again."""

from __future__ import annotations

from components.observability.node_series import SELFTEST_JOB, by_pool
from components.observability.rule_types import Record, Rule
from contract.baseline import BASELINE_RECORD, HELD_FIGURES, ROW_PREFIX
from model.config import PlatformConfig
from model.config.node_join import canary_pools

BASELINE_GROUP = "gpu-platform.baseline"
# The last rule reads a window of the first's samples at each evaluation: one every 5 minutes
# (4,032 samples a series over 14 days) rather than the global 30 s. A node's figure stays in
# the Pushgateway while the node lives, so a sample every 5 minutes misses only a node gone
# within 5 minutes of its run.
BASELINE_INTERVAL = "5m"
NODE_PASSING = "gpu_platform_node:selftest_figure:passing"
NODE_LAST_PASSING = "gpu_platform_node:selftest_figure_passing:last_over_window"
FIGURE = "gpu_platform_selftest_figure"
STATUS = "gpu_platform_selftest_check_status"
FIGURE_LABELS = "pool, check, node, gpu, unit"


def passing_figures(cfg: PlatformConfig) -> str:
    """The held figures of each pool's nodes now, by (pool, check, node, gpu, unit): only where
    the check's status in the same push is PASS, and not while the node's run FAILed that
    figure's baseline row (a canary below the bar must not lower the bar it is held to)."""
    held = " or ".join(
        f'{FIGURE}{{{SELFTEST_JOB}, check="{check}", unit="{unit}"}}'
        for check, unit in HELD_FIGURES
    )
    passed = f'{STATUS}{{{SELFTEST_JOB}, status="PASS"}} == 1'
    # `baseline.compute.gemm_bf16` FAILed: its `check` label rewritten to `compute.gemm_bf16`.
    row = ROW_PREFIX.removesuffix(".")
    below = (
        f'label_replace({STATUS}{{{SELFTEST_JOB}, check=~"{row}[.].+", status="FAIL"}} == 1, '
        f'"check", "$1", "check", "{row}[.](.+)")'
    )
    figures = f"(({held}) and on(job, node, check) ({passed}) unless on(job, node, check) {below})"
    return f"max by ({FIGURE_LABELS}) ({by_pool(figures, cfg.gpu_pools)})"


def baseline_rules(cfg: PlatformConfig) -> list[Rule]:
    """The pool's baseline, where a canary reads it (every pool that rolls through one; the
    scheduled runs, the node-join checks and the canaries push the figures it is made of). A
    median over the pool's nodes and GPUs, not a max: one fast node (a better-cooled slot, a
    luckier part) would set a bar most of the pool's own nodes miss, and every canary that
    lands on an ordinary node would fail; nor a min or a mean, which one slow node not yet
    quarantined drags down until a regressed stack passes. The median moves only when half the
    pool does."""
    if not canary_pools(cfg):
        return []
    window = cfg.alerts.baseline_window
    return [
        Record(NODE_PASSING, passing_figures(cfg)),
        Record(
            NODE_LAST_PASSING,
            f"max by ({FIGURE_LABELS}) (last_over_time({NODE_PASSING}[{window}]))",
        ),
        Record(BASELINE_RECORD, f"quantile by (pool, check, unit) (0.5, {NODE_LAST_PASSING})"),
    ]
