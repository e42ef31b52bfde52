"""prepare's checkpoint: one record per finished source folder, so that a job stopped by SIGTERM
(an eviction, a node drain) resumes with the folders it has not finished, and its output ends
up exactly as an uninterrupted run's.

prepare has no tensors to save: a folder's outcome is its shards (named after the folder, so
no other rank or run writes them) and its counts. The record `<output>/progress/<folder>.json`
is written last, atomically, once the folder's shards are closed: a folder with a record is
done, one without is redone from its first pair. Each record carries the fingerprint of the
settings that decide the output; records written under other settings are not reused.

Shards are standard-library tars (trainkit.shards.add_member, as the self-test writes its own),
written as `.partial` and renamed once complete."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import torch.distributed as dist
from trainkit.shards import add_member

PROGRESS = "progress"
MANIFEST = "manifest.json"
SHARD_GLOB = "shard-*.tar*"


def fingerprint(settings: dict) -> str:
    """sha256 of what decides the shards' bytes and the counts: where the pairs come from, the
    filters, the crop, the shard size, the CLIP model that scores, the latents and their VAE.
    clip_batch and cpu_workers are left out: they change how pairs are batched and who
    screens them, not which are kept."""
    decisive = {
        "source": settings["source"],
        "resolution": settings["resolution"],
        "aesthetic_key": settings["aesthetic_key"],
        "min_aesthetic": settings["min_aesthetic"],
        "min_clip_similarity": settings["min_clip_similarity"],
        "samples_per_shard": settings["samples_per_shard"],
        "clip": settings["weights"].get("clip"),
        # Latents, and the VAE that encodes them, change the shards' members.
        "latents": settings["latents"],
        "stable-diffusion": settings["weights"].get("stable-diffusion"),
    }
    return hashlib.sha256(json.dumps(decisive, sort_keys=True).encode()).hexdigest()


def shard_name(folder: str, index: int) -> str:
    """The folder's `index`-th shard: unique whatever the world size or the run that wrote it."""
    return f"shard-{folder}-{index:05d}.tar"


class ShardWriter:
    """One source folder's shards. A tar is opened only when its first sample is kept, so a
    folder that keeps nothing creates no file, and appears under its final name only once
    complete."""

    def __init__(self, directory: Path, folder: str, samples_per_shard: int) -> None:
        self.directory = directory
        self.folder = folder
        self.samples_per_shard = samples_per_shard
        self.shards: list[dict] = []
        self._tar: tarfile.TarFile | None = None
        self._count = 0

    def _path(self) -> Path:
        return self.directory / shard_name(self.folder, len(self.shards))

    def _partial(self) -> Path:
        return self._path().with_name(self._path().name + ".partial")

    def add(self, members: list[tuple[str, bytes]]) -> None:
        if self._tar is None:
            # Held open across add() calls, closed in close(): a context manager cannot span them.
            self._tar = tarfile.open(self._partial(), "w")  # noqa: SIM115
        for name, payload in members:
            add_member(self._tar, name, payload)
        self._count += 1
        if self._count == self.samples_per_shard:
            self.close()

    def close(self) -> None:
        if self._tar is None:
            return
        self._tar.close()
        self._partial().rename(self._path())
        self.shards.append({"name": self._path().name, "samples": self._count})
        self._tar, self._count = None, 0

    def abandon(self) -> None:
        """Delete what the folder wrote so far: without its record it is redone from the start."""
        if self._tar is not None:
            self._tar.close()
            self._partial().unlink()
            self._tar, self._count = None, 0
        for shard in self.shards:
            (self.directory / shard["name"]).unlink()
        self.shards = []


def write_json(path: Path, value: dict) -> None:
    """`value` at `path`, complete or not at all: written beside it, then renamed over it."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    partial.rename(path)


def write_record(output: Path, folder: str, digest: str, counts: dict, shards: list) -> dict:
    record = {"folder": folder, "fingerprint": digest, "counts": counts, "shards": shards}
    (output / PROGRESS).mkdir(exist_ok=True)
    write_json(output / PROGRESS / f"{folder}.json", record)
    return record


def _read_records(output: Path) -> list[dict] | None:
    """Every record, or None if one cannot be read (then none is trusted)."""
    records = []
    for path in sorted((output / PROGRESS).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        if not isinstance(record, dict) or record.get("folder") != path.stem:
            return None
        records.append(record)
    return records


def _shards_present(output: Path, record: dict) -> bool:
    return all((output / shard["name"]).is_file() for shard in record.get("shards", []))


def keep_or_wipe(output: Path, folders: list[str], digest: str) -> list[dict]:
    """Rank 0, before any rank writes: the records to keep, sorted by folder. They are kept when
    every one was written under `digest` for a folder still in the source; then only debris goes
    (`.partial` files, shards no kept record lists, a record whose shards are not all there).
    Otherwise (a fresh output, changed settings) shards, records and manifest all go. The
    manifest goes either way, first, so that a half-written folder never looks complete."""
    output.mkdir(parents=True, exist_ok=True)
    (output / MANIFEST).unlink(missing_ok=True)
    records = _read_records(output)
    reusable = (
        bool(records)
        and all(r.get("fingerprint") == digest for r in records)
        and all(r["folder"] in folders for r in records)
    )
    kept = [r for r in records if _shards_present(output, r)] if reusable else []
    kept_names = {r["folder"] for r in kept}
    listed = {shard["name"] for r in kept for shard in r["shards"]}
    for stale in output.glob(SHARD_GLOB):
        if stale.name not in listed:
            stale.unlink()
    for stale in [*output.glob("*.partial"), *(output / PROGRESS).glob("*")]:
        if stale.suffix == ".partial" or stale.stem not in kept_names:
            stale.unlink()
    return kept


def wipe_records(output: Path) -> None:
    """Records of a run that kept nothing: a refused run leaves no progress behind."""
    shutil.rmtree(output / PROGRESS, ignore_errors=True)


def gather(value: object) -> list:
    """Every rank's `value`, in rank order (just this one's when not distributed)."""
    if not dist.is_initialized():
        return [value]
    values: list = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def broadcast(value: object) -> object:
    """Rank 0's `value` on every rank."""
    if not dist.is_initialized():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]
