"""Pretrained weights staged once on shared storage, never downloaded: each model is a folder under
shared-data whose every file's sha256 is recorded in the stack config
(`recipes.weights.<name>.sha256`). A recipe verifies its models before it trains, and stops with
the folder, the file and what to do when one is missing, unrecorded or different.

`python -m recipes checksums <folder>` prints the YAML an admin pastes after staging."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 8 << 20


class WeightsError(Exception):
    """Staged weights that cannot be trusted; the message says which file and how to fix it."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def checksums(folder: Path) -> dict[str, str]:
    """Every file under `folder` by its POSIX path relative to it, with its sha256."""
    return {
        path.relative_to(folder).as_posix(): sha256_of(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def require(shared_data: Path, weights: dict, name: str) -> Path:
    """The verified folder of staged model `name` (`weights` is recipe_settings' entry)."""
    key = f"recipes.weights.{name}"
    if name not in weights:
        raise WeightsError(f"{key}: no such staged model in the recipe's settings")
    entry = weights[name]
    folder = shared_data / entry["path"]
    expected: dict[str, str] = entry["sha256"]
    if not folder.is_dir():
        raise WeightsError(
            f"{key}: {folder} does not exist; stage the model there (docs/training.md, "
            "'Training recipes'): weights are never downloaded at run time"
        )
    if not expected:
        raise WeightsError(
            f"{key}.sha256 is empty: record the staged files' checksums "
            f"(python -m recipes checksums {folder}) in the stack file"
        )
    # A file the loaders may read (a config, a tokenizer) but nobody recorded is not trusted either.
    unrecorded = sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.relative_to(folder).as_posix() not in expected
    )
    if unrecorded:
        raise WeightsError(
            f"{key}: {folder / unrecorded[0]} is not in {key}.sha256 "
            f"({len(unrecorded)} unrecorded file(s)); record it or remove it"
        )
    for relative, digest in sorted(expected.items()):
        path = folder / relative
        if not path.is_file():
            raise WeightsError(f"{key}: {path} is missing (listed in {key}.sha256)")
        found = sha256_of(path)
        if found != digest:
            raise WeightsError(
                f"{key}: {path} has sha256 {found}, expected {digest}: the file changed or was "
                "staged from another release; restage it or record the new checksum"
            )
    return folder


def checksums_yaml(folder: Path) -> str:
    """The `sha256:` mapping for a stack file, files sorted."""
    lines = ["sha256:"]
    lines += [f"  {relative}: {digest}" for relative, digest in checksums(folder).items()]
    return "\n".join(lines) + "\n"
