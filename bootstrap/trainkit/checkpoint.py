"""Checkpoints a resume can trust: `torch.distributed.checkpoint` (DCP) saved in the background,
each rank hashing the bytes it writes as it writes them, and a manifest of every file's sha256
that rank 0 writes once every rank's part is on disk. A checkpoint without its manifest never
finished; a file whose digest differs is torn or garbled, and the resume refuses it by name.

Why in the background: a synchronous save of SD 1.5's 10.3 GB state stops every rank for the
write, then the old manifest re-read and hashed it all on rank 0 while the others waited. Here
the state is copied to host memory (the only pause), then written by a thread while training
goes on; the digests come from the write itself, so nothing is read back."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from concurrent.futures import Future
from pathlib import Path

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.filesystem import FileSystem, FileSystemWriter
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from contract.env import TRAINKIT_CHECKPOINT_DIR

MANIFEST = "manifest.json"
# Where a job keeps its checkpoints: `python -m jobs submit` sets it to <output>/<job name> on
# shared storage, so only the same job resumes them.


class CheckpointError(Exception):
    """A checkpoint that cannot be resumed from; the message names it."""


def checkpoint_root(directory: Path | str | None = None) -> Path:
    """`directory`, else $TRAINKIT_CHECKPOINT_DIR; neither is an error that says so, because a
    default inside the container would be lost with the pod."""
    chosen = directory or os.environ.get(TRAINKIT_CHECKPOINT_DIR)
    if not chosen:
        raise CheckpointError(
            f"no checkpoint directory: set {TRAINKIT_CHECKPOINT_DIR} (python -m jobs submit sets "
            "it to a folder on shared storage) or pass directory="
        )
    return Path(chosen)


def complete_checkpoints(folder: Path) -> list[Path]:
    """Saved checkpoints, oldest first; one without its manifest never finished saving."""
    return sorted(p for p in folder.glob("step-*") if (p / MANIFEST).is_file())


def step_folder(root: Path, step: int) -> Path:
    return root / f"step-{step:08d}"


def file_digests(directory: Path) -> dict[str, str]:
    """Every file's sha256, read back: what a resume checks against the manifest."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.iterdir())
        if path.name != MANIFEST
    }


class _HashingStream:
    """A file DCP writes through; sha256 of every byte written, in order (DCP only appends)."""

    def __init__(self, raw, digest) -> None:
        self._raw, self._digest = raw, digest

    def write(self, data) -> int:
        self._digest.update(data)
        return self._raw.write(data)

    def __getattr__(self, name: str):  # tell, flush, fileno, close: the file's own
        return getattr(self._raw, name)


class _HashingFileSystem(FileSystem):
    """DCP's local file system, keeping a digest per file this rank writes. `.metadata` is
    written as a temporary file then renamed; the digest follows the rename."""

    def __init__(self) -> None:
        super().__init__()
        self.digests: dict[str, hashlib._Hash] = {}
        self._lock = threading.Lock()  # DCP may write with several threads

    def create_stream(self, path, mode):
        stream = super().create_stream(path, mode)
        if "w" not in mode:
            return stream
        digest = hashlib.sha256()
        with self._lock:
            self.digests[Path(path).name] = digest
        return _wrapped(stream, digest)

    def rename(self, path, new_path) -> None:
        super().rename(path, new_path)
        with self._lock:
            if Path(path).name in self.digests:
                self.digests[Path(new_path).name] = self.digests.pop(Path(path).name)

    def hexdigests(self) -> dict[str, str]:
        with self._lock:
            return {name: digest.hexdigest() for name, digest in self.digests.items()}


class _wrapped:
    def __init__(self, context, digest) -> None:
        self._context, self._digest = context, digest

    def __enter__(self):
        return _HashingStream(self._context.__enter__(), self._digest)

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)


def _hashing_writer(directory: Path) -> tuple[FileSystemWriter, _HashingFileSystem]:
    writer = FileSystemWriter(directory)
    writer.fs = fs = _HashingFileSystem()
    return writer, fs


class Checkpointer:
    """Background DCP saves under `root` (`step-NNNNNNNN` folders), the last `keep` kept.

    At most one save is in flight: `save` first finishes the previous one. DCP's background
    thread runs collectives of its own, so they go through a separate gloo group and never
    interleave with the training's (PyTorch's async-checkpointing recipe does the same)."""

    def __init__(self, root: Path, keep: int = 3) -> None:
        self.root, self.keep = root, keep
        self._group = dist.new_group(backend="gloo")
        self._pending: tuple[Path, Future, _HashingFileSystem] | None = None

    def save(self, step: int, model, optimizer, trainer: dict, modules: dict | None = None) -> Path:
        """Start saving; returns the folder. Collective: every rank calls it at the same step.
        `modules`: other modules saved beside the model (an EMA copy), by name."""
        self.finish()
        directory = step_folder(self.root, step)
        state = _state(model, optimizer, trainer, modules)
        writer, fs = _hashing_writer(directory)
        future = dcp.async_save(state, storage_writer=writer, process_group=self._group)
        self._pending = (directory, future, fs)
        return directory

    def has_pending(self) -> bool:
        """A save started and not yet finished (its manifest not written)."""
        return self._pending is not None

    def pending(self) -> bool:
        """This rank's save still writing (a local answer: `finish` is the collective one)."""
        return self._pending is not None and not self._pending[1].done()

    def finish(self) -> Path | None:
        """Wait for the save in flight, gather every rank's digests, write the manifest (rank 0)
        and prune old checkpoints. Collective; returns the completed folder, if any."""
        if self._pending is None:
            return None
        directory, future, fs = self._pending
        self._pending = None
        future.result()
        parts: list[dict[str, str] | None] = [None] * dist.get_world_size(self._group)
        dist.all_gather_object(parts, fs.hexdigests(), group=self._group)
        if dist.get_rank() == 0:
            manifest = {name: digest for part in parts for name, digest in part.items()}
            partial = directory / f"{MANIFEST}.partial"
            partial.write_text(json.dumps(dict(sorted(manifest.items())), indent=1))
            partial.rename(directory / MANIFEST)  # a manifest is there whole, or not at all
            for old in complete_checkpoints(self.root)[: -self.keep]:
                shutil.rmtree(old, ignore_errors=True)
        dist.barrier(self._group)
        return directory


def verify(directory: Path) -> str | None:
    """Why the checkpoint cannot be trusted, or None."""
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return f"checkpoint {directory}: no {MANIFEST} (the save never finished)"
    expected = json.loads(manifest.read_text())
    found = file_digests(directory)
    for name, digest in expected.items():
        if found.get(name) != digest:
            state = "missing" if name not in found else "sha256 mismatch"
            return f"checkpoint {directory} corrupted: {name} {state}"
    return None


def _state(model, optimizer, trainer: dict, modules: dict | None) -> dict:
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state, "trainer": dict(trainer)}
    if modules:
        state["modules"] = {name: module.state_dict() for name, module in modules.items()}
    return state


def load(directory: Path, model, optimizer, trainer: dict, modules: dict | None = None) -> dict:
    """The trainer state (`trainer` gives its keys), after the model and optimizer are restored.
    Rank 0 verifies the files once and every rank gets its verdict, so none enters DCP's load
    alone and no rank re-reads gigabytes another already checked."""
    verdict = [verify(directory) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(verdict, src=0)
    if verdict[0] is not None:
        raise CheckpointError(verdict[0])
    state = _state(model, optimizer, trainer, modules)
    try:
        dcp.load(state, checkpoint_id=directory)
    except Exception as error:  # DCP wraps a rank's failure; the reason is what matters here
        raise CheckpointError(f"checkpoint {directory} unreadable: {error}") from error
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    for name, module in (modules or {}).items():
        module.load_state_dict(state["modules"][name])
    return state["trainer"]


def restore(
    root: Path, model, optimizer, trainer: dict, modules: dict | None = None
) -> tuple[dict, Path | None]:
    """The trainer state of the newest complete checkpoint under `root` and its folder, or
    `trainer` unchanged and None when there is none yet."""
    saved = complete_checkpoints(root) if root.is_dir() else []
    if not saved:
        return dict(trainer), None
    return load(saved[-1], model, optimizer, trainer, modules), saved[-1]
