"""The hang watchdog: a daemon thread that ends a rank whose step counter stopped advancing, so
the group restarts from its checkpoint instead of holding its GPUs until the Job's deadline.

A rank is hung when no step finished within `factor` × the median of its last few step times
(never under `floor_s`, so a garbage collection or a checkpoint's staging between 50 ms steps
is not a hang), or within `ceiling_s` whatever its steps took. Before the first step there is
no step time yet: the ceiling alone applies (the startup grace: restore, warm-up, the first
compile). When it fires it writes, under `folder` (the job's checkpoint folder,
`hangs/attempt-<N>/`): every thread's stack (faulthandler), the flight recorder's ring buffer
(PyTorch 2.13 `torch._C._distributed_c10d._dump_nccl_trace` on NCCL builds, else
`_dump_fr_trace`, which records gloo's collectives too; both return a pickle, the format
`torch.distributed.flight_recorder` reads), and a JSON record of the bound it broke; then it
exits with contract.exits.HUNG without running Python's shutdown (a rank stuck in a
collective would block it)."""

from __future__ import annotations

import faulthandler
import json
import os
import statistics
import sys
import threading
import time
from collections import deque
from pathlib import Path

from contract.env import TRAINKIT_HANG_CEILING_S, TRAINKIT_HANG_FACTOR
from contract.exits import HUNG

# The config model's defaults (scheduling.jobs.hang_factor, hang_ceiling_seconds).
DEFAULT_FACTOR = 10.0
DEFAULT_CEILING_S = 1800.0
DEFAULT_FLOOR_S = 60.0
RECENT_STEPS = 5


def hang_folder(root: Path, attempt: int) -> Path:
    return root / "hangs" / f"attempt-{attempt}"


def settings(environ=os.environ) -> tuple[float, float]:
    """(factor, ceiling in seconds) from the job's environment; a bad value names the variable."""
    chosen = []
    for name, default in ((TRAINKIT_HANG_FACTOR, DEFAULT_FACTOR),
                          (TRAINKIT_HANG_CEILING_S, DEFAULT_CEILING_S)):  # fmt: skip
        text = environ.get(name) or str(default)
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if value <= 0:
            raise ValueError(f"{name}={text!r}: expected a positive number")
        chosen.append(value)
    return chosen[0], chosen[1]


class Watchdog:
    def __init__(
        self, folder: Path, rank: int, *, factor: float, ceiling_s: float,
        floor_s: float = DEFAULT_FLOOR_S, step: int = 0,
    ) -> None:  # fmt: skip
        self.folder, self.rank = folder, rank
        self.factor, self.ceiling_s, self.floor_s = factor, ceiling_s, floor_s
        self.step = step
        self._recent: deque[float] = deque(maxlen=RECENT_STEPS)
        self._last = time.monotonic()
        self._last_wall = time.time()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="trainkit-watchdog", daemon=True)
        self._thread.start()

    def bound_s(self) -> float:
        with self._lock:
            recent = list(self._recent)
        if not recent:
            return self.ceiling_s
        return min(self.ceiling_s, max(self.floor_s, self.factor * statistics.median(recent)))

    def beat(self, step: int) -> None:
        """A step finished: the counter advanced."""
        now = time.monotonic()
        with self._lock:
            self._recent.append(now - self._last)
            self._last, self._last_wall, self.step = now, time.time(), step

    def stop(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.wait(min(1.0, self.bound_s() / 20)):
            with self._lock:
                stalled = time.monotonic() - self._last
            bound = self.bound_s()
            if stalled > bound and not self._stopped.is_set():
                self._fire(stalled, bound)

    def _fire(self, stalled: float, bound: float) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        base = self.folder / f"rank-{self.rank}"
        with self._lock:
            recent = list(self._recent)
        record = {
            "rank": self.rank, "step": self.step, "last_step_at": self._last_wall,
            "fired_at": time.time(), "stalled_s": stalled, "bound_s": bound,
            "recent_step_s": recent, "factor": self.factor, "ceiling_s": self.ceiling_s,
            "floor_s": self.floor_s, "exit_code": HUNG,
            "flight_record": flight_record(base.with_suffix(".flight-record.pickle")),
        }  # fmt: skip
        with open(base.with_suffix(".stacks.txt"), "w") as stacks:
            faulthandler.dump_traceback(stacks, all_threads=True)
        base.with_suffix(".json").write_text(json.dumps(record, indent=1))
        print(
            f"trainkit: rank {self.rank} hung: no step for {stalled:.1f} s after step "
            f"{self.step} (bound {bound:.1f} s); stacks and flight record in {self.folder}; "
            f"exit {HUNG}",
            file=sys.stderr,
            flush=True,
        )
        faulthandler.dump_traceback(sys.stderr, all_threads=True)
        os._exit(HUNG)


def flight_record(path: Path) -> str:
    """Write the flight recorder's buffer to `path`; what was written, in words."""
    try:
        import torch._C._distributed_c10d as c10d
        import torch.distributed as dist

        nccl = dist.is_initialized() and dist.get_backend() == "nccl"
        dump = getattr(c10d, "_dump_nccl_trace", None) if nccl else None
        dump = dump or getattr(c10d, "_dump_fr_trace", None)
        if dump is None:
            return "none: this torch has no flight recorder"
        path.write_bytes(dump())
        return f"{path.name} ({dump.__name__})"
    except Exception as error:  # a failed dump must not stop the exit
        return f"none: {type(error).__name__}: {error}"
