"""Holding a run's figures to its pool's stored baseline (bootstrap/selftest/baseline.py), what a
GPU-stack change's canary adds to the self-test: literal figures held to a Prometheus stand-in's
answer, then real 2-rank CPU runs (torchrun, gloo) whose exit status follows the held figure.

The query the image sends is the series the program's rules record: both read its name from
contract/baseline.py."""

from __future__ import annotations

import json
import sys

import pytest
from selftest import baseline, metrics
from selftest.result import CheckResult

from contract.baseline import BASELINE_RECORD
from tests.helpers.loopback import free_port
from tests.helpers.prometheus import Prometheus, sample
from tests.helpers.pushgateway import Gateway
from tests.helpers.selftest_process import TORCHRUN, run

POOL = "h100"
ON = {"SELFTEST_BASELINE_POOL": POOL}
GEMM = {"check": "compute.gemm_bf16", "unit": "TFLOP/s", "pool": POOL}
BUSBW = {"check": "collectives.allreduce_busbw_intra_node", "unit": "GB/s", "pool": POOL}
# The query, as a user would type it in Prometheus (docs/selftest.md, "Held to the pool's
# baseline").
QUERY = 'gpu_platform_pool:selftest_figure_baseline:median{pool="h100"}'


def gemm(gpu: int, tflops: float, status: str = "PASS") -> CheckResult:
    """A rank's GEMM row as bootstrap/selftest/compute.py reports it: a per-GPU figure."""
    return CheckResult("compute.gemm_bf16", status, tflops, "TFLOP/s", details={"gpu": gpu})


def node_a(*gpus: float) -> list:
    """node-a's ranks, one a GPU, each with its GEMM figure."""
    return [("node-a", gpu, [gemm(gpu, tflops)]) for gpu, tflops in enumerate(gpus)]


def held(per_rank, answer, env=ON):
    with Prometheus(answer) as prometheus:
        rows = baseline.hold(env, prometheus.url, per_rank)
    return rows, prometheus.queries


def test_a_figure_20_percent_under_the_baseline_fails_naming_pool_figure_and_numbers():
    """900 TFLOP/s less the default tolerance 0.1 is a bar of 810: GPU 0's 720 is 20 % under
    it and fails; GPU 1's 855 (5 % under the baseline) would pass."""
    rows, _ = held(node_a(720.0, 855.0), [sample(900, **GEMM)])
    assert list(rows) == ["node-a"]
    (row,) = rows["node-a"]
    assert (row.name, row.status, row.value, row.unit) == (
        "baseline.compute.gemm_bf16", "FAIL", 720.0, "TFLOP/s"
    )  # fmt: skip
    assert row.reason == (
        "compute.gemm_bf16: 720 TFLOP/s on node node-a GPU 0 under pool h100's baseline "
        "900 TFLOP/s less the tolerance 0.1 (810 TFLOP/s)"
    )
    assert row.threshold == ">= 810 (90% of the baseline 900)"
    assert row.source == f"{QUERY}, less SELFTEST_BASELINE_TOLERANCE=0.1"


def test_5_percent_under_the_baseline_passes():
    rows, _ = held(node_a(855.0, 870.0), [sample(900, **GEMM)])
    (row,) = rows["node-a"]
    assert (row.status, row.value, row.reason) == ("PASS", 855.0, "")


def test_the_tolerance_is_the_environments():
    """SELFTEST_BASELINE_TOLERANCE=0.25: 720 is within 25 % of 900 (bar 675)."""
    env = {**ON, "SELFTEST_BASELINE_TOLERANCE": "0.25"}
    rows, _ = held(node_a(720.0), [sample(900, **GEMM)], env)
    assert rows["node-a"][0].status == "PASS"


def test_a_nodes_figure_is_held_as_it_is_pushed_and_each_node_gets_its_rows():
    """busbw is a node's figure, pushed once from the rank the node reports (push.figure_rows):
    node-b's 40 GB/s is under 100 × 0.9; node-a's 95 passes; a figure not measured (HBM) and
    a figure the pool has no baseline for (HBM here too) are not held."""
    busbw = "collectives.allreduce_busbw_intra_node"
    per_rank = [
        ("node-a", 0, [CheckResult(busbw, "PASS", 95.0, "GB/s"), gemm(0, 880.0)]),
        ("node-a", 1, [CheckResult(busbw, "PASS", 95.0, "GB/s"), gemm(1, 890.0)]),
        ("node-b", 0, [CheckResult(busbw, "PASS", 40.0, "GB/s"), gemm(0, 900.0)]),
        ("node-b", 1, [CheckResult(busbw, "PASS", 40.0, "GB/s"), gemm(1, 910.0)]),
    ]
    rows, _ = held(per_rank, [sample(100, **BUSBW), sample(900, **GEMM)])
    statuses = {node: {r.name: r.status for r in node_rows} for node, node_rows in rows.items()}
    assert statuses == {
        "node-a": {f"baseline.{busbw}": "PASS", "baseline.compute.gemm_bf16": "PASS"},
        "node-b": {f"baseline.{busbw}": "FAIL", "baseline.compute.gemm_bf16": "PASS"},
    }
    (failed,) = [r for r in baseline.report_rows(rows) if r.status == "FAIL"]
    assert failed.reason.startswith(f"{busbw}: 40 GB/s on node node-b under pool h100's")


def test_a_held_figure_the_pool_has_no_baseline_for_is_a_warn():
    rows, _ = held(node_a(880.0), [sample(100, **BUSBW)])
    (row,) = rows["node-a"]
    assert (row.name, row.status) == ("baseline.compute.gemm_bf16", "WARN")
    assert row.reason == (
        "pool h100 has no baseline for compute.gemm_bf16 (TFLOP/s): held to its floors only"
    )


def test_no_baseline_for_the_pool_is_one_warn_not_a_fail():
    """A first roll: none of the pool's nodes pushed a passing figure in the window."""
    rows, queries = held(node_a(720.0, 855.0), [])
    assert queries == [QUERY]
    (row,) = baseline.report_rows(rows)
    assert (row.name, row.status) == ("baseline", "WARN")
    assert row.reason == (
        f"pool h100 has no baseline ({QUERY} is empty: none of its nodes pushed a passing figure "
        "in alerts.baseline_window, as on a first roll): held to its floors only"
    )


def test_prometheus_down_is_a_warn_saying_why():
    url = f"http://127.0.0.1:{free_port()}"
    rows = baseline.hold(ON, url, node_a(720.0))
    (row,) = rows["node-a"]
    assert (row.name, row.status) == ("baseline", "WARN")
    assert row.reason.startswith(f"Prometheus at {url} did not answer {QUERY}: ")
    assert row.reason.endswith(": held to its floors only")


def test_no_prometheus_configured_is_a_warn_naming_the_variable():
    (row,) = baseline.hold(ON, None, node_a(720.0))["node-a"]
    assert row.status == "WARN"
    assert row.reason == (
        "no Prometheus to ask for pool h100's baseline (SELFTEST_PROMETHEUS_URL unset): held to "
        "its floors only"
    )


def test_the_image_queries_the_series_the_program_records():
    """The name both sides read from contract/baseline.py: the program records it last in its
    gpu-platform.baseline group (tests/components/observability/test_baseline.py), the image
    asks for it (a Prometheus stand-in records the query), so a rename cannot split them."""
    _, (sent,) = held(node_a(900.0), [])
    assert sent == f'{BASELINE_RECORD}{{pool="{POOL}"}}' == QUERY


@pytest.mark.parametrize("value", ["10%", "1", "-0.1", "nan", "0.1,0.2"])
def test_a_bad_tolerance_stops_the_run_naming_the_variable_and_the_value(tmp_path, value):
    with pytest.raises(SystemExit) as raised:
        baseline.tolerance({"SELFTEST_BASELINE_TOLERANCE": value})
    assert str(raised.value) == (
        f"SELFTEST_BASELINE_TOLERANCE={value!r}: not a fraction from 0 up to (not including) 1; "
        "e.g. 0.1 lets a figure fall 10 % below its pool's baseline"
    )


def test_a_bad_tolerance_stops_the_process_before_any_check(tmp_path):
    done = run([sys.executable, "-m", "selftest", "--out", str(tmp_path), "--checks", "inventory"],
               RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", **ON,
               SELFTEST_BASELINE_TOLERANCE="10%")  # fmt: skip
    assert done.returncode == 1
    assert "SELFTEST_BASELINE_TOLERANCE='10%': not a fraction" in done.stderr
    assert not (tmp_path / "report.json").exists()


def test_the_default_tolerance_is_a_tenth():
    assert baseline.tolerance({}) == 0.1


# --- a real run --------------------------------------------------------------------------------


def canary_run(tmp_path, busbw_baseline: float):
    """Two gloo ranks on one "node", the collectives group (its busbw inside the node is a held
    figure), the pool's baseline from a Prometheus stand-in, the metrics to a Pushgateway
    stand-in. The busbw floor of 0 keeps the check itself passing on a loaded machine."""
    with Prometheus([sample(busbw_baseline, **BUSBW)]) as prometheus, Gateway() as gateway:
        done = run([str(TORCHRUN), "--standalone", "--nproc_per_node=2", "-m", "selftest",
                    "--out", str(tmp_path), "--checks", "collectives", "--sizes", "1024,65536",
                    "--iters", "5", "--floor", "intra_node_busbw_gbps=0"],
                   NODE_NAME="node-a", SELFTEST_PROMETHEUS_URL=prometheus.url,
                   SELFTEST_PUSHGATEWAY_URL=gateway.url, **ON)  # fmt: skip
    checks = {c["name"]: c for c in json.loads((tmp_path / "report.json").read_text())["checks"]}
    ((_, _, _, body),) = gateway.received
    pushed = {(labels["check"], labels["status"]) for name, labels, value
              in metrics.parse_prometheus_text(body)
              if name == "gpu_platform_selftest_check_status" and value == 1}  # fmt: skip
    return done, checks["baseline.collectives.allreduce_busbw_intra_node"], pushed


def test_a_canary_below_its_pools_baseline_exits_non_zero_and_pushes_the_fail(tmp_path):
    """A baseline no CPU reaches (10⁶ GB/s): the run FAILs and exits 1; the row is pushed with
    the node's group, so the pool's baseline leaves this node's figure out."""
    done, row, pushed = canary_run(tmp_path, 1e6)
    assert done.returncode == 1, done.stdout + done.stderr
    assert row["status"] == "FAIL"
    assert "under pool h100's baseline 1e+06 GB/s less the tolerance 0.1" in row["reason"]
    assert ("baseline.collectives.allreduce_busbw_intra_node", "FAIL") in pushed
    assert ("collectives.allreduce_busbw_intra_node", "PASS") in pushed


def test_a_canary_at_its_pools_baseline_exits_zero(tmp_path):
    done, row, pushed = canary_run(tmp_path, 1e-6)
    assert done.returncode == 0, done.stdout + done.stderr
    assert row["status"] == "PASS"
    assert ("baseline.collectives.allreduce_busbw_intra_node", "PASS") in pushed
