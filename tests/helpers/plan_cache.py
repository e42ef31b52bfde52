"""Each stack planned once for every test process: the plan is pickled on disk under a key made
of everything planning reads, so the xdist workers of a session, and later sessions with the same
sources, read it instead of running the program again (about 3 s of CPU a stack, per process).

The key covers the program's packages and the plan's engine (what `plan_stack` imports and the
files they open: an open() audit hook around `plan_stack` lists nothing else of the repository),
the project and stack files, the installed versions of the distributions requirements.txt pins
(the program's runtime), the interpreter's version and the date. One process plans a stack while
the others wait on its lock (fcntl.flock: the kernel releases it when the holder dies), then read
what it wrote."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import pickle
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# What `plan_stack` reads: its own packages and the program's, and the files Pulumi reads.
SOURCE_FOLDERS = ("components", "contract", "infra", "model", "plan", "policy", "stacks")
SOURCE_FILES = ("Pulumi.yaml", "requirements.txt")
# git ignores these; a byte-compiled file says nothing its source does not.
_SKIPPED = {"__pycache__"}


def source_files(root: Path) -> list[Path]:
    found = [root / name for name in SOURCE_FILES if (root / name).is_file()]
    for folder in SOURCE_FOLDERS:
        for dirpath, dirnames, filenames in os.walk(root / folder, followlinks=True):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED)
            found += [Path(dirpath) / f for f in filenames if not f.endswith(".pyc")]
    return sorted(found)


def pinned_versions(root: Path) -> dict[str, str]:
    """The installed version of each distribution requirements.txt pins: a plan made with
    another pulumi-aws (its resource defaults, its SDK's wire format) is another plan."""
    names = []
    for line in (root / "requirements.txt").read_text().splitlines():
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line.split("#", 1)[0])
        if match:
            names.append(match.group(1))
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "(not installed)"
    return versions


def _add_files(digest, root: Path, files: list[Path]) -> None:
    for path in files:
        data = path.read_bytes()
        digest.update(f"\0{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)


def plan_key(root: Path, versions: dict[str, str] | None = None, today: date | None = None) -> str:
    """A digest of every source file's path and bytes, the pinned distributions' installed
    versions, the interpreter's, and the date: the program reads `date.today()` (which support
    window a Kubernetes minor is in, infra/__main__.py; the cost's items)."""
    digest = hashlib.sha256()
    digest.update(f"{sys.version}\0{(today or date.today()).isoformat()}".encode())
    for name, version in sorted((versions or pinned_versions(root)).items()):
        digest.update(f"\0{name}=={version}".encode())
    _add_files(digest, root, source_files(root))
    return digest.hexdigest()[:32]


def tree_key(folder: Path) -> str:
    """A digest of every file's path and bytes under `folder` (the chart archives a rendering
    reads)."""
    digest = hashlib.sha256()
    _add_files(digest, folder, sorted(p for p in folder.rglob("*") if p.is_file()))
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class DiskCache:
    """Values computed once per key and name, pickled under `folder/<key>/<name>.pickle`."""

    def __init__(self, folder: Path, key: str):
        self.folder, self.key = folder, key
        self.here = folder / key

    def path(self, name: str) -> Path:
        return self.here / f"{name}.pickle"

    def get(self, name: str, compute: Callable[[], T]) -> T:
        if not self.here.is_dir():
            self._start()
        path = self.path(name)
        with _locked(self.here / f"{name}.lock"):
            if path.is_file():
                return pickle.loads(path.read_bytes())
            value = compute()
            partial = path.with_name(f"{path.name}.{os.getpid()}")
            partial.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(partial, path)
            return value

    def _start(self) -> None:
        """This key's folder; folders of other keys (older sources) are removed."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with _locked(self.folder / "folders.lock"):
            for old in self.folder.iterdir():
                if old.is_dir() and old.name != self.key:
                    shutil.rmtree(old, ignore_errors=True)
            self.here.mkdir(exist_ok=True)
