"""The data pipeline: WebDataset shards of synthetic 512×512 images on shared storage, streamed
back through decode (Pillow) and augmentation (random crop, horizontal flip, in torch).

The shard format and the image pieces come from trainkit.shards, shared with the recipes."""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.distributed as dist
from trainkit.shards import add_member, crop_flip, decode_image, synthetic_image

from selftest.context import SelfTestContext
from selftest.result import CheckResult, Floor

IMAGE_SIZE = 512
SHARDS = 4
SAMPLES_PER_SHARD = 8
# The pipeline check's crop: the size a real diffusion run would train on.
PIPELINE_CROP = 256


def shard_dir(ctx: SelfTestContext) -> Path:
    return ctx.shared_data / "selftest" / ctx.run_id / "shards"


def write_shards(directory: Path, seed: int, shards: int = SHARDS) -> list[Path]:
    """`shards` tars of SAMPLES_PER_SHARD samples each; a tar appears only once complete."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for shard in range(shards):
        path = directory / f"shard-{shard:05d}.tar"
        partial = path.with_suffix(".tar.partial")
        with tarfile.open(partial, "w") as tar:
            for offset in range(SAMPLES_PER_SHARD):
                index = shard * SAMPLES_PER_SHARD + offset
                key = f"{index:08d}"
                png = io.BytesIO()
                synthetic_image(index, seed, IMAGE_SIZE).save(png, format="PNG")
                meta = json.dumps({"key": key, "index": index, "seed": seed}).encode()
                for name, payload in ((f"{key}.png", png.getvalue()), (f"{key}.json", meta)):
                    add_member(tar, name, payload)
        partial.rename(path)
        paths.append(path)
    return paths


def iter_samples(paths: list[Path]) -> Iterator[tuple[dict, torch.Tensor]]:
    """(metadata, uint8 CHW image) per sample, streamed member by member from each tar."""
    for path in paths:
        with tarfile.open(path, "r|") as tar:  # "r|": a stream, as from an object store
            sample: dict[str, bytes] = {}
            for member in tar:
                _, ext = member.name.split(".", 1)
                sample[ext] = tar.extractfile(member).read()
                if {"png", "json"} <= sample.keys():
                    yield json.loads(sample["json"]), decode_image(sample["png"])
                    sample = {}


def augment(image: torch.Tensor, crop: int, generator: torch.Generator) -> torch.Tensor:
    """crop_flip's window scaled to [-1, 1]."""
    return crop_flip(image, crop, generator).float() / 127.5 - 1.0


def collective_device(ctx: SelfTestContext) -> torch.device:
    """Where a collective's tensors must live: NCCL only reduces CUDA tensors, gloo CPU ones."""
    return torch.device("cuda", ctx.local_rank) if ctx.device == "cuda" else torch.device("cpu")


def rank_shards(paths: list[Path], rank: int, world_size: int) -> list[Path]:
    return paths[rank::world_size]


def ensure_shards(ctx: SelfTestContext, seed: int = 0) -> list[Path]:
    """Rank 0 writes the shards once per run; every rank gets the list, or the same error."""
    if not ctx.shared_data.is_dir():
        raise FileNotFoundError(f"not mounted: {ctx.shared_data}")
    directory = shard_dir(ctx)
    error = None
    if ctx.rank == 0 and not (directory / "complete").exists():
        try:
            write_shards(directory, seed)
            (directory / "complete").touch()
        except OSError as failure:
            error = f"writing shards to {directory}: {failure}"
    if dist.is_initialized():
        # Rank 0's outcome, so no rank waits on shards that will never come.
        box = [error]
        dist.broadcast_object_list(box, src=0)
        error = box[0]
    if error:
        raise OSError(error)
    return sorted(directory.glob("shard-*.tar"))


def pipeline_check(ctx: SelfTestContext) -> CheckResult:
    """Samples/s through read, decode and augment, summed over the ranks, each on its shards."""
    paths = ensure_shards(ctx)
    generator = torch.Generator().manual_seed(ctx.rank)
    started = time.perf_counter()
    count = 0
    for _, image in iter_samples(rank_shards(paths, ctx.rank, ctx.world_size)):
        augment(image, PIPELINE_CROP, generator)
        count += 1
    elapsed = time.perf_counter() - started
    # The job's rate: every rank's samples over the slowest rank's time.
    device = collective_device(ctx)
    counts = torch.tensor([float(count)], dtype=torch.float64, device=device)
    slowest = torch.tensor([elapsed], dtype=torch.float64, device=device)
    if dist.is_initialized():
        dist.all_reduce(counts)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    samples_per_s = float((counts / slowest).item())
    key = "pipeline.samples_per_s"
    floor = ctx.floors.get(key)
    result = CheckResult(
        "storage.pipeline", "PASS", round(samples_per_s, 1), "samples/s", floor,
        ctx.floor_sources.get(key, ""), duration_s=elapsed,
        details={"samples": int(counts.item()), "crop": PIPELINE_CROP, "image_size": IMAGE_SIZE},
        floor=None if floor is None else Floor(floor, "samples/s"),
    )  # fmt: skip
    if floor is None:
        result.status, result.reason = "INFO", f"no floor set ({key})"
    elif samples_per_s < floor:
        result.status, result.reason = "FAIL", f"{samples_per_s:.1f} samples/s below {floor:g}"
    return result
