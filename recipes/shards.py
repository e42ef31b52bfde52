"""WebDataset shards (plain tars, a sample's members `<key>.<ext>` adjacent) read by position, so
that a resumed run continues on exactly the sample it stopped before.

Each rank reads its own shards (rank r takes shards r, r + world, ...). Position p of a rank's
stream is sample p mod N (N its samples) of epoch p div N, the shards visited in an order drawn
per epoch; a shard's member list is read once (tar headers only), then a sample is one seek."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

import torch
from selftest.data import augment, decode_image
from selftest.trainkit import keyed_generator

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp")


class DataError(Exception):
    """Shards that cannot feed the run; the message names the folder and the fix."""


@dataclass
class Batch:
    """One micro-batch as a recipe's task sees it: crops in [0, 1], their captions, and one
    generator per sample keyed by its data position, for every random draw the task makes
    (noise, timesteps, degradations), so a sample's draws do not depend on how it was batched."""

    images: torch.Tensor
    captions: list[str]
    generators: list[torch.Generator]
    device: torch.device


def rank_shards(folder: Path, rank: int, world_size: int) -> list[Path]:
    paths = sorted(folder.glob("*.tar"))
    if len(paths) < world_size:
        raise DataError(
            f"{folder}: {len(paths)} shard(s) for {world_size} ranks; every rank needs one "
            "(run prepare with a smaller samples_per_shard, or fewer GPUs)"
        )
    return paths[rank::world_size]


def _sample_keys(tar: tarfile.TarFile) -> dict[str, dict[str, tarfile.TarInfo]]:
    samples: dict[str, dict[str, tarfile.TarInfo]] = {}
    for member in tar.getmembers():
        key, _, ext = member.name.partition(".")
        samples.setdefault(key, {})[ext.lower()] = member
    return samples


class ShardStream:
    """A rank's samples by position: (uint8 CHW image, caption)."""

    def __init__(self, paths: list[Path], seed: int) -> None:
        self.seed = seed
        # Open for the run's life: a sample is a seek in a tar whose index is already read.
        self.tars = [tarfile.open(path, "r:") for path in paths]  # noqa: SIM115
        self.samples = [list(_sample_keys(tar).values()) for tar in self.tars]
        self.total = sum(len(s) for s in self.samples)
        if self.total == 0:
            raise DataError(f"no samples in {', '.join(str(p) for p in paths)}")

    def _locate(self, position: int) -> tuple[int, int]:
        epoch, within = divmod(position, self.total)
        order = torch.randperm(len(self.tars), generator=keyed_generator(self.seed, epoch))
        for shard in order.tolist():
            if within < len(self.samples[shard]):
                return shard, within
            within -= len(self.samples[shard])
        raise AssertionError("position beyond the stream")  # divmod keeps within < total

    def sample(self, position: int) -> tuple[torch.Tensor, str]:
        shard, index = self._locate(position)
        members, tar = self.samples[shard][index], self.tars[shard]
        image_ext = next((e for e in IMAGE_EXTENSIONS if e in members), None)
        if image_ext is None or "txt" not in members:
            raise DataError(f"{tar.name}: sample {members} lacks an image or a caption")
        raw = tar.extractfile(members[image_ext]).read()
        caption = tar.extractfile(members["txt"]).read().decode()
        return decode_image(raw), caption


def micro_batch(
    stream: ShardStream, position: int, size: int, crop: int, rank: int, device: torch.device
) -> Batch:
    """`size` samples from `position`, each randomly cropped to `crop` and flipped left-right
    half the time (selftest.data.augment), draws keyed by (seed, rank, position)."""
    images, captions, generators = [], [], []
    for at in range(position, position + size):
        image, caption = stream.sample(at)
        if min(image.shape[1:]) < crop:
            raise DataError(f"a {tuple(image.shape[1:])} image is smaller than the {crop} crop")
        window = augment(image, crop, keyed_generator(stream.seed, rank, at))
        images.append((window + 1.0) / 2.0)
        captions.append(caption)
        generators.append(keyed_generator(stream.seed, rank, at, 1))
    return Batch(torch.stack(images), captions, generators, device)
