"""Each step a child process in its own session, time-boxed out of the run's budget, its output
appended to the one combined log; a step that fails or runs out of time is recorded and the
next one runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

# After SIGTERM, how long a step's processes get before SIGKILL (torchrun passes SIGTERM on to
# its workers and waits for them).
GRACE_S = 15.0


@dataclass
class Outcome:
    """A step as the summary reports it: ok, failed (exit N), timed out, or skipped (why)."""

    name: str
    status: str
    wall_s: float = 0.0
    limit_s: float = 0.0
    command: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Budget:
    """The run's seconds: a step gets what is left less what the steps after it still need."""

    def __init__(self, total_s: float) -> None:
        self.total_s, self.started = total_s, time.monotonic()

    def left(self) -> float:
        return self.total_s - (time.monotonic() - self.started)

    def used(self) -> float:
        return time.monotonic() - self.started

    def limit(self, reserve_s: float) -> float:
        return self.left() - reserve_s


def run(name: str, command: list[str], env: dict[str, str], log: TextIO, limit_s: float,
        cwd: Path) -> Outcome:  # fmt: skip
    """`command` with at most `limit_s` seconds, its stdout and stderr into `log`."""
    if limit_s < 1:
        return Outcome(name, "skipped", command=command, note="no time left in the budget")
    log.write(f"\n===== {name}: {' '.join(command)} (limit {limit_s:.0f} s)\n")
    log.flush()
    started = time.monotonic()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        code = process.wait(timeout=limit_s)
        status = "ok" if code == 0 else f"failed (exit {code})"
    except subprocess.TimeoutExpired:
        _stop(process)
        status = f"timed out after {limit_s:.0f} s"
    wall = time.monotonic() - started
    log.write(f"===== {name}: {status} in {wall:.1f} s\n")
    log.flush()
    return Outcome(name, status, wall, limit_s, command)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the step's whole process group (torchrun and its ranks), SIGKILL after
    GRACE_S."""
    for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
