"""The self-test as a process of this checkout: the repository root, the venv's torchrun, and a
command run from the root with the image's path (bootstrap/ and contract/), as the image runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN = Path(sys.executable).parent / "torchrun"


def run(cmd: list[str], **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": IMAGE_PYTHONPATH, **env}
    return subprocess.run(
        cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=HANG_S
    )
