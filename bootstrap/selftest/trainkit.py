"""What every training loop here shares (the self-test's worker, the recipes): random draws keyed
by position, the autocast dtype, `torch.distributed.checkpoint` saves with a checksum manifest,
a SIGTERM flag, the peak-memory figure, and a clean exit.

Determinism: every random draw is keyed by (seed, rank, position) rather than taken from a
running generator, so the step and the data position in the checkpoint restore all of it."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

MANIFEST = "manifest.json"


class CheckpointError(Exception):
    """A checkpoint that cannot be resumed from; the message names it."""


def autocast_dtype(device: torch.device) -> torch.dtype:
    """bf16 where the device computes in it (every CPU autocast; CUDA compute capability 8.0,
    Ampere, and later: A10G, L4, L40S, A100, H100...); fp16 otherwise, so V100 (7.0) and T4
    (7.5) train in fp16 with the callers' gradient scaler. Not torch.cuda.is_bf16_supported():
    by default it counts bf16 emulated through fp32 and says yes on a V100."""
    if device.type == "cuda" and torch.cuda.get_device_capability(device) < (8, 0):
        return torch.float16
    return torch.bfloat16


def keyed_generator(*key: int) -> torch.Generator:
    """A generator seeded by a digest of `key`: distinct keys give unrelated streams."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


def file_digests(directory: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.iterdir())
        if path.name != MANIFEST
    }


def save(directory: Path, model, optimizer, trainer: dict, rank: int) -> float:
    """A DCP checkpoint plus a manifest of its files' sha256, so a torn or garbled file is
    caught before the resume rather than trained on. Returns the seconds it took."""
    started = time.perf_counter()
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save(
        {"model": model_state, "optim": optim_state, "trainer": trainer}, checkpoint_id=directory
    )
    dist.barrier()
    if rank == 0:
        (directory / MANIFEST).write_text(json.dumps(file_digests(directory), indent=1))
    dist.barrier()
    return time.perf_counter() - started


def verify(directory: Path) -> str | None:
    """Why the checkpoint cannot be trusted, or None."""
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return f"checkpoint {directory}: no {MANIFEST} (the save never finished)"
    expected = json.loads(manifest.read_text())
    found = file_digests(directory)
    for name, digest in expected.items():
        if found.get(name) != digest:
            state = "missing" if name not in found else "sha256 mismatch"
            return f"checkpoint {directory} corrupted: {name} {state}"
    return None


def load(directory: Path, model, optimizer, trainer: dict, device: torch.device) -> dict:
    """The trainer state (`trainer` gives its keys), after the model and optimizer are restored;
    every rank agrees first that the files are intact, so none enters DCP's load alone."""
    problem = verify(directory)
    flag = torch.tensor([0 if problem is None else 1], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    if flag.item():
        raise CheckpointError(problem or f"checkpoint {directory} corrupted (seen by another rank)")
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state, "trainer": dict(trainer)}
    try:
        dcp.load(state, checkpoint_id=directory)
    except Exception as error:  # DCP wraps a rank's failure; the reason is what matters here
        raise CheckpointError(f"checkpoint {directory} unreadable: {error}") from error
    set_state_dict(model, optimizer, model_state_dict=model_state, optim_state_dict=optim_state)
    return state["trainer"]


def share_cpu_cores(local_world_size: int) -> None:
    """The node's cores shared among its ranks: oversubscribed threads spin against each other."""
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world_size))


def peak_memory(device: torch.device) -> int:
    """Peak bytes allocated on the GPU, or the process's peak resident set on a CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


@contextmanager
def sigterm_flag() -> Iterator[list[int]]:
    """A list that SIGTERM appends to while inside; the previous handler back on leaving.
    Kubernetes sends SIGTERM, then SIGKILL after the grace period: the flag lets the work stop
    at its next boundary (a step, a sample), cleanly, within it."""
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def leave(code: int) -> NoReturn:
    """Leave without tearing torch down. Freeing a DDP model on gloo can deadlock (torch 2.13:
    the Reducer's destructor, holding the GIL, joins gloo's run-loop thread, which waits for the
    GIL to free a finished work's tensors), so a worker puts its results on disk first and ends
    with os._exit once every rank has got this far."""
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
