"""WebDataset samples, as the self-test and the recipes both write and read them: a shard is a
plain tar whose members are `<key>.<ext>`, a sample's members adjacent, written and read with
the standard library's `tarfile` (the images need no `webdataset` package); images are decoded
with Pillow and cropped and flipped in torch."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import torch
from PIL import Image


def synthetic_image(index: int, seed: int, size: int) -> Image.Image:
    """A smooth random RGB image: a random 8×8 field upsampled, so a denoiser has structure to
    learn and PNG compresses it as it would a photograph rather than as noise."""
    rng = np.random.default_rng([seed, index])
    field = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    return Image.fromarray(field, "RGB").resize((size, size), Image.Resampling.BICUBIC)


def add_member(tar: tarfile.TarFile, name: str, payload: bytes) -> None:
    """One WebDataset member, `<key>.<ext>`, from bytes in memory."""
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    tar.addfile(info, io.BytesIO(payload))


def decode_image(raw: bytes) -> torch.Tensor:
    """An encoded image (PNG, JPEG, ...) as a uint8 CHW RGB tensor."""
    image = Image.open(io.BytesIO(raw)).convert("RGB")
    return torch.from_numpy(np.array(image)).permute(2, 0, 1).contiguous()


def crop_flip(image: torch.Tensor, crop: int, generator: torch.Generator) -> torch.Tensor:
    """A random `crop`×`crop` window, flipped left-right half the time, still uint8."""
    _, height, width = image.shape
    top = int(torch.randint(0, height - crop + 1, (1,), generator=generator))
    left = int(torch.randint(0, width - crop + 1, (1,), generator=generator))
    window = image[:, top : top + crop, left : left + crop]
    if bool(torch.rand((), generator=generator) < 0.5):
        window = window.flip(-1)
    return window.contiguous()
