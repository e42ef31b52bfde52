"""Stable Diffusion VAE posteriors computed once by prepare, so sd-finetune need not run the VAE
encoder at every step (a quarter of a step's FLOPs at 512², issue 19's review). A sample's
`<key>.latents.npy` holds float16 [2, 2C, h, w]: for the image and its mirror image, the
encoder's moments (mean then log variance on the channel axis, diffusers' DiagonalGaussian
parameters). Training draws the flip as for an image and samples the posterior with its own
keyed noise, as on images; only the encoder's float16 rounding differs."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image

# The member's extension in a WebDataset sample.
LATENTS = "latents.npy"


def to_npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def from_npy(raw: bytes) -> torch.Tensor:
    return torch.from_numpy(np.load(io.BytesIO(raw), allow_pickle=False))


def posterior(moments: torch.Tensor):
    """diffusers' DiagonalGaussianDistribution of float32 moments [B, 2C, h, w]: what
    `vae.encode(x).latent_dist` is."""
    from diffusers.models.autoencoders.vae import DiagonalGaussianDistribution

    return DiagonalGaussianDistribution(moments.float())


class Encoder:
    """The staged Stable Diffusion VAE's encoder on `device`: PIL images → npy bytes each."""

    def __init__(self, folder: Path, device: torch.device) -> None:
        from diffusers import AutoencoderKL

        self.device = device
        self.vae = AutoencoderKL.from_pretrained(folder / "vae").to(device).eval()

    @torch.no_grad()
    def __call__(self, images: Sequence[Image.Image]) -> list[bytes]:
        pixels = torch.stack([torch.from_numpy(np.asarray(i).copy()) for i in images])
        pixels = pixels.permute(0, 3, 1, 2).to(self.device).float() / 127.5 - 1.0
        both = torch.cat([pixels, pixels.flip(-1)])
        moments = self.vae.encode(both).latent_dist.parameters.half().cpu()
        pairs = torch.stack([moments[: len(images)], moments[len(images) :]], dim=1)
        return [to_npy(pair.numpy()) for pair in pairs]
