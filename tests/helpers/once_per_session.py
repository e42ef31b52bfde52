"""A costly result computed once per test session and shared by every xdist worker: the first
worker to ask computes it under a file lock in the session's own temporary folder (xdist gives
each session a fresh one above the workers'), the others wait and read what it wrote."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.helpers.plan_cache import DiskCache

T = TypeVar("T")


def once_per_session(
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    name: str,
    compute: Callable[[Path], T],
) -> T:
    """`compute(folder)` once per session; `folder` is where it writes what the tests read."""
    if worker_id == "master":
        # One process: nothing to share, and the base folder's parent outlives the session.
        return compute(tmp_path_factory.mktemp(name))
    cache = DiskCache(tmp_path_factory.getbasetemp().parent / "once-per-session", "session")
    # Inside the cache's own folder: DiskCache clears the folders beside it as stale.
    return cache.get(name, lambda: compute(_fresh(cache.here / name)))


def _fresh(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
