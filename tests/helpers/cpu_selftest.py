"""The real self-test of this checkout on the CPU: torchrun, two gloo ranks, every check group,
its metrics pushed to a Pushgateway stand-in. One run a session (tests/conftest.py's
`cpu_selftest` fixture) serves the runner's tests and the training group's: the report, each
rank's training runs as its workers wrote them, and the checkpoint on shared storage."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.pushgateway import Gateway
from tests.helpers.selftest_process import TORCHRUN, run

RUN_ID = "cpu"
NODE = "node-a"
RANKS = 2


def run_cpu_selftest(out: Path) -> tuple[subprocess.CompletedProcess, Path, list]:
    """The run's process, its output folder and the requests the Pushgateway received."""
    if not TORCHRUN.exists():
        raise AssertionError(f"{TORCHRUN} missing: install torch from requirements-selftest.txt")
    for volume in ("shared-data", "nvme-cache"):
        (out / volume).mkdir()
    # Its metrics go to a Pushgateway stand-in on 127.0.0.1, named as the Job names it. The gloo
    # busbw floor (0.05 GB/s) is met or not by how busy this machine is: a floor of 0 keeps the
    # check judged (PASS needs a threshold) while the tests assert what the run computes.
    with Gateway() as gateway:
        done = run([str(TORCHRUN), "--standalone", f"--nproc_per_node={RANKS}", "-m", "selftest",
                    "--out", str(out), "--run-id", RUN_ID,
                    "--shared-data", str(out / "shared-data"),
                    "--nvme-cache", str(out / "nvme-cache"),
                    "--sizes", "1024,65536,4194304",
                    "--floor", "intra_node_busbw_gbps=0"],
                   SELFTEST_PUSHGATEWAY_URL=gateway.url, NODE_NAME=NODE)  # fmt: skip
    return done, out, list(gateway.received)
