"""A real 2-rank gloo process group for the self-test's check groups, as torchrun would give the
runner: each rank is a spawned process that joins the group, builds its context and calls the
check group; the results come back pickled, one list per rank."""

from __future__ import annotations

import importlib
import os
import pickle
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist
import torch.multiprocessing as mp
from selftest.context import SelfTestContext
from selftest.result import CheckResult

from tests.helpers.hang import HANG_S
from tests.helpers.loopback import free_port


def _rank(rank: int, world_size: int, port: int, target: str, settings: dict, out: Path) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
        timeout=timedelta(seconds=HANG_S),
    )  # fmt: skip
    ctx = SelfTestContext(
        rank=rank, world_size=world_size, local_rank=rank, device="cpu", **settings
    )
    module, function = target.split(":")
    results = getattr(importlib.import_module(module), function)(ctx)
    (out / f"rank{rank}.pickle").write_bytes(pickle.dumps(results))
    # Once every rank's results are written the group is done: no rank closes its connections
    # while a peer still uses them, and the process ends without the interpreter's teardown,
    # where gloo's threads can abort a finished rank ("terminate called without an active
    # exception", seen once in a loaded suite run; pytorch/pytorch#179291 describes the same
    # teardown). What the group computed is already on disk; its teardown is not under test.
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)


def run_group(target: str, out: Path, world_size: int = 2, **settings) -> list[list[CheckResult]]:
    """`target` ("module:function") on every rank of a fresh group; each rank's results."""
    port = free_port()
    out.mkdir(parents=True, exist_ok=True)
    mp.spawn(_rank, args=(world_size, port, target, settings, out), nprocs=world_size)
    return [pickle.loads((out / f"rank{rank}.pickle").read_bytes()) for rank in range(world_size)]
