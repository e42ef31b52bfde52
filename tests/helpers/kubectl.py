"""A stand-in kubectl on PATH, for the commands that apply what they wrote."""

from __future__ import annotations

from pathlib import Path


def fake_kubectl(folder: Path) -> Path:
    """A kubectl that records its arguments, one per line."""
    folder.mkdir()
    script = folder / "kubectl"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {folder / "argv"}\n')
    script.chmod(0o755)
    return folder / "argv"
