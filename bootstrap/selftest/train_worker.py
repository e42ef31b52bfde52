"""One training worker of the self-test's DDP run, a process of its own so that SIGTERM can really
end it: `python -m selftest.train_worker '<json settings>'`. It trains, prints each step's loss
as a JSON line, and on SIGTERM saves a `torch.distributed.checkpoint` at the next step boundary
and exits, as a worker of an evicted Job would. Its outcome goes to the settings' `result` file.
Keyed draws, checkpoints and the exit are trainkit's, shared with the recipes and teams' scripts."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from trainkit import (
    Checkpointer,
    CheckpointError,
    deterministic_kernels,
    keyed_generator,
    leave,
    load,
    mixed_precision,
    peak_memory,
    share_cpu_cores,
)

from selftest.data import augment, iter_samples
from selftest.model import Denoiser

NOISE_SIGMA = 0.5


def micro_batch(images, settings: dict, position: int, step: int, micro: int):
    """The (noisy, noise) pair for one micro-step: samples from the rank's images in a per-epoch
    permutation, each cropped and flipped with a generator keyed by its data position."""
    seed, rank, size = settings["seed"], settings["rank"], settings["micro_batch"]
    crops = []
    for offset in range(size):
        at = position + offset
        epoch, index = divmod(at, len(images))
        order = torch.randperm(len(images), generator=keyed_generator(seed, epoch))
        crop = augment(images[int(order[index])], settings["crop"], keyed_generator(seed, rank, at))
        crops.append(crop)
    clean = torch.stack(crops)
    noise = torch.randn(clean.shape, generator=keyed_generator(seed, rank, step, micro))
    return clean + NOISE_SIGMA * noise, noise


def train(settings: dict) -> NoReturn:
    stop_requested: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stop_requested.append(signum))
    rank, world = settings["rank"], settings["world_size"]
    cuda = settings["device"] == "cuda"
    device = torch.device(f"cuda:{settings['local_rank']}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        share_cpu_cores(settings["local_world_size"])
    dist.init_process_group(
        "nccl" if cuda else "gloo", init_method=settings["init_method"], rank=rank,
        world_size=world, timeout=timedelta(seconds=settings["timeout_s"]),
    )  # fmt: skip
    deterministic_kernels()
    torch.manual_seed(settings["seed"])  # the same initial weights on every rank and every run
    images = [image for _, image in iter_samples([Path(p) for p in settings["shards"]])]
    model = DistributedDataParallel(
        Denoiser(width=settings["width"], checkpointing=True).to(device),
        device_ids=[device.index] if cuda else None,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["lr"])
    dtype, scaler = mixed_precision(device)
    checkpoints = Checkpointer(Path(settings["checkpoints"]))
    trainer = {"step": 0, "position": 0}
    if settings["resume_from"]:
        template = {**trainer, "scaler": scaler.state_dict()} if scaler.is_enabled() else trainer
        try:
            trainer = load(Path(settings["resume_from"]), model, optimizer, template)
        except CheckpointError as error:
            finish(settings, {"error": str(error)})
        if scaler.is_enabled():
            scaler.load_state_dict(trainer.pop("scaler"))
    accumulation, per_step = (
        settings["accumulation"],
        settings["accumulation"] * settings["micro_batch"],
    )
    losses: dict[int, float] = {}
    outcome: dict = {"losses": losses, "dtype": str(dtype).removeprefix("torch.")}
    timed_from = None
    first_step = trainer["step"]
    for step in range(first_step, settings["steps"]):
        if step == first_step + 1:
            timed_from = time.perf_counter()  # the first step pays for warm-up
        total = 0.0
        for micro in range(accumulation):
            position = trainer["position"] + micro * settings["micro_batch"]
            noisy, noise = micro_batch(images, settings, position, step, micro)
            # DDP all-reduces gradients on the last micro-step only.
            sync = contextlib.nullcontext() if micro == accumulation - 1 else model.no_sync()
            with sync, torch.autocast(device.type, dtype=dtype):
                loss = F.mse_loss(model(noisy.to(device)).float(), noise.to(device)) / accumulation
            scaler.scale(loss).backward()
            total += loss.item()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        trainer = {"step": step + 1, "position": trainer["position"] + per_step}
        losses[step] = total
        print(json.dumps({"step": step, "loss": total}), flush=True)
        # Ranks may get SIGTERM at different moments; all stop at the same step boundary.
        stop = torch.tensor([1 if stop_requested else 0], device=device)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            # fp16's loss scale is state too: without it a resume would rescale differently.
            state = {**trainer, "scaler": scaler.state_dict()} if scaler.is_enabled() else trainer
            saving = time.perf_counter()
            directory = checkpoints.save(trainer["step"], model, optimizer, state)
            checkpoints.finish()  # stopping: the manifest must be on disk before the exit
            outcome["save_s"] = time.perf_counter() - saving
            outcome["checkpoint"] = str(directory)
            break
    if timed_from is not None and "checkpoint" not in outcome:
        elapsed = time.perf_counter() - timed_from
        outcome["samples_per_s"] = world * per_step * (len(losses) - 1) / elapsed
    outcome["peak_memory_bytes"] = peak_memory(device)
    finish(settings, outcome)


def finish(settings: dict, outcome: dict) -> NoReturn:
    """Write the outcome, then leave (trainkit.leave: why not a normal exit)."""
    Path(settings["result"]).write_text(json.dumps(outcome))
    leave(3 if "error" in outcome else 0)


if __name__ == "__main__":
    train(json.loads(sys.argv[1]))
