"""Silent data corruption (issue 39 §3): the GPUs compared against each other
(selftest/agreement.py) and the all-reduce's contributions checked one by one
(selftest/collectives.py), first as pure functions on literal results, then in real preflights
on the CPU (gloo, CPU kernels): 2 "nodes" of 2 ranks each, with one rank's results and another
rank's all-reduce contribution perturbed by SELFTEST_INJECT_FAULTS, and the same group clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from selftest import agreement, collectives, quarantine
from selftest.context import injected_faults

from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH
from tests.helpers.loopback import free_port

ROOT = Path(__file__).resolve().parents[3]
GEMM = torch.tensor([1.0, 2.0, 3.0])
# One bit off in the last place of 2.0 (IEEE 754 binary32: 0x40000000 -> 0x40000001).
ONE_ULP_OFF = torch.tensor([1.0, 2.0000002, 3.0])
H100 = "NVIDIA H100 80GB HBM3, 132 SMs, CUDA 12.8, torch 2.13.0"
H200 = "NVIDIA H200, 132 SMs, CUDA 12.8, torch 2.13.0"


# --- the vote ----------------------------------------------------------------------------------


def test_one_bit_off_on_one_gpu_of_three_fails_that_gpu_alone():
    results = [(H100, GEMM), (H100, ONE_ULP_OFF), (H100, GEMM)]
    assert agreement.odd_ranks("gemm_fp32", results) == ([1], True)


def test_two_gpus_that_disagree_are_both_suspect():
    assert agreement.odd_ranks("gemm_fp32", [(H100, GEMM), (H100, ONE_ULP_OFF)]) == ([0, 1], False)


def test_two_equal_camps_have_no_majority_and_every_gpu_is_suspect():
    results = [(H100, GEMM), (H100, GEMM), (H100, ONE_ULP_OFF), (H100, ONE_ULP_OFF)]
    assert agreement.odd_ranks("gemm_fp32", results) == ([0, 1, 2, 3], False)


def test_a_majority_stands_against_two_gpus_wrong_in_different_ways():
    other = torch.tensor([1.0, 2.0, 3.5])
    results = [(H100, GEMM), (H100, GEMM), (H100, ONE_ULP_OFF), (H100, other)]
    assert agreement.odd_ranks("gemm_fp32", results) == ([2, 3], True)


def test_other_gpu_models_are_held_to_torch_testings_tolerance_not_bitwise():
    # torch/testing/_comparison.py, _DTYPE_PRECISIONS: bfloat16 rtol 1.6e-2, atol 1e-5; float32
    # rtol 1.3e-6, atol 1e-5. 2.02 is 1 % off 2.0: within bf16's, outside fp32's.
    near = torch.tensor([1.0, 2.02, 3.0])
    assert agreement.odd_ranks("gemm_bf16", [(H100, GEMM), (H200, near), (H100, GEMM)]) == (
        [],
        True,
    )
    assert agreement.odd_ranks("gemm_fp32", [(H100, GEMM), (H200, near), (H100, GEMM)]) == (
        [1],
        True,
    )


def test_the_verdict_names_each_odd_gpu_by_index_and_node():
    clean = {problem: GEMM for problem in agreement.TOLERANCES}
    bad = {**clean, "gemm_bf16": ONE_ULP_OFF}
    ranks = [("node-a", 0, H100, clean), ("node-a", 1, H100, bad), ("node-b", 0, H100, clean)]
    assert agreement.verdict(ranks) == (
        {1},
        "gemm_bf16: GPU 1 on node node-a (rank 1) differs from the other 2",
    )


def test_every_problem_is_the_same_bits_twice_on_this_cpu():
    """The CPU's kernels are deterministic for identical inputs: the bitwise comparison the
    tests below rely on holds here."""
    first, second = agreement.problems(torch.device("cpu")), agreement.problems(torch.device("cpu"))
    assert list(first) == ["gemm_fp32", "gemm_bf16", "train_step"]
    assert all(first[p].numpy().tobytes() == second[p].numpy().tobytes() for p in first)
    # The train step: the loss, then the gradients of 64x128 + 128 and 128x64 + 64 parameters.
    assert first["train_step"].numel() == 1 + 64 * 128 + 128 + 128 * 64 + 64


# --- whose all-reduce contribution was wrong ---------------------------------------------------


def test_a_segment_wrong_at_most_receivers_names_its_contributor():
    assert collectives.culprits([{2: 1}, {2: 1}, {2: 1}]) == ([2], [])
    # Two ranks: wrong at both is the contributor's; wrong at one, that receiver's.
    assert collectives.culprits([{1: 5}, {1: 5}]) == ([1], [])
    assert collectives.culprits([{}, {0: 3}]) == ([], [1])
    assert collectives.culprits([{}, {}, {}]) == ([], [])


def test_each_rank_owns_one_segment_of_the_sum():
    # 3 ranks, 4 elements each: rank 1's values 2, 3, 4, 5 in elements 4-7, zeros elsewhere.
    assert collectives.contribution(1, 3, 4).tolist() == [0, 0, 0, 0, 2, 3, 4, 5, 0, 0, 0, 0]
    total = sum(collectives.contribution(rank, 3, 4) for rank in range(3))
    assert collectives.wrong_segments(total, 3, 4) == {}
    total[9] += 1
    assert collectives.wrong_segments(total, 3, 4) == {2: 1}


# --- the fault-injection hook and quarantine ---------------------------------------------------


def test_injected_faults_reach_only_the_rank_they_name():
    text = "sdc-compute@1,corrupt-checkpoint"
    assert injected_faults(text, 1) == ("sdc-compute", "corrupt-checkpoint")
    assert injected_faults(text, 0) == ("corrupt-checkpoint",)
    assert injected_faults("", 0) == ()


@pytest.mark.parametrize(
    "check",
    [
        "agreement.gpu_results",
        "collectives.allreduce_correct",
        "collectives.allreduce_correct_intra_node",
    ],
)
def test_a_gpu_or_contribution_named_wrong_quarantines_its_node(check):
    assert quarantine.is_hardware(check)


# --- real preflights on the CPU ----------------------------------------------------------------

NODES = ("node-a", "node-b")
LOCAL = 2


def preflight(out: Path, faults: str) -> tuple[list[int], str, dict]:
    """The preflight on 2 nodes of 2 ranks each, as torchrun numbers them; (exit codes, rank
    0's output, the report)."""
    port, processes = free_port(), []
    for rank in range(len(NODES) * LOCAL):
        env = {
            **os.environ, "PYTHONPATH": IMAGE_PYTHONPATH, "NODE_NAME": NODES[rank // LOCAL],
            "RANK": str(rank), "LOCAL_RANK": str(rank % LOCAL), "LOCAL_WORLD_SIZE": str(LOCAL),
            "WORLD_SIZE": str(len(NODES) * LOCAL), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1", "SELFTEST_INJECT_FAULTS": faults,
        }  # fmt: skip
        command = [sys.executable, "-m", "selftest", "--checks", "preflight", "--out", str(out)]
        processes.append(subprocess.Popen(command, cwd=ROOT, env=env, text=True,
                                          stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT))  # fmt: skip
    outputs = [p.communicate(timeout=HANG_S)[0] for p in processes]
    report = json.loads((out / "report.json").read_text())
    return [p.returncode for p in processes], outputs[0], report


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("sdc")
    # Rank 1 (node-a's GPU 1) computes wrong; rank 3 (node-b's GPU 1) sends a wrong contribution.
    cases = {"clean": "", "faulty": "sdc-compute@1,sdc-allreduce@3"}
    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {name: pool.submit(preflight, base / name, f) for name, f in cases.items()}
        return {name: future.result(timeout=HANG_S) for name, future in futures.items()}


def checks(report: dict) -> dict[str, dict]:
    return {row["name"]: row for row in report["checks"]}


def test_a_clean_group_agrees_and_sums_right_across_and_within_nodes(runs):
    codes, output, report = runs["clean"]
    assert codes == [0, 0, 0, 0], output[-3000:]
    rows = checks(report)
    for name in ("agreement.gpu_results", "collectives.allreduce_correct",
                 "collectives.allreduce_correct_intra_node"):  # fmt: skip
        assert (rows[name]["status"], rows[name]["value"]) == ("PASS", 0), rows[name]
    assert "preflight PASS on every node" in output


def test_a_gpu_that_computes_wrong_fails_by_index_and_node(runs):
    codes, _, report = runs["faulty"]
    assert codes[0] != 0
    row = checks(report)["agreement.gpu_results"]
    assert (row["status"], row["value"]) == ("FAIL", 1)
    assert row["reason"] == (
        "rank 1: gemm_fp32: GPU 1 on node node-a (rank 1) differs from the other 3; "
        "gemm_bf16: GPU 1 on node node-a (rank 1) differs from the other 3; "
        "train_step: GPU 1 on node node-a (rank 1) differs from the other 3"
    )


def test_a_wrong_contribution_names_its_rank_and_node_across_and_within_nodes(runs):
    _, output, report = runs["faulty"]
    rows = checks(report)
    # 65536 elements over 4 ranks: 16384 per segment; over a node's 2 ranks: 32768.
    assert rows["collectives.allreduce_correct"]["reason"] == (
        "rank 3: the contribution of rank 3 (node node-b, GPU 1) arrived wrong at 4 of 4 ranks "
        "(1 of 16384 elements)"
    )
    assert rows["collectives.allreduce_correct_intra_node"]["reason"] == (
        "rank 3: the contribution of rank 3 (node node-b, GPU 1) arrived wrong at 2 of 2 ranks "
        "(1 of 32768 elements)"
    )
    # Each node is failed for its own fault only, so each is quarantined for it alone.
    assert (
        "preflight FAIL: node node-a: agreement.gpu_results; node node-b: "
        "collectives.allreduce_correct, collectives.allreduce_correct_intra_node"
    ) in output
