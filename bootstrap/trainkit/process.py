"""The process around the training loop: joining the group torchrun describes, the device, the
SIGTERM an eviction sends, and an exit Kubernetes reads correctly."""

from __future__ import annotations

import os
import resource
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import NoReturn

import torch
import torch.distributed as dist

from contract.env import TRAINKIT_CHECKPOINT_DIR
from contract.launch import set_flight_recorder_defaults

# The shell's code for a process ended by SIGTERM: a pod that saved and stopped on eviction
# exits with it, so the Job never counts its index as succeeded (its podFailurePolicy ignores
# the disrupted pod and it is recreated).
INTERRUPTED = 128 + 15


def join(timeout: timedelta = timedelta(minutes=30)) -> tuple[int, int]:
    """The process group torchrun describes (NCCL on GPUs, gloo on CPUs), or a group of one when
    started alone; returns (rank, local rank). The flight recorder's settings are set first
    (contract/launch.py: the launcher sets them too), and NCCL's own dump on its timeout goes to
    the job's checkpoint folder (`hangs/`), beside the watchdog's."""
    set_flight_recorder_defaults()
    if os.environ.get(TRAINKIT_CHECKPOINT_DIR):
        hangs = os.path.join(os.environ[TRAINKIT_CHECKPOINT_DIR], "hangs")
        os.makedirs(hangs, exist_ok=True)
        # ProcessGroupNCCL.hpp: the dump's file name prefix, the rank appended.
        os.environ.setdefault("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", f"{hangs}/nccl-trace-rank-")
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
        os.environ.setdefault(name, value)
    os.environ.setdefault("MASTER_PORT", "29500")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)  # NCCL's object collectives use the current device
    else:
        share_cpu_cores(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    dist.init_process_group(backend, timeout=timeout)
    return dist.get_rank(), local_rank


def device_for(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


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
