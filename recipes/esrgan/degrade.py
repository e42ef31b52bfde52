"""The degradations that turn a high-resolution crop into the generator's low-resolution input.

Order, after Real-ESRGAN's first-order model (Wang et al. 2021, section 3.1: blur, resize,
noise, JPEG): an antialiased bicubic downscale (the antialias filter stands in for the blur),
additive Gaussian noise, then a JPEG round-trip. JPEG comes last because a real low-resolution
image's compression artefacts are the last thing done to it; noise added after JPEG would
cover the artefacts the generator must learn to remove.

Every random draw comes from the caller's torch.Generator, in a fixed order (noise, then the
JPEG qualities), so the loop's (seed, rank, step, micro) key reproduces the same LR exactly
after a resume.
"""

from __future__ import annotations

import io
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image


class Degraded(NamedTuple):
    lr: torch.Tensor  # float32 (B, 3, H/scale, W/scale) in [0, 1]
    jpeg_qualities: list[int]  # the quality each image was compressed at


def downscale(hr: torch.Tensor, scale: int) -> torch.Tensor:
    """Bicubic with antialiasing (what PIL's and MATLAB's imresize do when shrinking); without
    antialias a ×4 bicubic aliases fine texture instead of blurring it."""
    height, width = hr.shape[-2:]
    return F.interpolate(hr, size=(height // scale, width // scale), mode="bicubic", antialias=True)


def add_noise(x: torch.Tensor, sigma: float, generator: torch.Generator) -> torch.Tensor:
    """Independent Gaussian noise of standard deviation `sigma` on every [0, 1] pixel value."""
    return x + sigma * torch.randn(x.shape, generator=generator, dtype=x.dtype)


def draw_qualities(generator: torch.Generator, count: int, low: int, high: int) -> list[int]:
    """`count` JPEG qualities, uniform over the integers low..high inclusive."""
    return torch.randint(low, high + 1, (count,), generator=generator).tolist()


def jpeg(x: torch.Tensor, qualities: list[int]) -> torch.Tensor:
    """Compress each image with Pillow at its quality and decode it again. JPEG stores 8-bit
    pixels, so values are clamped to [0, 1] and rounded to /255 steps first."""
    pixels = (x.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    decoded = []
    for image, quality in zip(pixels, qualities, strict=True):
        buffer = io.BytesIO()
        Image.fromarray(image, "RGB").save(buffer, format="JPEG", quality=quality)
        buffer.seek(0)
        decoded.append(np.asarray(Image.open(buffer).convert("RGB")))
    return torch.from_numpy(np.stack(decoded)).permute(0, 3, 1, 2).float() / 255


def degrade(
    hr: torch.Tensor,
    scale: int,
    generator: torch.Generator,
    noise_sigma: float,
    jpeg_quality: tuple[int, int],
) -> Degraded:
    """HR float (B, 3, H, W) in [0, 1] on the CPU → LR (B, 3, H/scale, W/scale) in [0, 1]."""
    _check(hr, scale, noise_sigma, jpeg_quality)
    low, high = jpeg_quality
    noisy = add_noise(downscale(hr.float(), scale), noise_sigma, generator)
    qualities = draw_qualities(generator, hr.shape[0], low, high)
    # Decoded JPEG is already 8-bit, so in [0, 1]; the clamp says so for the reader.
    return Degraded(jpeg(noisy, qualities).clamp(0, 1), qualities)


def _check(hr: torch.Tensor, scale: int, noise_sigma: float, jpeg_quality: tuple[int, int]) -> None:
    if hr.dim() != 4 or hr.shape[1] != 3 or not hr.is_floating_point():
        raise ValueError(
            f"degrade: hr is {hr.dtype} {tuple(hr.shape)}; need float (batch, 3, height, width)"
        )
    if hr.device.type != "cpu":
        raise ValueError(f"degrade: hr is on {hr.device}; JPEG runs in Pillow, pass it on cpu")
    if scale < 1 or hr.shape[-2] % scale or hr.shape[-1] % scale:
        raise ValueError(
            f"degrade: a {hr.shape[-2]}x{hr.shape[-1]} crop does not divide by scale {scale}; "
            "esrgan.hr_crop must be a multiple of the scale"
        )
    if noise_sigma < 0:
        raise ValueError(f"esrgan.noise_sigma: {noise_sigma} is negative; need >= 0")
    low, high = jpeg_quality
    if not 1 <= low <= high <= 100:
        raise ValueError(
            f"esrgan.jpeg_quality: [{low}, {high}]; need 1 <= low <= high <= 100 (Pillow's scale)"
        )
