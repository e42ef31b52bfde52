"""The few lines a training script adds to become eviction-safe on the platform (docs/training.md,
"Your own script"): resume from the newest complete checkpoint, stop at a step boundary on
SIGTERM with a checkpoint saved, exit 143 so the Job recreates the pod, and serve the gauges the
training-job dashboard reads.

    session = trainkit.Session(model, optimizer, name="my-job", save_every=500)
    for step in session.steps(total):
        ...forward, backward, optimizer step...
        session.log(loss, samples=global_batch)
    session.exit()

Per optimizer step the session adds one all-reduce of two flags on a CPU (gloo) group: whether
any rank got SIGTERM, so all stop at the same boundary, and whether every rank's background save
is written, so the manifest follows as soon as it can. Neither waits for the GPU. The loss stays
on the device and is reduced and read only every `log_every` steps.

Across restarts (docs/training.md, "What restarts, what fails at once"): the session logs the
JobSet's restart attempt (contract/env.JOBSET_RESTART_ATTEMPT) when it starts, keeps the job's
goodput ledger on rank 0 (trainkit.goodput, `goodput.json` beside the checkpoints), and runs the
hang watchdog on every rank (trainkit.watchdog). At each log point every rank's step time is
gathered on the CPU group and the node's local rank 0 serves it (RANK_STEP_SECONDS)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist

from contract.env import JOBSET_RESTART_ATTEMPT, NODE_NAME
from contract.exits import PREEMPTED, RESTART_CAUSES
from trainkit import watchdog
from trainkit.checkpoint import Checkpointer, checkpoint_root, restore
from trainkit.goodput import COMPLETED, LEDGER, Ledger, identity
from trainkit.metrics import METRICS_PORT, MetricsServer
from trainkit.process import INTERRUPTED, leave, peak_memory, sigterm_flag

# The metrics port: 8000 by default (the job builder's `metrics` port), 0 takes a free one,
# `off` serves none.
METRICS_PORT_ENV = "TRAINKIT_METRICS_PORT"


def _ledger_attempts(root: Path) -> list:
    ledger = root / LEDGER
    return json.loads(ledger.read_text())["attempts"] if ledger.is_file() else []


def _metrics(name: str) -> MetricsServer | None:
    chosen = os.environ.get(METRICS_PORT_ENV, str(METRICS_PORT))
    if chosen == "off" or int(os.environ.get("LOCAL_RANK", "0")) != 0:
        return None
    return MetricsServer(name, int(chosen))


class Session:
    """One training run's checkpoints, stop flag and figures. `state` holds what the script keeps
        beyond the model and optimizer (a data position, a stage); it is saved with them and comes
        back on resume, as do `modules` (other modules saved beside the model: an `Ema`'s copy) and
    `losses`, every step's loss of the whole run. A GradScaler's state (fp16) is kept too when one
    is given. Construct it on
        every rank at the same point: it creates process groups and restores collectively."""

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        name: str,
        save_every: int,
        keep: int = 3,
        directory: Path | str | None = None,
        state: dict | None = None,
        scaler: torch.amp.GradScaler | None = None,
        log_every: int = 1,
        metrics: MetricsServer | None = None,
        modules: dict[str, torch.nn.Module] | None = None,
        hang_floor_s: float = watchdog.DEFAULT_FLOOR_S,
    ) -> None:
        self.model, self.optimizer, self.scaler = model, optimizer, scaler
        self.modules = modules or {}
        self.name, self.save_every, self.log_every = name, save_every, log_every
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.device = next(model.parameters()).device
        self.checkpoints = Checkpointer(checkpoint_root(directory), keep)
        self._control = dist.new_group(backend="gloo")
        self.restart_attempt = int(os.environ.get(JOBSET_RESTART_ATTEMPT) or 0)
        factor, ceiling_s = watchdog.settings()
        # The attempt's index in the ledger names its hang folder; rank 0 reads the ledger, so
        # it tells the others (the watchdog guards the restore's collectives too).
        attempt = [len(_ledger_attempts(self.checkpoints.root)) if self.rank == 0 else None]
        dist.broadcast_object_list(attempt, src=0, group=self._control)
        self.watchdog = watchdog.Watchdog(
            watchdog.hang_folder(self.checkpoints.root, attempt[0]), self.rank,
            factor=factor, ceiling_s=ceiling_s, floor_s=hang_floor_s,
        )  # fmt: skip
        nodes: list[str | None] = [None] * self.world
        dist.all_gather_object(nodes, os.environ.get(NODE_NAME) or os.uname().nodename,
                               group=self._control)  # fmt: skip
        self._nodes: list[str] = nodes
        # The losses so far travel with the checkpoint (as JSON text, one DCP object), so a
        # resumed run's `losses` are the whole run's, both sides of the interruption.
        template = {"step": 0, "losses": "{}", **(state or {})}
        if self._scaled():
            template["scaler"] = scaler.state_dict()
        restored, self.resumed_from = restore(
            self.checkpoints.root, model, optimizer, template, self.modules
        )
        if self._scaled():
            scaler.load_state_dict(restored.pop("scaler"))
        self.step: int = restored.pop("step")
        self.losses: dict[int, float] = {
            int(step): loss for step, loss in json.loads(restored.pop("losses")).items()
        }
        self.state: dict = restored
        self.ledger = None
        if self.rank == 0:
            self.checkpoints.root.mkdir(parents=True, exist_ok=True)
            self.ledger = Ledger(
                self.checkpoints.root, restart_attempt=self.restart_attempt,
                world_size=self.world, resumed_from=self.step, nodes=len(set(self._nodes)),
                identity=identity(name),
            )  # fmt: skip
            # A log line, not JSON: rank 0's JSON lines are the steps' figures.
            print(
                f"trainkit: job {name}: {JOBSET_RESTART_ATTEMPT}={self.restart_attempt}, "
                f"attempt {self.ledger.index} of the job, resuming from step {self.step}",
                flush=True,
            )
        self._step_seconds = 0.0  # this attempt's step time so far, boundary to boundary
        self._stepped_at = time.time()
        self.interrupted = False
        self.samples_per_s: float | None = None
        self._pending_loss: list[tuple[int, torch.Tensor]] = []
        self._samples = 0
        self._timed = (0.0, 0)  # seconds and samples after the first step, which pays warm-up
        # A caller's server (a recipe serves from its start), else one from the environment.
        self.metrics = metrics or _metrics(name)

    def _scaled(self) -> bool:
        return self.scaler is not None and self.scaler.is_enabled()

    def steps(self, total: int) -> Iterator[int]:
        """0-based step numbers from the resumed one to `total`; after each, the boundary: stop
        on SIGTERM, save every `save_every` steps, at the end and on stopping."""
        with sigterm_flag() as received:
            first = self.step
            boundary = time.perf_counter()
            while self.step < total:
                started = time.perf_counter()
                yield self.step
                self.step += 1
                self.watchdog.beat(self.step)
                self._step_seconds += time.perf_counter() - boundary
                boundary, self._stepped_at = time.perf_counter(), time.time()
                if self.ledger is not None:
                    self.ledger.stepped(self.step, self._step_seconds, self._stepped_at)
                stop, written = self._agree(received)
                if written:
                    self._finished(self.checkpoints.finish())
                if self.step - 1 > first:
                    seconds, samples = self._timed
                    self._timed = (seconds + time.perf_counter() - started, samples + self._samples)
                self._samples = 0
                if self.step % self.log_every == 0 or stop or self.step == total:
                    self._report(time.perf_counter() - started)
                if stop or self.step % self.save_every == 0 or self.step == total:
                    self.save()
                if stop:
                    self.interrupted = True
                    break
        self._finished(self.checkpoints.finish())
        self.watchdog.stop()
        if self.ledger is not None:
            self.ledger.end(RESTART_CAUSES[PREEMPTED] if self.interrupted else COMPLETED)

    def _finished(self, folder: Path | None) -> None:
        """A checkpoint's manifest is written: its steps survive a restart."""
        if folder is not None and self.ledger is not None:
            self.ledger.checkpointed(int(folder.name.removeprefix("step-")))

    def _agree(self, received: list[int]) -> tuple[bool, bool]:
        """(any rank got SIGTERM, every rank's save in flight is written), on the CPU group."""
        flags = torch.tensor([len(received), int(self.checkpoints.pending())])
        dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self._control)
        return bool(flags[0]), not flags[1] and self.checkpoints.has_pending()

    def log(self, loss: torch.Tensor, samples: int) -> None:
        """This step's loss (a device tensor, not read now) and the samples it took, all ranks."""
        self._pending_loss.append((self.step, loss.detach().float().reshape(())))
        self._samples += samples

    def save(self) -> Path:
        self._read_losses()  # the history saved is complete up to this step
        trainer = {"step": self.step, "losses": json.dumps(self.losses), **self.state}
        if self._scaled():
            trainer["scaler"] = self.scaler.state_dict()
        if self.ledger is not None:
            self.ledger.saving(self.step, self._step_seconds)
        started = time.perf_counter()
        folder = self.checkpoints.save(self.step, self.model, self.optimizer, trainer, self.modules)
        if self.ledger is not None:
            self.ledger.saved(time.perf_counter() - started)
        return folder

    def _read_losses(self) -> int | None:
        """Each step's loss not read yet, averaged over every rank (one all-reduce, one read for
        all of them), into `losses`; the last step read, or None when none was pending."""
        if not self._pending_loss:
            return None
        steps = [step for step, _ in self._pending_loss]
        summed = torch.stack([loss for _, loss in self._pending_loss]).double()
        self._pending_loss = []
        dist.all_reduce(summed)
        for step, value in zip(steps, (summed / self.world).tolist(), strict=True):
            self.losses[step] = value
        return steps[-1]

    def _report(self, seconds: float) -> None:
        """The losses since the last report, a JSON line on rank 0 and the gauges."""
        last = self._read_losses()
        if last is None:
            return
        loss = self.losses[last]
        timed_s, timed_samples = self._timed
        self.samples_per_s = timed_samples / timed_s if timed_s else None
        figures = {
            "step": self.step, "loss": loss, "step_seconds": seconds,
            "samples_per_second": self.samples_per_s or 0.0,
            "gpu_memory_bytes": peak_memory(self.device),
        }  # fmt: skip
        # Every rank's step time, for the straggler view: one all-gather on the CPU group.
        times = [torch.zeros(1, dtype=torch.float64) for _ in range(self.world)]
        dist.all_gather(times, torch.tensor([seconds], dtype=torch.float64), group=self._control)
        if self.rank == 0:
            # `at`: when the step ended (Unix time), the instant the ledger records.
            print(json.dumps({"job": self.name, **figures, "at": self._stepped_at}), flush=True)
            self.ledger.write()
        if self.metrics is not None:
            self.metrics.update(**figures)
            self.metrics.update_ranks(
                {(rank, self._nodes[rank]): float(t) for rank, t in enumerate(times)}
            )

    def exit(self) -> NoReturn:
        """Leave as the Job expects: 143 (terminated) after a SIGTERM stop, 0 when finished."""
        self.checkpoints.finish()
        leave(INTERRUPTED if self.interrupted else 0)
