"""The image's PYTHONPATH in a checkout, for the image tests' subprocesses: bootstrap/ (the
self-test, trainkit, gpu_check) and the root, where contract/ lives (in the image both sit
under /opt: bootstrap/Dockerfile)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGE_PYTHONPATH = os.pathsep.join([str(ROOT / "bootstrap"), str(ROOT)])
