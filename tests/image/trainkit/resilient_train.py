"""The training script the resilience tests run under the launcher, one rank per "node": a tiny
DDP regression on keyed draws through trainkit.Session, so an interrupted run resumed from its
checkpoint gives an uninterrupted run's losses bit for bit. The fault is the test's, in the
first attempt only (JOBSET_RESTART_ATTEMPT 0), on one rank at one step:
- `hold`: the rank stops before the step (outside any collective) until the test kills its pod;
  the other rank waits in the step's all-reduce;
- `hang`: the rank waits in a receive no one sends (inside a collective); the other rank waits
  in the step's all-reduce; both watchdogs fire.
Rank 0 writes the whole run's losses (the session's, both sides of any restart) to --out."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import trainkit
from torch.nn.parallel import DistributedDataParallel

from contract.env import JOBSET_RESTART_ATTEMPT


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--save-every", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--fault", choices=["none", "hold", "hang"], default="none")
    p.add_argument("--fault-step", type=int, default=0)
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--hang-floor", type=float, default=60.0)
    args = p.parse_args()
    rank, _ = trainkit.join()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    session = trainkit.Session(
        model, optimizer, name="resilient", save_every=args.save_every,
        hang_floor_s=args.hang_floor,
    )  # fmt: skip
    first_attempt = os.environ.get(JOBSET_RESTART_ATTEMPT, "0") == "0"
    for step in session.steps(args.steps):
        if first_attempt and rank == args.fault_rank and step == args.fault_step:
            (args.out / f"fault-{args.fault}-rank-{rank}").write_text(str(time.time()))
            if args.fault == "hold":
                time.sleep(3600)
            elif args.fault == "hang":
                dist.recv(torch.zeros(1), src=1 - rank)
        time.sleep(args.step_sleep)
        draw = trainkit.keyed_generator(0, step * dist.get_world_size() + rank)
        x, y = torch.randn(16, 8, generator=draw), torch.randn(16, 1, generator=draw)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        session.log(loss, samples=16)
    if rank == 0 and not session.interrupted:
        (args.out / "losses.json").write_text(json.dumps(session.losses))
    session.exit()


if __name__ == "__main__":
    main()
