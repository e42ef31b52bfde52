"""The preflight check set, `python -m selftest --checks preflight`, as a JobSet's pods would
run it before training: two torchrun agents (one rank each, "nodes" node-a and node-b, a static
rendezvous on 127.0.0.1), the same checks as the self-test's (GPUs visible, one all-reduce
across the group, the fabric's transport), and a verdict that names the node that failed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from selftest import runner

from tests.helpers.hang import HANG_S
from tests.helpers.selftest_process import agents

ROOT = Path(__file__).resolve().parents[3]


def preflight(out: Path, expected_gpus: dict[str, int]) -> tuple[list[int], str, dict]:
    """Both nodes' agents; (their exit codes, rank 0's output, the report)."""
    nodes = {node: {"SELFTEST_EXPECTED_GPUS": str(gpus)} for node, gpus in expected_gpus.items()}
    return agents(nodes, ["--checks", "preflight"], out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("preflight")
    cases = {"healthy": {"node-a": 0, "node-b": 0}, "node-b short": {"node-a": 0, "node-b": 1}}
    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {
            name: pool.submit(preflight, base / name.replace(" ", "-"), gpus)
            for name, gpus in cases.items()
        }
        return {name: future.result(timeout=HANG_S) for name, future in futures.items()}


def test_the_preflight_set_is_the_self_tests_own_checks_without_the_sweeps():
    assert runner.selected_groups("preflight") == ["inventory", "agreement", "collectives"]


def test_a_healthy_group_passes_its_preflight(runs):
    codes, output, report = runs["healthy"]
    assert codes == [0, 0], output[-3000:]
    assert "preflight PASS on every node" in output
    checks = {row["name"]: row["status"] for row in report["checks"]}
    assert checks["collectives.allreduce_correct"] == "PASS"
    assert checks["inventory.gpu_count"] == "PASS"
    # The sweeps are not run: seconds, not minutes, before a job trains.
    assert not any(name.startswith("collectives.allreduce_busbw") for name in checks)


def test_a_failed_preflight_names_the_node_and_the_check(runs):
    codes, output, report = runs["node-b short"]
    assert report["status"] == "FAIL"
    assert codes[0] != 0
    assert "preflight FAIL: node node-b: inventory.gpu_count" in output
    assert "node node-a" not in output.split("preflight FAIL:")[1]
