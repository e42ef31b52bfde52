"""prepare: image-text pairs as img2dataset downloads them → resolution² WebDataset shards,
filtered by LAION aesthetic score and CLIP image-text similarity, with a manifest of what was
kept and why the rest was dropped.

Input: img2dataset's `output_format="files"` layout (rom1504/img2dataset README, "Usage" and
"API"): one subfolder per download shard (`00000/`, `00001/`, ...), each holding `<key>.jpg`
(or .png/.webp with `encode_format`), `<key>.txt` (the caption) and `<key>.json` (the metadata,
with the parquet's extra columns, e.g. LAION-Aesthetics' `aesthetic`, copied in by
`save_additional_columns`). The `<shard>.parquet` and `<shard>_stats.json` files img2dataset
writes beside the folders are not samples and are skipped.

Output: `<output>/shard-<folder>-<n>.tar` (WebDataset: a plain tar, each sample's
`<key>.jpg|png`, `<key>.txt` and `<key>.json` adjacent) and `<output>/manifest.json`. Each
torchrun rank takes every world-th source folder not yet done; a folder's shards are named after
it, so the output is the same whatever the world size, and a record per finished folder lets a
run stopped by SIGTERM resume (recipes.prepare_progress). Rank 0 writes the manifest once every
folder is done. After each folder rank 0 logs one JSON line, and the metrics server (if any)
gets the folders done as its step."""

from __future__ import annotations

import io
import json
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing import get_context
from multiprocessing.pool import Pool
from pathlib import Path

import torch
import torch.distributed as dist
from PIL import Image
from trainkit import MetricsServer, peak_memory, sigterm_flag

from recipes.latents import LATENTS, Encoder
from recipes.prepare_progress import (
    MANIFEST,
    ShardWriter,
    broadcast,
    fingerprint,
    gather,
    keep_or_wipe,
    wipe_records,
    write_json,
    write_record,
)
from recipes.prepare_screen import REASONS, Candidate, raw_samples, screen

# (images, captions) -> one CLIP cosine similarity per pair.
Scorer = Callable[[Sequence[Image.Image], Sequence[str]], list[float]]

# img2dataset's default encode_quality; re-encoding at Pillow's default 75 would add artefacts.
JPEG_QUALITY = 95


class PrepareError(Exception):
    """Input or settings that cannot produce a dataset; the message says what to change."""


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


def encode(
    candidate: Candidate, similarity: float, latents: bytes | None = None
) -> list[tuple[str, bytes]]:
    """The sample's tar members, image first, as WebDataset groups them by key; its VAE
    posteriors (recipes.latents) last when prepare computes them."""
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
        *([(f"{candidate.key}.{LATENTS}", latents)] if latents is not None else []),
    ]


def _score_and_write(batch: list[Candidate], work: Work, counts: dict, writer: ShardWriter) -> None:
    if not batch:
        return
    scores = work.scorer([c.image for c in batch], [c.caption for c in batch])
    # Below the threshold goes; equal stays (recipes.prepare.min_clip_similarity).
    kept = [
        (c, s)
        for c, s in zip(batch, scores, strict=True)
        if s >= work.settings["min_clip_similarity"]
    ]
    counts["low_clip"] += len(batch) - len(kept)
    counts["kept"] += len(kept)
    latents = work.encoder([c.image for c, _ in kept]) if work.encoder and kept else None
    for index, (candidate, similarity) in enumerate(kept):
        writer.add(encode(candidate, similarity, latents[index] if latents else None))
    batch.clear()


def _screened(folder: Path, settings: dict, pool: Pool | None) -> Iterator[Candidate | str]:
    """screen() of every pair in `folder`, in order: by the CPU pool's processes, which read,
    decode and resize ahead while this process waits on the GPU, or here without one."""
    if pool is None:
        return (screen(raw, settings) for raw in raw_samples(folder))
    return pool.imap(partial(screen, settings=settings), raw_samples(folder), chunksize=4)


def filter_folder(
    folder: Path, work: Work, writer: ShardWriter, stop: list[int]
) -> dict[str, int] | None:
    """Screen, score and write every pair in `folder`, its last shard closed; the counts seen,
    kept and per reason. None if `stop` fills first (SIGTERM): the folder's shards are deleted,
    since only a whole folder counts as done."""
    settings = work.settings
    counts = dict.fromkeys(("seen", "kept", *REASONS), 0)
    batch: list[Candidate] = []
    for screened in _screened(folder, settings, work.pool):
        if stop:
            writer.abandon()
            return None
        counts["seen"] += 1
        if isinstance(screened, str):
            counts[screened] += 1
            continue
        batch.append(screened)
        if len(batch) == settings["clip_batch"]:
            _score_and_write(batch, work, counts, writer)
    _score_and_write(batch, work, counts, writer)
    writer.close()
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


def _device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def _clip_scorer(settings: dict, shared_data: Path) -> Scorer:
    # Imported here so that tests with their own scorer need neither transformers nor weights.
    from recipes import clip_score, weights

    folder = weights.require(shared_data, settings["weights"], "clip")
    return clip_score.load(folder, _device())


def _encoder(settings: dict, shared_data: Path) -> Encoder:
    from recipes import weights

    return Encoder(weights.require(shared_data, settings["weights"], "stable-diffusion"), _device())


def cpu_pool(workers: int | None) -> Pool | None:
    """`workers` processes (None: the node's cores shared among its ranks; 0: none)."""
    if workers is None:
        workers = max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    return get_context("fork").Pool(workers) if workers else None


@dataclass
class Work:
    """What one run does on this rank: the folders without a record, and how to report them."""

    todo: list[Path]
    settings: dict
    output: Path
    scorer: Scorer
    done_before: int
    interrupt_after: int | None
    metrics: MetricsServer | None
    # The VAE encoder when prepare writes latents; the CPU processes that screen.
    encoder: Encoder | None = None
    pool: Pool | None = None


def process(work: Work, rank: int, world: int, stop: list[int]) -> tuple[list[dict], bool]:
    """Filter this rank's share of `work.todo` (every world-th folder), a record per finished
    folder; the records every rank wrote and whether SIGTERM stopped the job. Ranks exchange
    their outcome after each round of folders, a collective every rank joins, so a stop any
    rank got stops all of them at the same boundary (the MAX of the flags, as recipes.loop)."""
    digest, device = fingerprint(work.settings), _device()
    records: list[dict] = []
    finished, seen, begun = 0, 0, time.perf_counter()
    for first in range(0, len(work.todo), world):
        record = None
        if first + rank < len(work.todo) and not stop:
            folder = work.todo[first + rank]
            writer = ShardWriter(work.output, folder.name, work.settings["samples_per_shard"])
            counts = filter_folder(folder, work, writer, stop)
            if counts is not None:
                record = write_record(work.output, folder.name, digest, counts, writer.shards)
                finished += 1
                if finished == work.interrupt_after:  # as an eviction would (smoke, tests)
                    os.kill(os.getpid(), signal.SIGTERM)
        outcomes = gather((record, bool(stop), peak_memory(device)))
        new = [outcome[0] for outcome in outcomes if outcome[0] is not None]
        records += new
        seen += sum(r["counts"]["seen"] for r in new)
        figures = {
            "samples_per_second": seen / (time.perf_counter() - begun),
            "gpu_memory_bytes": max(outcome[2] for outcome in outcomes),
        }
        for done in new if rank == 0 else []:
            counts = done["counts"]
            line = {"folder": done["folder"], "seen": counts["seen"], "kept": counts["kept"]}
            print(json.dumps({"recipe": "prepare", **line, **figures}), flush=True)
        if work.metrics is not None:
            work.metrics.update(step=work.done_before + len(records), **figures)
        if any(outcome[1] for outcome in outcomes):
            return records, True
    return records, False


def run(
    settings: dict,
    shared_data: Path,
    out: Path,
    scorer: Scorer | None = None,
    interrupt_after: int | None = None,
    metrics: MetricsServer | None = None,
) -> dict:
    """Prepare the dataset `settings` (recipe_settings(cfg, "prepare")) describe, resuming from
    the folders an earlier run with the same settings finished; the report. A run after a
    finished one with the same settings redoes nothing: records say which folders are done,
    not what they held, so a source folder downloaded again needs other settings or its
    record deleted. `scorer` replaces the staged CLIP model (tests control similarities with
    it); `interrupt_after`: SIGTERM ourselves after this many folders done on this rank, as an
    eviction would; `metrics`: the gauges to update after each round of folders."""
    started = time.perf_counter()
    distributed = dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    source = shared_data / settings["source"]
    output = shared_data / settings["output"]
    folders = source_folders(source)
    names = [folder.name for folder in folders]
    # Rank 0 alone deletes; the broadcast also keeps the others from writing before it is done.
    kept = keep_or_wipe(output, names, fingerprint(settings)) if rank == 0 else None
    kept = broadcast(kept)
    recorded = {record["folder"] for record in kept}
    # Forked before CLIP or the VAE touch the GPU: a child of a CUDA process must not use CUDA,
    # and these never do.
    pool = cpu_pool(settings["cpu_workers"])
    try:
        work = Work(
            todo=[folder for folder in folders if folder.name not in recorded],
            settings=settings,
            output=output,
            scorer=scorer or _clip_scorer(settings, shared_data),
            done_before=len(kept),
            interrupt_after=interrupt_after,
            metrics=metrics,
            encoder=_encoder(settings, shared_data) if settings["latents"] else None,
            pool=pool,
        )
        with sigterm_flag() as stop:
            new, interrupted = process(work, rank, world, stop)
    finally:
        if pool is not None:
            pool.terminate()
    records = sorted(kept + new, key=lambda record: record["folder"])
    totals = {name: sum(r["counts"][name] for r in records) for name in ("seen", "kept", *REASONS)}
    shards = [shard for record in records for shard in record["shards"]]
    if not interrupted and totals["kept"] == 0:
        if rank == 0:
            wipe_records(output)
        # Every rank sees the same totals and raises; no folder has written a shard.
        raise PrepareError(nothing_kept_message(totals, settings, source))
    dropped = {reason: totals[reason] for reason in REASONS}
    if rank == 0 and not interrupted:
        # The same records make the same manifest, however many runs wrote them.
        write_json(
            output / MANIFEST,
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
            },
        )
    duration = time.perf_counter() - started
    report = {
        "recipe": "prepare",
        "steps": totals["seen"],
        "loss_first": None,
        "loss_last": None,
        # This run's pace: pairs it screened, not those an earlier run did.
        "samples_per_s": sum(r["counts"]["seen"] for r in new) / duration,
        "resumed": bool(kept),
        "interrupted": interrupted,
        "duration_s": duration,
        "kept": totals["kept"],
        "dropped": dropped,
        "shards": len(shards),
        "folders": len(folders),
        "folders_done": len(records),
    }
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "report.json", report)
    return report
