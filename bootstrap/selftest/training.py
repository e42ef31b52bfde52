"""Check 6, training: a short DDP run of the UNet denoiser on the pipeline's shards, then a real
interruption and a resume. Each self-test rank starts one training worker (selftest.train_worker)
as a child process with its own process group, so that SIGTERM really ends a worker:

1. reference: the whole run, uninterrupted — loss finite and falling, samples/s, peak memory;
2. interrupted: the same seed; each rank sends its worker SIGTERM mid-run, the workers save a
   DCP checkpoint to shared storage within the grace period and exit, as on eviction;
3. resumed: new workers load that checkpoint and finish; every loss after the interruption must
   equal the reference's exactly (bitwise: the float's repr round-trips through JSON).

It trains on 32×32 crops of the 512×512 shards: the check proves the loop (DDP, autocast,
checkpoint, resume), not the model, and a CPU without native bf16 runs autocast's convolutions
on its slow path (about 5 times longer at 64×64), so the CPU run stays in seconds."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import torch
import torch.distributed as dist

import contract
import selftest
from selftest.context import SelfTestContext
from selftest.data import collective_device, ensure_shards, rank_shards
from selftest.result import CheckResult, run_check

STEPS = 8
INTERRUPT_AFTER_STEP = 2
# Kubernetes' default terminationGracePeriodSeconds: what an evicted pod gets before SIGKILL.
GRACE_PERIOD_S = 30.0
# Falling: the mean of the last two losses at most this fraction of the first (self-test
# default; a tiny denoiser on smooth images gets well under it in 8 steps).
LOSS_RATIO_MAX = 0.9
TRAIN_CROP = 32
WORKER_TIMEOUT_S = 300.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def _ports(ctx: SelfTestContext, count: int) -> list[int]:
    """Ports for the workers' rendezvous, chosen on rank 0 (where worker 0 listens)."""
    ports = [_free_port() for _ in range(count)] if ctx.rank == 0 else [0] * count
    if dist.is_initialized():
        dist.broadcast_object_list(ports, src=0)
    return ports


def _settings(ctx: SelfTestContext, paths: list[Path], phase: str, port: int) -> dict:
    work = ctx.out_dir / "training"
    return {
        "rank": ctx.rank, "world_size": ctx.world_size, "local_rank": ctx.local_rank,
        "local_world_size": int(os.environ.get("LOCAL_WORLD_SIZE", ctx.world_size)),
        "device": ctx.device, "seed": 1234, "lr": 3e-3, "steps": STEPS,
        "accumulation": 2, "micro_batch": 4, "crop": TRAIN_CROP, "width": 16,
        "timeout_s": ctx.join_timeout_s,
        "init_method": f"tcp://{os.environ.get('MASTER_ADDR', '127.0.0.1')}:{port}",
        "shards": [str(p) for p in rank_shards(paths, ctx.rank, ctx.world_size)],
        "checkpoints": str(ctx.shared_data / "selftest" / ctx.run_id / "checkpoints"),
        "resume_from": None, "result": str(work / f"{phase}-rank{ctx.rank}.json"),
        "log": str(work / f"{phase}-rank{ctx.rank}.log"),
    }  # fmt: skip


def worker_env(parent: Mapping[str, str]) -> dict[str, str]:
    """The worker's environment: the rank's, with the packages on the path (contract/ beside
    bootstrap/ in a checkout, under /opt/platform in the image)."""
    packages = {str(Path(m.__file__).parent.parent) for m in (selftest, contract)}
    env = dict(
        parent,
        PYTHONPATH=os.pathsep.join(sorted(packages)),
        # cuBLAS is deterministic only with a fixed workspace (PyTorch's reproducibility notes).
        CUBLAS_WORKSPACE_CONFIG=":4096:8",
    )
    # Under torchrun this says "rank 0 does not serve the store, the agent does": true for the
    # self-test's own group, false for the workers', whose rank 0 must serve theirs.
    env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
    return env


def launch(settings: dict, interrupt_after: int | None = None) -> tuple[dict, float | None]:
    """Run one worker to its end; with `interrupt_after`, SIGTERM it once that step's loss is
    printed. Returns its outcome and the seconds from SIGTERM to its exit."""
    Path(settings["result"]).parent.mkdir(parents=True, exist_ok=True)
    Path(settings["result"]).unlink(missing_ok=True)
    env = worker_env(os.environ)
    with open(settings["log"], "w") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "selftest.train_worker", json.dumps(settings)],
            stdout=subprocess.PIPE, stderr=log, text=True, env=env,
        )  # fmt: skip
        signalled = None
        for line in worker.stdout:
            due = interrupt_after is not None and json.loads(line)["step"] >= interrupt_after
            if due and signalled is None:
                worker.send_signal(signal.SIGTERM)
                signalled = time.perf_counter()
        try:
            worker.wait(timeout=GRACE_PERIOD_S if signalled else WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            worker.kill()  # what the kubelet does when the grace period ends
            worker.wait()
    exit_s = time.perf_counter() - signalled if signalled is not None else None
    result = Path(settings["result"])
    if not result.is_file():
        tail = Path(settings["log"]).read_text().strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"training worker exited {worker.returncode}: {tail[0]}")
    return json.loads(result.read_text()), exit_s


def _losses(outcome: dict) -> dict[int, float]:
    return {int(step): loss for step, loss in outcome["losses"].items()}


def reference_checks(ctx: SelfTestContext, outcome: dict, elapsed: float) -> list[CheckResult]:
    losses = list(_losses(outcome).values())
    ratio_max = ctx.floors.get("training.loss_ratio", LOSS_RATIO_MAX)
    source = ctx.floor_sources.get("training.loss_ratio", "self-test default")
    ratio = (losses[-1] + losses[-2]) / 2 / losses[0]
    finite = all(math.isfinite(loss) for loss in losses)
    loss = CheckResult(
        "training.loss", "PASS", round(ratio, 3), "last/first", ratio_max, source,
        duration_s=elapsed, details={"losses": losses, "dtype": outcome["dtype"]},
    )  # fmt: skip
    if not finite:
        loss.status, loss.reason = "FAIL", f"loss not finite: {losses}"
    elif ratio > ratio_max:
        loss.status, loss.reason = "FAIL", f"loss not falling: {losses[0]:.4f} → {losses[-1]:.4f}"
    memory_mib = outcome["peak_memory_bytes"] / 2**20
    kind = "CUDA max_memory_allocated" if ctx.device == "cuda" else "peak RSS of the worker"
    return [
        loss,
        CheckResult("training.throughput", "INFO", round(outcome["samples_per_s"], 1), "samples/s",
                    reason=f"{outcome['dtype']} autocast, no floor set"),
        CheckResult("training.peak_memory", "INFO", round(memory_mib, 1), "MiB", reason=kind),
    ]  # fmt: skip


def _agreed(ctx: SelfTestContext, ok: bool) -> bool:
    """True only when every rank's comparison held."""
    if not dist.is_initialized():
        return ok
    flag = torch.tensor([0 if ok else 1], device=collective_device(ctx))
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return flag.item() == 0


def corrupt(checkpoint: Path) -> Path:
    """The fault a torn write leaves: the largest shard cut to half its length."""
    shard = max(checkpoint.glob("*.distcp"), key=lambda path: path.stat().st_size)
    with open(shard, "r+b") as handle:
        handle.truncate(shard.stat().st_size // 2)
    return shard


def interruption_checks(ctx: SelfTestContext, outcome: dict, exit_s: float) -> CheckResult:
    if "checkpoint" not in outcome:
        return CheckResult("training.sigterm_checkpoint", "FAIL", reason="run ended before SIGTERM")
    return CheckResult(
        "training.sigterm_checkpoint", "PASS" if exit_s <= GRACE_PERIOD_S else "FAIL",
        round(exit_s, 2), "s", GRACE_PERIOD_S, "Kubernetes terminationGracePeriodSeconds default",
        f"saved {outcome['checkpoint']} in {outcome['save_s']:.2f} s",
    )  # fmt: skip


def resume_check(reference: dict, interrupted: dict, resumed: dict) -> CheckResult:
    """The resumed run's losses against the reference's, step by step, exactly."""
    if "error" in resumed:
        return CheckResult("training.resume", "FAIL", reason=resumed["error"])
    expected, before, after = _losses(reference), _losses(interrupted), _losses(resumed)
    first = min(after)
    mismatched = [step for step, loss in {**before, **after}.items() if loss != expected.get(step)]
    result = CheckResult(
        "training.resume", "PASS", after[first], "loss", expected[first],
        "the uninterrupted reference run, same seed", duration_s=0.0,
        # The report plots the loss across the interruption: the interrupted run up to its
        # SIGTERM, then the resumed run, against the uninterrupted reference.
        details={"loss": [({**before, **after})[s] for s in sorted({**before, **after})],
                 "reference": [expected[s] for s in sorted(expected)],
                 "interrupted": before, "resumed": after, "interrupted_at": first},
    )  # fmt: skip
    if mismatched:
        step = mismatched[0]
        result.status = "FAIL"
        result.reason = (
            f"step {step}: loss {({**before, **after})[step]!r} != reference {expected[step]!r}"
        )
    return result


def run(ctx: SelfTestContext) -> list[CheckResult]:
    """Every rank calls this after init_process_group; each runs its own worker three times. A
    fault before the checks have figures (no shared storage, a worker that died) is one FAIL."""
    return run_check("training", lambda: _run(ctx))


def _run(ctx: SelfTestContext) -> list[CheckResult]:
    started = time.perf_counter()
    paths = ensure_shards(ctx)
    ports = _ports(ctx, 3)
    settings = _settings(ctx, paths, "reference", ports[0])
    reference, _ = launch(settings)
    results = reference_checks(ctx, reference, time.perf_counter() - started)

    started = time.perf_counter()
    settings = _settings(ctx, paths, "interrupted", ports[1])
    interrupted, exit_s = launch(settings, interrupt_after=INTERRUPT_AFTER_STEP)
    results.append(interruption_checks(ctx, interrupted, exit_s))
    results[-1].duration_s = time.perf_counter() - started
    if "checkpoint" not in interrupted:
        return results

    started = time.perf_counter()
    checkpoint = Path(interrupted["checkpoint"])
    if "corrupt-checkpoint" in ctx.faults and ctx.rank == 0:
        corrupt(checkpoint)
    if dist.is_initialized():
        dist.barrier()  # no worker resumes before the fault, if any, is in place
    settings = _settings(ctx, paths, "resumed", ports[2])
    settings["resume_from"] = str(checkpoint)
    resumed, _ = launch(settings)
    resume = resume_check(reference, interrupted, resumed)
    if not _agreed(ctx, resume.status == "PASS") and resume.status == "PASS":
        resume.status, resume.reason = "FAIL", "another rank's losses differ from its reference"
    resume.duration_s = time.perf_counter() - started
    results.append(resume)
    return results
