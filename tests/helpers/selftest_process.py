"""The self-test as a process of this checkout: the repository root, the venv's torchrun, and a
command run from the root with the image's path (bootstrap/ and contract/), as the image runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH
from tests.helpers.loopback import free_port

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN = Path(sys.executable).parent / "torchrun"


def run(cmd: list[str], **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": IMAGE_PYTHONPATH, **env}
    return subprocess.run(
        cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=HANG_S
    )


def agents(
    node_env: dict[str, dict[str, str]], args: list[str], out: Path
) -> tuple[list[int], str, dict]:
    """One torchrun agent a node of `node_env` (its own env over this one's, NODE_NAME set),
    each one process on this CPU, running `python -m selftest <args> --out <out>` together as
    the pods of a run do; (their exit codes, the first one's output, the report)."""
    port = free_port()
    processes = []
    for index, (node, extra) in enumerate(node_env.items()):
        command = [
            sys.executable, "-m", "torch.distributed.run", f"--nnodes={len(node_env)}",
            "--nproc-per-node=1", f"--node-rank={index}", "--master-addr=127.0.0.1",
            f"--master-port={port}", "-m", "selftest", *args, "--out", str(out),
        ]  # fmt: skip
        env = {
            **os.environ, **extra,
            "PYTHONPATH": IMAGE_PYTHONPATH, "NODE_NAME": node, "OMP_NUM_THREADS": "1",
        }  # fmt: skip
        # Set when this process runs under torchrun itself; each agent keeps its own store.
        env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        processes.append(
            subprocess.Popen(
                command, cwd=ROOT, env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
    outputs = [p.communicate(timeout=HANG_S)[0] for p in processes]
    report = json.loads((out / "report.json").read_text())
    return [p.returncode for p in processes], outputs[0], report
