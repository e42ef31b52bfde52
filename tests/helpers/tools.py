"""External tools the tests run, found on PATH or failed with how to install them (never skipped).
Imports nothing of the program or the image side, so tests of either can use it."""

from __future__ import annotations

import shutil

import pytest


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: `apt-get install prometheus` (Prometheus's promtool)")
    return path


def openssl() -> str:
    path = shutil.which("openssl")
    if path is None:
        pytest.fail("openssl is missing: `apt-get install openssl`")
    return path
