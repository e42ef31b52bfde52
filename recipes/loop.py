"""The training loop every recipe shares; a recipe brings only its `Task` (model and loss).

- DDP over every rank torchrun started (NCCL on GPUs, gloo on CPUs); gradient accumulation makes
  the global batch exactly: global = micro x ranks x accumulation, refused otherwise; gradients
  are all-reduced on the last micro-step only.
- bf16 autocast, fp16 with a gradient scaler where bf16 is missing (selftest.trainkit).
- AdamW with linear warm-up then cosine annealing to zero over the run, a pure function of the
  step, so a resume needs no scheduler state (the same curve as diffusers'
  get_cosine_schedule_with_warmup; tests compare the two).
- `torch.distributed.checkpoint` to shared storage every `checkpoint_every` steps, at the end,
  and at the first step boundary after SIGTERM (Kubernetes' grace period: 30 s by default), the
  last `keep_checkpoints` kept. A run resumes from the newest complete checkpoint: model,
  optimizer, step and data position, so the next loss is the one the uninterrupted run had.
- Each step logs one JSON line (loss, lr, samples/s, step seconds, GPU memory) and updates the
  metrics the training-job dashboard reads (recipes.metrics)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
import torch.distributed as dist
from selftest.trainkit import MANIFEST, load, mixed_precision, peak_memory, save, sigterm_flag
from torch.nn.parallel import DistributedDataParallel

from recipes.batch import accumulation_steps
from recipes.metrics import MetricsServer
from recipes.shards import Batch, ShardStream, micro_batch, rank_shards


class Task(Protocol):
    """One recipe's model and loss."""

    def trainable(self) -> torch.nn.Module:
        """The module DDP wraps and the optimizer steps (frozen parts stay outside)."""
        ...

    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        """The scalar float32 loss of one micro-batch, under the loop's autocast."""
        ...


def learning_rate(step: int, peak: float, warmup: int, total: int) -> float:
    """The rate of 0-based `step`: linear warm-up from 0, then half a cosine down to 0."""
    if step < warmup:
        return peak * step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return peak * max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


@dataclass
class Run:
    """What one training run needs beyond its task."""

    recipe: str
    steps: int
    global_batch: int
    micro_batch: int
    learning_rate: float
    warmup_steps: int
    checkpoint_every: int
    keep_checkpoints: int
    seed: int
    crop: int
    shards: Path
    checkpoints: Path
    # A recipe's part, for the log: ESRGAN's "2x" and "4x" stages.
    stage: str | None = None
    # Send ourselves SIGTERM after this step, as an eviction would (the smoke and the tests).
    interrupt_after: int | None = None
    metrics: MetricsServer | None = None


def device_for(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def complete_checkpoints(folder: Path) -> list[Path]:
    """Saved checkpoints, oldest first; one without its manifest never finished saving."""
    return sorted(p for p in folder.glob("step-*") if (p / MANIFEST).is_file())


def forward_backward(
    model: torch.nn.Module,
    task: Task,
    batches: list[Batch],
    dtype: torch.dtype,
    scaler: torch.amp.GradScaler,
) -> float:
    """Gradients of the mean loss over `batches` accumulated in `model`; returns that loss.
    Under DDP every micro-step but the last skips the gradient all-reduce."""
    total = 0.0
    for index, batch in enumerate(batches):
        last = index == len(batches) - 1
        sync = model.no_sync() if isinstance(model, DistributedDataParallel) and not last else None
        # float32 turns autocast off: the tests compare gradients at full precision.
        precision = torch.autocast(batch.device.type, dtype=dtype, enabled=dtype != torch.float32)
        with sync or contextlib.nullcontext(), precision:
            loss = task.loss(model, batch) / len(batches)
        scaler.scale(loss).backward()
        total += loss.item()
    return total


def _prune(folder: Path, keep: int) -> None:
    for old in complete_checkpoints(folder)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def train(task: Task, run: Run, local_rank: int) -> dict:
    """Train `run.steps` steps (or until SIGTERM) from the newest checkpoint; the outcome as
    rank 0 reports it."""
    with sigterm_flag() as stop_requested:
        return _train(task, run, local_rank, stop_requested)


def _train(task: Task, run: Run, local_rank: int, stop_requested: list[int]) -> dict:
    rank, world = dist.get_rank(), dist.get_world_size()
    device = device_for(local_rank)
    accumulation = accumulation_steps(run.global_batch, run.micro_batch, world)
    model = DistributedDataParallel(
        task.trainable().to(device), device_ids=[device.index] if device.type == "cuda" else None
    )
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=run.learning_rate
    )
    dtype, scaler = mixed_precision(device)
    stream = ShardStream(rank_shards(run.shards, rank, world), run.seed)
    trainer = {"step": 0, "position": 0}
    saved = complete_checkpoints(run.checkpoints)
    resumed_from = saved[-1] if saved else None
    if resumed_from is not None:
        template = {**trainer, "scaler": scaler.state_dict()} if scaler.is_enabled() else trainer
        trainer = load(resumed_from, model, optimizer, template, device)
        if scaler.is_enabled():
            scaler.load_state_dict(trainer.pop("scaler"))
    losses: dict[int, float] = {}
    timed_seconds, timed_steps = 0.0, 0
    first = trainer["step"]
    for step in range(first, run.steps):
        started = time.perf_counter()
        lr = learning_rate(step, run.learning_rate, run.warmup_steps, run.steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        batches = [
            micro_batch(
                stream, trainer["position"] + micro * run.micro_batch, run.micro_batch,
                run.crop, rank, device,
            )
            for micro in range(accumulation)
        ]  # fmt: skip
        local_loss = forward_backward(model, task, batches, dtype, scaler)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        trainer = {
            "step": step + 1,
            "position": trainer["position"] + accumulation * run.micro_batch,
        }
        if run.interrupt_after is not None and step + 1 == run.interrupt_after:
            os.kill(os.getpid(), signal.SIGTERM)
        # One SUM for the loss, one MAX for memory and the stop flag: ranks may get SIGTERM at
        # different moments, and all must stop at the same step boundary.
        summed = torch.tensor([local_loss], dtype=torch.float64, device=device)
        dist.all_reduce(summed)
        peaks = torch.tensor([peak_memory(device), len(stop_requested)], device=device)
        dist.all_reduce(peaks, op=dist.ReduceOp.MAX)
        loss, seconds = summed.item() / world, time.perf_counter() - started
        losses[step] = loss
        if step > first:  # the first step of a run pays for warm-up; checkpoints are not steps
            timed_seconds, timed_steps = timed_seconds + seconds, timed_steps + 1
        rate = run.global_batch * timed_steps / timed_seconds if timed_steps else 0.0
        figures = {
            "step": step + 1, "loss": loss, "step_seconds": seconds,
            "samples_per_second": rate, "gpu_memory_bytes": int(peaks[0].item()),
        }  # fmt: skip
        if rank == 0:
            where = {"recipe": run.recipe, **({"stage": run.stage} if run.stage else {})}
            print(json.dumps({**where, **figures, "lr": lr}), flush=True)
        if run.metrics is not None:
            run.metrics.update(**figures)
        stop = bool(peaks[1].item())
        if stop or trainer["step"] % run.checkpoint_every == 0 or trainer["step"] == run.steps:
            state = {**trainer, "scaler": scaler.state_dict()} if scaler.is_enabled() else trainer
            save(run.checkpoints / f"step-{trainer['step']:08d}", model, optimizer, state, rank)
            if rank == 0:
                _prune(run.checkpoints, run.keep_checkpoints)
        if stop:
            break
    return {
        "model": model.module,
        "losses": losses,
        "resumed_from": str(resumed_from) if resumed_from else None,
        "interrupted": bool(stop_requested),
        "samples_per_s": rate if timed_steps else None,
        "peak_memory_bytes": int(peaks[0].item()) if losses else None,
        "step": trainer["step"],
        "finished": trainer["step"] >= run.steps,
    }


class CheckFailed(Exception):
    """A check run on rank 0 failed; every rank raises this with its message."""


def verified_once(check: Callable[[], object]) -> object:
    """Run `check` on rank 0 only (hashing gigabytes of weights once, not per rank) and give
    every rank its outcome, or the same error."""
    box: list = [None, None]
    if dist.get_rank() == 0:
        try:
            box[0] = check()
        except Exception as error:  # every rank must leave with the reason, not hang
            box[1] = f"{type(error).__name__}: {error}"
    dist.broadcast_object_list(box, src=0)
    if box[1] is not None:
        raise CheckFailed(box[1])
    return box[0]
