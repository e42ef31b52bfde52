"""The training loop every recipe shares; a recipe brings only its `Task` (model and loss).

- DDP over every rank torchrun started (NCCL on GPUs, gloo on CPUs), gradients bucketed as views
  (`gradient_as_bucket_view`: no copy between the buckets and `.grad`); gradient accumulation
  makes the global batch exactly: global = micro x ranks x accumulation, refused otherwise;
  gradients are all-reduced on the last micro-step only.
- bf16 autocast, fp16 with a gradient scaler where bf16 is missing (trainkit.precision); the
  model in channels_last, the layout tensor cores' convolutions take without a transpose;
  `torch.compile` of the DDP model when `compile` is set.
- Gradients clipped to `max_grad_norm` after unscaling (diffusers' train_text_to_image.py);
  an EMA of the weights (`ema_decay`, trainkit.Ema) checkpointed with the model.
- Fused AdamW (one kernel per step for all parameters) with linear warm-up then cosine annealing
  to zero over the run, a pure function of the step, so a resume needs no scheduler state (the
  same curve as diffusers' get_cosine_schedule_with_warmup; tests compare the two).
- Micro-batches from trainkit's loader: worker processes decode and augment ahead of the step.
- No host sync per micro-step: the loss stays on the device and is read every `log_every`
  steps; `loader_workers` processes per rank decode ahead.
- Checkpoints, SIGTERM, resume and metrics are trainkit.Session's: saved in the background every
  `checkpoint_every` steps, at the end, and at the first step boundary after SIGTERM, the last
  `keep_checkpoints` kept; a run resumes from the newest complete checkpoint: model, optimizer,
  step and data position, so the next loss is the one the uninterrupted run had."""

from __future__ import annotations

import contextlib
import math
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from trainkit import Ema, MetricsServer, Session, device_for, mixed_precision, peak_memory

from contract.batch import accumulation_steps
from recipes.shards import Batch, KeyedBatches, rank_shards


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
    # Steps between reads of the loss: each read waits for the GPU's queued work.
    log_every: int
    # Data loader worker processes per rank (0: decode in the training process).
    workers: int
    compile: bool
    max_grad_norm: float | None
    ema_decay: float | None = None
    # Micro-batches of prepare's VAE moments rather than images (sd-finetune's `latents`).
    latents: bool = False
    # A recipe's part, for the log: ESRGAN's "2x" and "4x" stages.
    stage: str | None = None
    # Send ourselves SIGTERM after this step, as an eviction would (the smoke and the tests).
    interrupt_after: int | None = None
    metrics: MetricsServer | None = None
    # Called with the step and the model to sample (the EMA's, else the trained one) at each
    # step that saves a checkpoint, but for a SIGTERM's: the validation samples (rank 0).
    on_checkpoint: Callable[[int, torch.nn.Module], None] | None = None


def forward_backward(
    model: torch.nn.Module,
    task: Task,
    batches: list[Batch],
    dtype: torch.dtype,
    scaler: torch.amp.GradScaler,
    forward: torch.nn.Module | None = None,
) -> torch.Tensor:
    """Gradients of the mean loss over `batches` accumulated in `model`; returns that loss as a
    device tensor (reading it would wait for the GPU). Under DDP every micro-step but the last
    skips the gradient all-reduce. `forward`: what the loss calls, when not `model` itself (its
    torch.compile'd wrapper)."""
    total = torch.zeros((), device=batches[0].device)
    for index, batch in enumerate(batches):
        last = index == len(batches) - 1
        sync = model.no_sync() if isinstance(model, DistributedDataParallel) and not last else None
        # float32 turns autocast off: the tests compare gradients at full precision.
        precision = torch.autocast(batch.device.type, dtype=dtype, enabled=dtype != torch.float32)
        with sync or contextlib.nullcontext(), precision:
            loss = task.loss(model if forward is None else forward, batch) / len(batches)
        scaler.scale(loss).backward()
        total += loss.detach()
    return total


def optimizer_for(model: torch.nn.Module, lr: float) -> torch.optim.AdamW:
    """AdamW over the trainable parameters; fused: one kernel updates them all."""
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, fused=True)


def optimizer_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    max_grad_norm: float | None,
) -> None:
    """Clip the gradients to `max_grad_norm` (if set), step and clear them. The norm is that of
    the true gradients: fp16's scaled ones are unscaled first, as diffusers' script does through
    accelerate. No host sync: the norm and the clip factor stay on the device."""
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)


def train(task: Task, run: Run, local_rank: int) -> dict:
    """Train `run.steps` steps (or until SIGTERM) from the newest checkpoint; the outcome as
    rank 0 reports it."""
    rank, world = dist.get_rank(), dist.get_world_size()
    device = device_for(local_rank)
    accumulation = accumulation_steps(run.global_batch, run.micro_batch, world)
    module = task.trainable().to(device, memory_format=torch.channels_last)
    model = DistributedDataParallel(
        module,
        device_ids=[device.index] if device.type == "cuda" else None,
        gradient_as_bucket_view=True,
    )
    # Compiled as a whole, DDP included: dynamo splits the graph at DDP's buckets so their
    # all-reduce still overlaps the backward (PyTorch's "DDP + torch.compile" notes).
    forward = torch.compile(model) if run.compile else model
    optimizer = optimizer_for(model, run.learning_rate)
    dtype, scaler = mixed_precision(device)
    ema = Ema(module, run.ema_decay) if run.ema_decay else None
    session = Session(
        model, optimizer, name=run.recipe, save_every=run.checkpoint_every,
        keep=run.keep_checkpoints, directory=run.checkpoints, state={"position": 0},
        scaler=scaler, log_every=run.log_every, metrics=run.metrics,
        modules={"ema": ema.module} if ema else None,
    )  # fmt: skip
    per_step = accumulation * run.micro_batch
    batches = KeyedBatches(
        rank_shards(run.shards, rank, world), run.seed, rank, run.micro_batch, run.crop,
        start=session.state["position"], workers=run.workers, pin_memory=device.type == "cuda",
        latents=run.latents,
    )  # fmt: skip
    with batches:
        for step in session.steps(run.steps):
            lr = learning_rate(step, run.learning_rate, run.warmup_steps, run.steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            micro = [batches.next(device) for _ in range(accumulation)]
            loss = forward_backward(model, task, micro, dtype, scaler, forward)
            session.log(loss, run.global_batch)
            optimizer_step(model, optimizer, scaler, run.max_grad_norm)
            if ema is not None:
                ema.update(module, step + 1)
            saves = (step + 1) % run.checkpoint_every == 0 or step + 1 == run.steps
            if run.on_checkpoint is not None and saves:
                run.on_checkpoint(step + 1, module if ema is None else ema.module)
            session.state["position"] += per_step
            if run.interrupt_after is not None and step + 1 == run.interrupt_after:
                os.kill(os.getpid(), signal.SIGTERM)
    peak = torch.tensor([peak_memory(device)], device=device)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    return {
        "model": model.module,
        "ema": ema.module if ema else None,
        "losses": session.losses,
        "resumed_from": str(session.resumed_from) if session.resumed_from else None,
        "interrupted": session.interrupted,
        "samples_per_s": session.samples_per_s,
        "peak_memory_bytes": int(peak.item()) if session.losses else None,
        "step": session.step,
        "finished": session.step >= run.steps,
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
