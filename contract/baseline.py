"""A pool's stored baseline of self-test figures, which a GPU-stack change's canary is held to
(docs/selftest.md, "Held to the pool's baseline"): the recording rule that stores it
(components/observability/baseline.py records it, bootstrap/selftest/baseline.py queries it) and
the figures it holds, each spelled once so a rename cannot split the two sides.

The series is labelled `pool`, `check` and `unit`; its value is the median, over the pool's
nodes and GPUs, of each one's last passing figure in alerts.baseline_window."""

from __future__ import annotations

BASELINE_RECORD = "gpu_platform_pool:selftest_figure_baseline:median"

# The figures held, as the self-test names and pushes them (check, unit): throughputs, for which
# less is worse. A latency (less is better) or a count is never held to a baseline this way.
# bootstrap/selftest/compute.py (GEMM, HBM) and collectives.py (busbw inside one node).
HELD_FIGURES: tuple[tuple[str, str], ...] = (
    ("compute.gemm_bf16", "TFLOP/s"),
    ("compute.memory_bandwidth", "TB/s"),
    ("collectives.allreduce_busbw_intra_node", "GB/s"),
)

# The run's row for a held figure is `baseline.<check>`; it is pushed like any check, so the
# rule leaves out a node's figure while that node's run FAILed its baseline row (a canary below
# the bar must not lower the bar it is held to on the next try).
ROW_PREFIX = "baseline."
