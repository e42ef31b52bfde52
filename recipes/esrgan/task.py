"""The ESRGAN task the training loop (recipes/loop.py) drives: which module trains, and the loss
of one micro-batch. Degradation runs on the CPU (JPEG is Pillow), the generator and VGG19 on the
loop's device; autocast is the loop's, the loss comes back in float32."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from recipes.esrgan.degrade import degrade
from recipes.esrgan.losses import generator_loss, load_vgg19, pixel_loss
from recipes.esrgan.model import SCALES, RRDBNet

if TYPE_CHECKING:
    from recipes.shards import Batch

# The keys of recipe_settings(cfg, "esrgan") this task reads (model/config/recipe_training.py,
# EsrganSettings, documents each).
NEEDED = (
    "num_blocks", "num_features", "growth_channels", "pixel_loss", "pixel_weight",
    "perceptual_weight", "noise_sigma", "jpeg_quality", "hr_crop",
)  # fmt: skip


class EsrganTask:
    """One stage of progressive training: `scale` 2, or 4 (started from the 2× weights with
    recipes.esrgan.model.grow_from). The VGG19 is frozen and kept outside `trainable()`, so
    neither DDP, the optimizer nor the checkpoint carry it."""

    def __init__(
        self, settings: dict[str, Any], scale: int, vgg_path: Path, device: torch.device | str
    ):
        missing = [key for key in NEEDED if key not in settings]
        if missing:
            raise ValueError(
                f"esrgan settings: missing {', '.join(missing)}; pass "
                "model.config.recipes.recipe_settings(cfg, 'esrgan') whole"
            )
        if scale not in SCALES:
            raise ValueError(f"esrgan scale: {scale!r} is not supported; use one of {SCALES}")
        if settings["hr_crop"] % scale:
            raise ValueError(
                f"esrgan.hr_crop: {settings['hr_crop']} does not divide by the {scale}× stage's "
                f"scale; use a multiple of {max(SCALES)}"
            )
        pixel_loss(settings["pixel_loss"])  # fail on a bad kind now, not at the first step
        self.settings = settings
        self.scale = scale
        self.device = torch.device(device)
        self.model = RRDBNet(
            scale, settings["num_blocks"], settings["num_features"], settings["growth_channels"]
        ).to(self.device)
        self.vgg = load_vgg19(vgg_path).to(self.device)

    def trainable(self) -> torch.nn.Module:
        return self.model

    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        """`model` is `trainable()` as the loop wraps it (DDP). Each sample's generator draws
        its noise and JPEG quality, so a resumed step sees the same LR images, however the
        samples were batched."""
        hr = batch.images
        crop = self.settings["hr_crop"]
        if tuple(hr.shape[-2:]) != (crop, crop):
            raise ValueError(
                f"esrgan batch: images are {hr.shape[-2]}x{hr.shape[-1]}, "
                f"esrgan.hr_crop is {crop}: the loop must crop to it"
            )
        quality = tuple(self.settings["jpeg_quality"])
        lr = torch.cat(
            [
                degrade(image[None], self.scale, key, self.settings["noise_sigma"], quality).lr
                for image, key in zip(hr, batch.generators, strict=True)
            ]
        )
        sr = model(lr.to(batch.device))
        return generator_loss(sr, hr.to(batch.device), self.vgg, self.settings).total
