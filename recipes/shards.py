"""WebDataset shards (plain tars, a sample's members `<key>.<ext>` adjacent) read by position, so
that a resumed run continues on exactly the sample it stopped before.

Each rank reads its own shards (rank r takes shards r, r + world, ...). Position p of a rank's
stream is entry p mod N (N its samples) of epoch p div N's order. That order is keyed by (seed,
epoch): the shards are visited in a drawn order, INTERLEAVE at a time, their samples dealt
round-robin, then shuffled within windows of SHUFFLE_BUFFER entries. prepare writes a source
folder's samples to the same shards, so without this a micro-batch would be neighbours of one
folder; with it, consecutive positions come from several shards while each is still read
roughly front to back. A shard's member list is read once (tar headers only), then a sample is
one seek; each process (a loader worker) opens the tars itself."""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
from PIL import Image
from trainkit.keyed import keyed_generator, keyed_permutation
from trainkit.loader import keyed_loader, on_device
from trainkit.shards import crop_flip, decode_image

from recipes.latents import LATENTS, from_npy

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp")
# Shards read side by side, and the window a position is shuffled within (platform choices:
# 8 x a 1,000-sample shard keeps 8 files open per worker; 256 entries mix 8 shards' samples).
INTERLEAVE = 8
SHUFFLE_BUFFER = 256


class DataError(Exception):
    """Shards that cannot feed the run; the message names the folder and the fix."""


@dataclass
class Batch:
    """One micro-batch as a recipe's task sees it: crops in [0, 1] on the device (or, from
    latents shards, None and `latents`: the VAE moments of each sample's flip), their captions,
    and one generator per sample keyed by its data position, for every random draw the task
    makes (noise, timesteps, degradations), so a sample's draws do not depend on how it was
    batched."""

    images: torch.Tensor | None
    captions: list[str]
    generators: list[torch.Generator]
    device: torch.device
    latents: torch.Tensor | None = None


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


def epoch_order(sizes: tuple[int, ...], seed: int, epoch: int) -> list[tuple[int, int]]:
    """(shard, index) of each entry of the epoch: shards in a keyed order, INTERLEAVE at a time,
    dealt round-robin, then each SHUFFLE_BUFFER window permuted by its own key."""
    shards = keyed_permutation(len(sizes), seed, epoch)
    dealt: list[tuple[int, int]] = []
    for group in range(0, len(shards), INTERLEAVE):
        members = shards[group : group + INTERLEAVE]
        for index in range(max(sizes[shard] for shard in members)):
            dealt += [(shard, index) for shard in members if index < sizes[shard]]
    order = []
    for window, at in enumerate(range(0, len(dealt), SHUFFLE_BUFFER)):
        chunk = dealt[at : at + SHUFFLE_BUFFER]
        order += [chunk[i] for i in keyed_permutation(len(chunk), seed, epoch, window)]
    return order


class ShardStream:
    """A rank's samples by position: (uint8 CHW image, caption)."""

    def __init__(self, paths: list[Path], seed: int) -> None:
        self.paths, self.seed = paths, seed
        self._tars: tuple[int, list[tarfile.TarFile]] | None = None
        self.samples = [list(_sample_keys(tar).values()) for tar in self.tars()]
        self.sizes = tuple(len(s) for s in self.samples)
        self.total = sum(self.sizes)
        if self.total == 0:
            raise DataError(f"no samples in {', '.join(str(p) for p in paths)}")
        self._order = lru_cache(maxsize=2)(lambda epoch: epoch_order(self.sizes, seed, epoch))

    def tars(self) -> list[tarfile.TarFile]:
        """This process's open tars: a forked worker must not share the parent's file offsets."""
        if self._tars is None or self._tars[0] != os.getpid():
            # Open for the process's life: a sample is a seek in a tar whose index is read.
            self._tars = (os.getpid(), [tarfile.open(p, "r:") for p in self.paths])  # noqa: SIM115
        return self._tars[1]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_tars": None, "_order": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._order = lru_cache(maxsize=2)(lambda e: epoch_order(self.sizes, self.seed, e))

    def _read(self, position: int, *extensions: str) -> tuple[bytes, ...]:
        """The image's bytes, the caption's and those of `extensions`, of the sample there."""
        epoch, within = divmod(position, self.total)
        shard, index = self._order(epoch)[within]
        members, tar = self.samples[shard][index], self.tars()[shard]
        image_ext = next((e for e in IMAGE_EXTENSIONS if e in members), None)
        if image_ext is None or "txt" not in members:
            raise DataError(f"{tar.name}: sample {members} lacks an image or a caption")
        if any(ext not in members for ext in extensions):
            raise DataError(
                f"{tar.name}: sample {members} has no {' or '.join(extensions)}: the shards were "
                "prepared without recipes.prepare.latents; prepare them with it, or train with "
                "recipes.sd_finetune.latents false"
            )
        names = [image_ext, "txt", *extensions]
        return tuple(tar.extractfile(members[name]).read() for name in names)

    def sample(self, position: int) -> tuple[torch.Tensor, str]:
        raw, caption = self._read(position)
        return decode_image(raw), caption.decode()

    def sample_latents(self, position: int) -> tuple[tuple[int, int], torch.Tensor, str]:
        """The image's (height, width) from its header alone, its moments, its caption."""
        raw, caption, moments = self._read(position, LATENTS)
        width, height = Image.open(io.BytesIO(raw)).size
        return (height, width), from_npy(moments), caption.decode()


class Crops:
    """The loader's dataset: the sample at a position, cropped and flipped (uint8) with draws
    keyed by (seed, rank, position)."""

    def __init__(self, stream: ShardStream, rank: int, crop: int) -> None:
        self.stream, self.rank, self.crop = stream, rank, crop

    def __getitem__(self, position: int) -> tuple[torch.Tensor, str]:
        image, caption = self.stream.sample(position)
        if min(image.shape[1:]) < self.crop:
            raise DataError(
                f"a {tuple(image.shape[1:])} image is smaller than the {self.crop} crop"
            )
        generator = keyed_generator(self.stream.seed, self.rank, position)
        return crop_flip(image, self.crop, generator), caption


class Posteriors(Crops):
    """The loader's dataset over prepare's latents: the moments of the sample's image or of its
    mirror image, the flip drawn exactly as Crops draws it (the crop is the whole image, so
    its window draws are 0), so a run on latents trains on the flips a run on images would."""

    def __getitem__(self, position: int) -> tuple[torch.Tensor, str]:
        (height, width), moments, caption = self.stream.sample_latents(position)
        if (height, width) != (self.crop, self.crop):
            raise DataError(
                f"latents are of the whole {width}x{height} image, the crop is {self.crop}: "
                "recipes.sd_finetune.resolution must equal recipes.prepare.resolution to train "
                "on latents"
            )
        generator = keyed_generator(self.stream.seed, self.rank, position)
        torch.randint(0, 1, (1,), generator=generator)  # crop_flip's top and left: 0 here
        torch.randint(0, 1, (1,), generator=generator)
        flipped = bool(torch.rand((), generator=generator) < 0.5)
        return moments[int(flipped)], caption


def _batch(crops: Crops, position: int, tensors, captions, device: torch.device) -> Batch:
    seed, rank = crops.stream.seed, crops.rank
    generators = [
        keyed_generator(seed, rank, at, 1) for at in range(position, position + len(captions))
    ]
    if isinstance(crops, Posteriors):
        moments = tensors.to(device, non_blocking=True).float()
        return Batch(None, list(captions), generators, device, latents=moments)
    return Batch(on_device(tensors, device), list(captions), generators, device)


def micro_batch(
    stream: ShardStream, position: int, size: int, crop: int, rank: int, device: torch.device,
    latents: bool = False,
) -> Batch:  # fmt: skip
    """`size` samples from `position`, made in this process (the tests, the benchmark's serial
    figure): the same batch the loader gives at that position."""
    crops = (Posteriors if latents else Crops)(stream, rank, crop)
    images, captions = zip(*(crops[at] for at in range(position, position + size)), strict=True)
    return _batch(crops, position, torch.stack(images), captions, device)


class KeyedBatches:
    """A rank's micro-batches from `start`, made ahead by `workers` loader processes."""

    def __init__(
        self, paths: list[Path], seed: int, rank: int, size: int, crop: int, *, start: int,
        workers: int, pin_memory: bool, latents: bool = False,
    ) -> None:  # fmt: skip
        self.crops = (Posteriors if latents else Crops)(ShardStream(paths, seed), rank, crop)
        self.position, self.size = start, size
        self._batches = iter(keyed_loader(self.crops, start, size, workers, pin_memory))

    def next(self, device: torch.device) -> Batch:
        images, captions = next(self._batches)
        batch = _batch(self.crops, self.position, images, captions, device)
        self.position += self.size
        return batch

    def __enter__(self) -> KeyedBatches:
        return self

    def __exit__(self, *_: object) -> None:
        self._batches = None  # the loader's iterator shuts its workers down when released
