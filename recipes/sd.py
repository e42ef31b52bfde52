"""Stable Diffusion fine-tuning: the UNet learns to predict the noise added to VAE latents of the
training images, conditioned on the CLIP text encoder's embedding of their captions (the
diffusers text-to-image training recipe). The VAE and text encoder stay frozen; only the UNet is
trained, with gradient checkpointing and scaled-dot-product attention (torch's SDPA, which runs
the flash or memory-efficient kernel where the GPU has one)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from recipes.shards import Batch


def _draw(shape: torch.Size, batch: Batch) -> torch.Tensor:
    """One standard normal tensor of `shape` per sample, from that sample's generator."""
    return torch.stack([torch.randn(shape, generator=g) for g in batch.generators])


@dataclass
class Pipeline:
    """The parts of a Stable Diffusion pipeline the fine-tuning uses."""

    tokenizer: Any
    text_encoder: torch.nn.Module
    vae: torch.nn.Module
    scheduler: Any
    unet: torch.nn.Module


def load_pipeline(folder: Path) -> Pipeline:
    """The staged diffusers folder (`stable-diffusion`): unet, vae, text_encoder, tokenizer,
    scheduler. diffusers' training scripts train on DDPM's forward process whatever sampler
    the pipeline ships with; from_pretrained reads the folder's noise schedule."""
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextModel, CLIPTokenizer

    return Pipeline(
        tokenizer=CLIPTokenizer.from_pretrained(folder / "tokenizer"),
        text_encoder=CLIPTextModel.from_pretrained(folder / "text_encoder"),
        vae=AutoencoderKL.from_pretrained(folder / "vae"),
        scheduler=DDPMScheduler.from_pretrained(folder / "scheduler"),
        unet=UNet2DConditionModel.from_pretrained(folder / "unet"),
    )


class SdTask:
    """Trains the pipeline's UNet; the VAE and text encoder are frozen on `device`."""

    def __init__(self, parts: Pipeline, device: torch.device, gradient_checkpointing: bool) -> None:
        from diffusers.models.attention_processor import AttnProcessor2_0

        self.device = device
        self.tokenizer, self.scheduler = parts.tokenizer, parts.scheduler
        self.text_encoder = parts.text_encoder.to(device)
        self.vae = parts.vae.to(device)
        for frozen in (self.text_encoder, self.vae):
            frozen.requires_grad_(False).eval()
        self.unet = parts.unet
        self.unet.set_attn_processor(AttnProcessor2_0())
        if gradient_checkpointing:
            self.unet.enable_gradient_checkpointing()
        self.unet.train()

    def trainable(self) -> torch.nn.Module:
        return self.unet

    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        device = batch.device
        tokens = self.tokenizer(
            batch.captions, padding="max_length", truncation=True,
            max_length=self.tokenizer.model_max_length, return_tensors="pt",
        ).input_ids.to(device)  # fmt: skip
        with torch.no_grad():
            posterior = self.vae.encode((batch.images * 2.0 - 1.0).to(device)).latent_dist
            # A sample of the posterior, its noise from the samples' own generators.
            sampled = posterior.mean + posterior.std * _draw(posterior.mean.shape[1:], batch).to(
                device
            )
            latents = sampled * self.vae.config.scaling_factor
            text = self.text_encoder(tokens)[0]
        noise = _draw(latents.shape[1:], batch).to(device)
        horizon = self.scheduler.config.num_train_timesteps
        timesteps = torch.cat(
            [torch.randint(0, horizon, (1,), generator=g) for g in batch.generators]
        ).to(device)
        noisy = self.scheduler.add_noise(latents, noise, timesteps)
        if self.scheduler.config.prediction_type == "v_prediction":  # SD 2.x at 768
            target = self.scheduler.get_velocity(latents, noise, timesteps)
        else:
            target = noise
        prediction = model(noisy, timesteps, text).sample
        return F.mse_loss(prediction.float(), target.float())

    @staticmethod
    def export(unet: torch.nn.Module, folder: Path) -> None:
        """The fine-tuned UNet in diffusers' layout: swap it into the staged pipeline folder."""
        unet.save_pretrained(folder)
