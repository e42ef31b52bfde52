"""The host tools the hardware checks read (nvidia-smi, dmesg, fio, dcgmi): run one, and say
plainly why there is no output when there is none, so a check can SKIP naming what is missing."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass


@dataclass
class ToolRun:
    """What a tool printed, or why nothing: not installed, failed (exit status and stderr)."""

    text: str
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem


def run_tool(argv: list[str], timeout_s: float = 60.0) -> ToolRun:
    if shutil.which(argv[0]) is None:
        return ToolRun("", f"{argv[0]} not found on PATH")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return ToolRun("", f"`{' '.join(argv)}` did not finish within {timeout_s:g} s")
    except OSError as error:
        return ToolRun("", f"`{' '.join(argv)}` could not run: {error}")
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return ToolRun(
            done.stdout,
            f"`{' '.join(argv)}` exited {done.returncode}: {said[-1] if said else 'no output'}",
        )
    return ToolRun(done.stdout)


def kernel_log() -> ToolRun:
    """The kernel ring buffer since boot. A container reads it only with CAP_SYSLOG or with
    kernel.dmesg_restrict=0 on the host; otherwise the reason says so."""
    log = run_tool(["dmesg"], timeout_s=30)
    if not log.ok:
        log.problem += " (reading the kernel log needs CAP_SYSLOG or kernel.dmesg_restrict=0)"
    return log
