"""Check 6, training: the training group of the session's real 2-rank self-test (reference,
SIGTERM mid-run, resume; tests/helpers/cpu_selftest.py), a resume from a corrupted copy of its
checkpoint, and the pieces on their own."""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
import trainkit
from selftest import training
from selftest.context import SelfTestContext
from selftest.model import Denoiser

from tests.helpers.cpu_selftest import RANKS, RUN_ID

CHECKS = [
    "training.loss", "training.throughput", "training.peak_memory",
    "training.sigterm_checkpoint", "training.resume",
]  # fmt: skip
PHASES = ("reference", "interrupted", "resumed")


@pytest.fixture(scope="module")
def run(cpu_selftest) -> SimpleNamespace:
    """What the real run's training group left: the report's rows (each the worst rank's: merge
    keeps it), each rank's three runs as its workers wrote them, and the shared-data folder."""
    _, out, _ = cpu_selftest
    checks = json.loads((out / "report.json").read_text())["checks"]
    outcomes = [
        {phase: json.loads((out / "training" / f"{phase}-rank{rank}.json").read_text())
         for phase in PHASES}
        for rank in range(RANKS)
    ]  # fmt: skip
    rows = {c["name"]: c for c in checks if c["name"].startswith("training.")}
    return SimpleNamespace(rows=rows, ranks=outcomes, shared=out / "shared-data")


def steps(outcome: dict) -> dict[int, float]:
    """A worker's losses by step: JSON keeps the keys as strings and each float exactly."""
    return {int(step): loss for step, loss in outcome["losses"].items()}


def test_every_training_check_passes_on_every_rank(run):
    # The report's row is the worst rank's, so a PASS row is a PASS on both.
    assert list(run.rows) == CHECKS
    # Throughput and peak memory are figures with no floor: INFO, not PASS.
    assert {name: row["status"] for name, row in run.rows.items() if row["status"] != "PASS"} == {
        "training.throughput": "INFO",
        "training.peak_memory": "INFO",
    }


def test_loss_is_finite_and_falls_under_bf16_autocast(run):
    for outcome in run.ranks:
        reference = outcome["reference"]
        # torch.amp docs: CPU autocast runs in torch.bfloat16.
        assert reference["dtype"] == "bfloat16"
        assert sorted(steps(reference)) == list(range(8))
        assert all(math.isfinite(loss) for loss in reference["losses"].values())
    loss = run.rows["training.loss"]
    assert (loss["unit"], loss["threshold"]) == ("last/first", 0.9)
    assert loss["value"] <= 0.9
    assert run.rows["training.throughput"]["unit"] == "samples/s"
    assert run.rows["training.throughput"]["value"] > 0
    assert run.rows["training.peak_memory"]["value"] > 0


def test_sigterm_leaves_a_dcp_checkpoint_on_shared_storage(run):
    sigterm = run.rows["training.sigterm_checkpoint"]
    assert sigterm["value"] < 30.0  # Kubernetes' default terminationGracePeriodSeconds
    checkpoints = list((run.shared / "selftest" / RUN_ID / "checkpoints").iterdir())
    assert len(checkpoints) == 1
    assert sigterm["reason"].startswith(f"saved {checkpoints[0]} in ")
    # DCP's file system layout: one .distcp file per rank and the coordinator's .metadata.
    names = sorted(path.name for path in checkpoints[0].iterdir())
    assert names == [".metadata", "__0_0.distcp", "__1_0.distcp", "manifest.json"]


def test_the_resumed_run_reproduces_the_reference_losses_bitwise(run):
    for outcome in run.ranks:
        reference, interrupted, resumed = (steps(outcome[phase]) for phase in PHASES)
        # Interrupted mid-run: it ran some steps, the resume ran the rest.
        assert 0 < len(interrupted) < 8
        assert sorted(interrupted) + sorted(resumed) == list(range(8))
        for step, loss in {**interrupted, **resumed}.items():
            assert loss.hex() == reference[step].hex(), step
        # The report's plot: one loss per step across the interruption, marked where it resumed.
        details = training.resume_check(*(outcome[phase] for phase in PHASES)).details
        assert details["loss"] == [({**interrupted, **resumed})[s] for s in range(8)]
        assert details["interrupted_at"] == min(resumed)
    # The ranks train on different shards, so their losses differ: each was compared to its own.
    assert run.ranks[0]["reference"]["losses"] != run.ranks[1]["reference"]["losses"]
    resume = run.rows["training.resume"]
    assert resume["status"] == "PASS" and resume["value"] == resume["threshold"]


def _saved_checkpoint(run) -> Path:
    return Path(run.rows["training.sigterm_checkpoint"]["reason"].split()[1])


def _resume_both_ranks(run, checkpoint: Path, work: Path) -> list[dict]:
    """The resume phase alone, one worker per rank, from `checkpoint`, on the run's shards;
    what it writes goes under `work`."""
    ports = [training._free_port()]
    shards = sorted((run.shared / "selftest" / RUN_ID / "shards").glob("shard-*.tar"))
    outcomes: list[dict] = [{}, {}]

    def resume(rank: int) -> None:
        ctx = SelfTestContext(
            run_id="torn", rank=rank, world_size=RANKS, local_rank=rank, device="cpu",
            out_dir=work / "out", shared_data=work, nvme_cache=work,
        )  # fmt: skip
        settings = training._settings(ctx, shards, "resumed", ports[0])
        settings["resume_from"] = str(checkpoint)
        outcomes[rank], _ = training.launch(settings)

    threads = [threading.Thread(target=resume, args=(rank,)) for rank in range(RANKS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_a_torn_checkpoint_fails_the_resume_naming_it(run, tmp_path):
    torn = tmp_path / "torn-checkpoint"
    shutil.copytree(_saved_checkpoint(run), torn)
    training.corrupt(torn)
    outcomes = _resume_both_ranks(run, torn, tmp_path)
    for outcome in outcomes:
        assert outcome["error"].startswith(f"checkpoint {torn} corrupted: __")
        assert outcome["error"].endswith(".distcp sha256 mismatch")
        result = training.resume_check({}, {}, outcome)
        assert (result.status, result.reason) == ("FAIL", outcome["error"])


def test_verify_names_a_garbled_missing_or_unfinished_checkpoint(run, tmp_path):
    source = _saved_checkpoint(run)
    assert trainkit.verify(source) is None
    garbled = tmp_path / "garbled"
    shutil.copytree(source, garbled)
    shard = garbled / "__1_0.distcp"
    payload = bytearray(shard.read_bytes())
    payload[len(payload) // 2] ^= 0xFF  # same length: only a digest catches it
    shard.write_bytes(bytes(payload))
    assert (
        trainkit.verify(garbled) == f"checkpoint {garbled} corrupted: __1_0.distcp sha256 mismatch"
    )
    (garbled / "__0_0.distcp").unlink()
    assert "__0_0.distcp missing" in trainkit.verify(garbled)
    (garbled / "manifest.json").unlink()
    assert trainkit.verify(garbled) == (
        f"checkpoint {garbled}: no manifest.json (the save never finished)"
    )


def test_a_loss_that_differs_fails_the_resume_naming_the_step():
    reference = {"losses": {"0": 1.0, "1": 0.5, "2": 0.25}}
    interrupted = {"losses": {"0": 1.0}}
    resumed = {"losses": {"1": 0.5, "2": 0.25000001}}
    result = training.resume_check(reference, interrupted, resumed)
    assert result.status == "FAIL"
    assert result.reason == "step 2: loss 0.25000001 != reference 0.25"
    assert (
        training.resume_check(reference, interrupted, {"losses": {"1": 0.5, "2": 0.25}}).status
        == "PASS"
    )


def test_activation_checkpointing_changes_memory_not_gradients():
    torch.manual_seed(0)
    plain = Denoiser(checkpointing=False)
    checkpointed = Denoiser(checkpointing=True)
    checkpointed.load_state_dict(plain.state_dict())
    images = torch.randn(2, 3, 32, 32)
    for model in (plain, checkpointed):
        model(images).square().mean().backward()
    for (name, a), (_, b) in zip(
        plain.named_parameters(), checkpointed.named_parameters(), strict=False
    ):
        assert torch.equal(a.grad, b.grad), name


def test_the_denoiser_keeps_the_image_shape():
    assert Denoiser()(torch.zeros(1, 3, 64, 64)).shape == (1, 3, 64, 64)


def test_outcomes_are_json_so_losses_round_trip_exactly():
    # json.dumps writes a float's shortest repr, which float() reads back to the same bits.
    loss = 0.8347939848899841
    assert json.loads(json.dumps({"loss": loss}))["loss"].hex() == loss.hex()


def test_workers_serve_their_own_rendezvous_under_torchrun():
    # torchrun sets TORCHELASTIC_USE_AGENT_STORE=True for its ranks (torch.distributed.elastic's
    # c10d rendezvous): a worker that inherited it would wait for a store nobody serves.
    env = training.worker_env({"TORCHELASTIC_USE_AGENT_STORE": "True", "RANK": "1"})
    assert "TORCHELASTIC_USE_AGENT_STORE" not in env
    assert env["RANK"] == "1"
    assert env["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    path = [Path(p) for p in env["PYTHONPATH"].split(os.pathsep)]
    assert any((p / "selftest" / "train_worker.py").is_file() for p in path)
    # The self-test imports contract/, which a checkout keeps beside bootstrap/.
    assert any((p / "contract" / "env.py").is_file() for p in path)


def test_without_shared_storage_training_is_one_fail_with_the_reason(tmp_path):
    ctx = SelfTestContext(
        run_id="m", rank=0, world_size=1, local_rank=0, device="cpu", out_dir=tmp_path,
        shared_data=tmp_path / "gone", nvme_cache=tmp_path,
    )  # fmt: skip
    (result,) = training.run(ctx)
    assert (result.name, result.status) == ("training", "FAIL")
    assert result.reason == f"FileNotFoundError: not mounted: {tmp_path / 'gone'}"


# NVIDIA's "CUDA GPUs - Compute Capability" table: V100 7.0, T4 7.5, A100 8.0, A10G 8.6, L4 8.9,
# H100 / H200 9.0: every GPU the catalog offers.
# bf16 is native from compute capability 8.0; Volta and Turing only emulate it.
@pytest.mark.parametrize(
    ("gpu", "capability", "expected"),
    [
        ("Tesla V100-SXM2-16GB", (7, 0), torch.float16),
        ("Tesla T4", (7, 5), torch.float16),
        ("NVIDIA A100-SXM4-80GB", (8, 0), torch.bfloat16),
        ("NVIDIA A10G", (8, 6), torch.bfloat16),
        ("NVIDIA L4", (8, 9), torch.bfloat16),
        ("NVIDIA H200", (9, 0), torch.bfloat16),
    ],
)
def test_a_gpu_without_native_bf16_trains_in_fp16_with_a_grad_scaler(
    monkeypatch, gpu, capability, expected
):
    """A mocked CUDA device: torch.cuda.is_bf16_supported() itself runs, on the device's
    properties; on Volta and Turing a bf16 tensor can be created (emulation), which is what
    its default including_emulation=True answers with."""
    major, minor = capability
    properties = SimpleNamespace(name=gpu, major=major, minor=minor)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: properties)
    monkeypatch.setattr(torch.cuda, "_check_bf16_tensor_supported", lambda device: True)
    device = torch.device("cuda", 0)
    assert trainkit.autocast_dtype(device) == expected
    dtype, scaler = trainkit.mixed_precision(device)
    assert dtype == expected
    assert scaler.is_enabled() is (expected == torch.float16)


@pytest.fixture
def strict_determinism():
    """deterministic_kernels() sets torch's process-wide flags; put them back afterwards."""
    flags = (torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled())  # fmt: skip
    yield
    torch.use_deterministic_algorithms(flags[0], warn_only=flags[1])


def test_a_kernel_without_a_deterministic_implementation_stops_training(strict_determinism):
    """The resume is checked bit for bit, so the worker's kernels must be deterministic: one that
    is not raises instead of warning. torch.use_deterministic_algorithms' documentation lists
    Tensor.put_ with accumulate=False among the operations that "throw a RuntimeError when
    mode=True" (on any device, so it shows on this CPU); warn_only=True only warns."""
    trainkit.deterministic_kernels()
    assert torch.are_deterministic_algorithms_enabled()
    assert not torch.is_deterministic_algorithms_warn_only_enabled()
    with pytest.raises(RuntimeError, match="put_ does not have a deterministic implementation"):
        torch.zeros(3).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))


def test_self_attention_hands_sdpa_the_layout_its_fused_kernels_take(monkeypatch):
    """PyTorch's SDPA dispatcher (sdp_utils.cpp, check_last_dim_stride_equals_1_dense) gives
    flash, memory-efficient and cuDNN attention only inputs whose last dimension has stride 1;
    anything else runs the math fallback, not the kernels the self-test means to exercise."""
    seen, attention = [], F.scaled_dot_product_attention

    def spy(q, k, v, *args, **kwargs):
        seen.extend([q, k, v])
        return attention(q, k, v, *args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    Denoiser(width=16)(torch.zeros(1, 3, 32, 32))
    assert len(seen) == 3
    assert [tensor.stride(-1) for tensor in seen] == [1, 1, 1]
