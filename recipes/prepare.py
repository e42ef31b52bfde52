"""prepare: image-text pairs as img2dataset downloads them → resolution² WebDataset shards,
filtered by LAION aesthetic score and CLIP image-text similarity, with a manifest of what was
kept and why the rest was dropped.

Input: img2dataset's `output_format="files"` layout (rom1504/img2dataset README, "Usage" and
"API"): one subfolder per download shard (`00000/`, `00001/`, ...), each holding `<key>.jpg`
(or .png/.webp with `encode_format`), `<key>.txt` (the caption) and `<key>.json` (the metadata,
with the parquet's extra columns, e.g. LAION-Aesthetics' `aesthetic`, copied in by
`save_additional_columns`). The `<shard>.parquet` and `<shard>_stats.json` files img2dataset
writes beside the folders are not samples and are skipped.

Output: `<output>/shard-r<rank>-<n>.tar` (WebDataset: a plain tar, each sample's `<key>.jpg|png`,
`<key>.txt` and `<key>.json` adjacent) and `<output>/manifest.json`. Each torchrun rank takes
every world-th source folder and writes its own shards; rank 0 writes the manifest once every
rank is done. The tar writing follows bootstrap/selftest/data.py (standard-library tarfile, a
`.partial` renamed once complete); it is repeated rather than shared because the self-test
image must not depend on the recipes package."""

from __future__ import annotations

import io
import json
import math
import os
import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from PIL import Image

from recipes.clip_score import resize_crop

# (images, captions) -> one CLIP cosine similarity per pair.
Scorer = Callable[[Sequence[Image.Image], Sequence[str]], list[float]]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
# img2dataset's default encode_quality; re-encoding at Pillow's default 75 would add artefacts.
JPEG_QUALITY = 95
SHARD_GLOB = "shard-*.tar*"

# Why a pair is dropped, in the order the checks run: the cheap ones (files present, the
# aesthetic score in the metadata) before decoding the image, CLIP last and only on survivors.
REASONS = (
    "missing_image",
    "missing_caption",
    "missing_aesthetic",
    "low_aesthetic",
    "unreadable_image",
    "low_clip",
)


class PrepareError(Exception):
    """Input or settings that cannot produce a dataset; the message says what to change."""


@dataclass(frozen=True)
class RawSample:
    """One key's files in a source folder; any may be absent."""

    key: str
    image: Path | None
    caption: Path | None
    metadata: Path | None


@dataclass(frozen=True)
class Candidate:
    """A pair that passed every check before CLIP: cropped image, caption, metadata."""

    key: str
    image: Image.Image
    caption: str
    metadata: dict
    # "jpg" for JPEG sources, else "png": lossless sources stay lossless.
    extension: str


def source_folders(source: Path) -> list[Path]:
    """img2dataset's shard folders under `source`, sorted, so every rank splits the same list."""
    if not source.is_dir():
        raise PrepareError(
            f"recipes.prepare.source: {source} does not exist; point it at img2dataset's "
            "output folder (relative to shared-data), run with output_format=files"
        )
    folders = sorted(path for path in source.iterdir() if path.is_dir())
    # Stops at the first folder with a sample: normally the first one listed.
    if not any(next(raw_samples(folder), None) for folder in folders):
        raise PrepareError(
            f"recipes.prepare.source: {source} holds no shard folders with samples; "
            "img2dataset's output_format=files writes <shard>/<key>.jpg|.txt|.json"
        )
    return folders


def raw_samples(folder: Path) -> Iterator[RawSample]:
    """Every key in a shard folder, in key order, with whichever of its files exist."""
    files: dict[str, dict[str, Path]] = {}
    for path in folder.iterdir():
        suffix = path.suffix.lower()
        if path.is_file() and suffix in (*IMAGE_SUFFIXES, ".txt", ".json"):
            kind = "image" if suffix in IMAGE_SUFFIXES else suffix[1:]
            files.setdefault(path.stem, {})[kind] = path
    for key in sorted(files):
        found = files[key]
        yield RawSample(key, found.get("image"), found.get("txt"), found.get("json"))


def aesthetic_of(metadata: dict, key: str) -> float | None:
    """The score under `key`, or None when absent, null or not a finite number."""
    value = metadata.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def read_metadata(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def load_image(path: Path, resolution: int) -> Image.Image | None:
    """The resized, centre-cropped RGB image, or None if Pillow cannot decode the file."""
    try:
        with Image.open(path) as image:
            image.load()
            return resize_crop(image, resolution)
    # UnidentifiedImageError and truncated files are OSErrors; corrupt headers can raise
    # SyntaxError or ValueError; DecompressionBombError guards against pixel bombs.
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        return None


def screen(raw: RawSample, settings: dict) -> Candidate | str:
    """The candidate for CLIP scoring, or the reason (one of REASONS) the pair is dropped."""
    if raw.image is None:
        return "missing_image"
    caption = ""
    if raw.caption is not None:
        caption = raw.caption.read_text(encoding="utf-8", errors="replace").strip()
    if not caption:
        return "missing_caption"
    metadata = read_metadata(raw.metadata)
    score = aesthetic_of(metadata, settings["aesthetic_key"])
    if score is None:
        return "missing_aesthetic"
    # LAION-Aesthetics V2 "5+" keeps scores above 5: a score of exactly the threshold goes.
    if score <= settings["min_aesthetic"]:
        return "low_aesthetic"
    image = load_image(raw.image, settings["resolution"])
    if image is None:
        return "unreadable_image"
    extension = "jpg" if raw.image.suffix.lower() in (".jpg", ".jpeg") else "png"
    return Candidate(raw.key, image, caption, metadata, extension)


def encode(candidate: Candidate, similarity: float) -> list[tuple[str, bytes]]:
    """The sample's tar members, image first, as WebDataset groups them by key."""
    image = io.BytesIO()
    if candidate.extension == "jpg":
        candidate.image.save(image, format="JPEG", quality=JPEG_QUALITY)
    else:
        candidate.image.save(image, format="PNG")
    metadata = {**candidate.metadata, "clip_similarity": similarity}
    return [
        (f"{candidate.key}.{candidate.extension}", image.getvalue()),
        (f"{candidate.key}.txt", candidate.caption.encode("utf-8")),
        (f"{candidate.key}.json", json.dumps(metadata, sort_keys=True).encode("utf-8")),
    ]


class ShardWriter:
    """This rank's shards. A tar is opened only when its first sample is kept, so a rank that
    keeps nothing creates no file, and appears under its final name only once complete."""

    def __init__(self, directory: Path, rank: int, samples_per_shard: int) -> None:
        self.directory = directory
        self.rank = rank
        self.samples_per_shard = samples_per_shard
        self.shards: list[dict] = []
        self._tar: tarfile.TarFile | None = None
        self._count = 0

    def _path(self) -> Path:
        return self.directory / f"shard-r{self.rank:03d}-{len(self.shards):05d}.tar"

    def add(self, members: list[tuple[str, bytes]]) -> None:
        if self._tar is None:
            # Held open across add() calls, closed in close(): a context manager cannot span them.
            self._tar = tarfile.open(self._path().with_suffix(".tar.partial"), "w")  # noqa: SIM115
        for name, payload in members:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            self._tar.addfile(info, io.BytesIO(payload))
        self._count += 1
        if self._count == self.samples_per_shard:
            self.close()

    def close(self) -> None:
        if self._tar is None:
            return
        self._tar.close()
        path = self._path()
        path.with_suffix(".tar.partial").rename(path)
        self.shards.append({"name": path.name, "samples": self._count})
        self._tar, self._count = None, 0


def _gather(value: object) -> list:
    """Every rank's `value`, in rank order (just this one's when not distributed)."""
    if not dist.is_initialized():
        return [value]
    values: list = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def _score_and_write(
    batch: list[Candidate], scorer: Scorer, settings: dict, counts: dict, writer: ShardWriter
) -> None:
    if not batch:
        return
    scores = scorer([c.image for c in batch], [c.caption for c in batch])
    for candidate, similarity in zip(batch, scores, strict=True):
        # Below the threshold goes; equal stays (recipes.prepare.min_clip_similarity).
        if similarity < settings["min_clip_similarity"]:
            counts["low_clip"] += 1
        else:
            counts["kept"] += 1
            writer.add(encode(candidate, similarity))
    batch.clear()


def filter_folders(
    folders: Sequence[Path], settings: dict, scorer: Scorer, writer: ShardWriter
) -> dict[str, int]:
    """Screen, score and write every pair in `folders`; the counts seen, kept and per reason.
    The last, partly filled shard stays open: the caller closes it once the run's total says
    something was kept."""
    counts = dict.fromkeys(("seen", "kept", *REASONS), 0)
    batch: list[Candidate] = []
    for folder in folders:
        for raw in raw_samples(folder):
            counts["seen"] += 1
            screened = screen(raw, settings)
            if isinstance(screened, str):
                counts[screened] += 1
                continue
            batch.append(screened)
            if len(batch) == settings["clip_batch"]:
                _score_and_write(batch, scorer, settings, counts, writer)
    _score_and_write(batch, scorer, settings, counts, writer)
    return counts


# What to change when a reason dropped pairs and nothing was kept.
REMEDIES = {
    "missing_image": "the source has captions or metadata without images (failed downloads)",
    "missing_caption": "the source has no captions: run img2dataset with caption_col set",
    "missing_aesthetic": "set recipes.prepare.aesthetic_key to the metadata key holding the "
    "score (now {aesthetic_key!r}) or run img2dataset with save_additional_columns",
    "low_aesthetic": "lower recipes.prepare.min_aesthetic (now {min_aesthetic})",
    "unreadable_image": "Pillow could not decode the images: check the download",
    "low_clip": "lower recipes.prepare.min_clip_similarity (now {min_clip_similarity})",
}


def nothing_kept_message(totals: dict[str, int], settings: dict, source: Path) -> str:
    dropped = [reason for reason in REASONS if totals[reason]]
    lines = [
        f"recipes.prepare: the filters kept none of the {totals['seen']} pairs in {source}; "
        "no shards written. Dropped: " + ", ".join(f"{r} {totals[r]}" for r in dropped) + "."
    ]
    lines += [f"  {reason}: " + REMEDIES[reason].format(**settings) for reason in dropped]
    return "\n".join(lines)


def _write_json(path: Path, value: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    partial.rename(path)


def _device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def _clip_scorer(settings: dict, shared_data: Path) -> Scorer:
    # Imported here so that tests with their own scorer need neither transformers nor weights.
    from recipes import clip_score, weights

    folder = weights.require(shared_data, settings["weights"], "clip")
    return clip_score.load(folder, _device())


def run(settings: dict, shared_data: Path, out: Path, scorer: Scorer | None = None) -> dict:
    """Prepare the dataset `settings` (recipe_settings(cfg, "prepare")) describe; the report.
    `scorer` replaces the staged CLIP model (tests control similarities with it)."""
    started = time.perf_counter()
    distributed = dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    source = shared_data / settings["source"]
    output = shared_data / settings["output"]
    folders = source_folders(source)
    if rank == 0:
        # The output folder is prepare's own: a rerun replaces it, and the manifest goes first
        # so that a half-written folder never looks complete.
        output.mkdir(parents=True, exist_ok=True)
        (output / "manifest.json").unlink(missing_ok=True)
        for stale in output.glob(SHARD_GLOB):
            stale.unlink()
    if distributed:
        dist.barrier()
    scorer = scorer or _clip_scorer(settings, shared_data)
    writer = ShardWriter(output, rank, settings["samples_per_shard"])
    counts = filter_folders(folders[rank::world], settings, scorer, writer)
    per_rank = _gather(counts)
    totals = {name: sum(c[name] for c in per_rank) for name in counts}
    if totals["kept"] == 0:
        # Every rank sees the same totals and raises; none has opened a shard.
        raise PrepareError(nothing_kept_message(totals, settings, source))
    writer.close()
    shards = [shard for rank_shards in _gather(writer.shards) for shard in rank_shards]
    duration = time.perf_counter() - started
    dropped = {reason: totals[reason] for reason in REASONS}
    if rank == 0:
        _write_json(
            output / "manifest.json",
            {
                "source": settings["source"],
                "seen": totals["seen"],
                "kept": totals["kept"],
                "dropped": dropped,
                "shards": shards,
                "resolution": settings["resolution"],
                "thresholds": {
                    "aesthetic_key": settings["aesthetic_key"],
                    "min_aesthetic": settings["min_aesthetic"],
                    "min_clip_similarity": settings["min_clip_similarity"],
                },
                "world_size": world,
            },
        )
    report = {
        "recipe": "prepare",
        "steps": totals["seen"],
        "loss_first": None,
        "loss_last": None,
        "samples_per_s": totals["seen"] / duration,
        "resumed": False,
        "duration_s": duration,
        "kept": totals["kept"],
        "dropped": dropped,
        "shards": len(shards),
    }
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        _write_json(out / "report.json", report)
    return report
