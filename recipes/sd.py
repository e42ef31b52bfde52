"""Stable Diffusion fine-tuning: the UNet learns to predict the noise added to VAE latents of the
training images, conditioned on the CLIP text encoder's embedding of their captions (the
diffusers text-to-image training recipe). The VAE and text encoder stay frozen; only the UNet is
trained, with scaled-dot-product attention (torch's SDPA, which runs the flash or
memory-efficient kernel where the GPU has one) and gradient checkpointing where the micro-batch
needs it (recipes.fit). At parity with diffusers' train_text_to_image.py: Min-SNR weighting
(`snr_gamma`), noise offset, and caption dropout (SDXL's script's --proportion_empty_prompts;
Stable Diffusion v1 trained with 10 %); clipping and the EMA are the loop's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from recipes.latents import posterior as latent_posterior
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


def snr(scheduler: Any, timesteps: torch.Tensor) -> torch.Tensor:
    """The signal-to-noise ratio ᾱ_t / (1 - ᾱ_t) of DDPM's forward process at `timesteps`."""
    alphas = scheduler.alphas_cumprod.to(timesteps.device)[timesteps].float()
    return alphas / (1.0 - alphas)


def loss_weights(scheduler: Any, timesteps: torch.Tensor, gamma: float | None) -> torch.Tensor:
    """Per-sample weights of the MSE: 1, or Min-SNR's min(SNR, γ) over what the model predicts
    (Hang et al. 2023, eq. 10: SNR for ε, SNR + 1 for v)."""
    if gamma is None:
        return torch.ones(timesteps.shape, device=timesteps.device)
    ratio = snr(scheduler, timesteps)
    clipped = ratio.clamp(max=gamma)
    if scheduler.config.prediction_type == "v_prediction":
        return clipped / (ratio + 1.0)
    return clipped / ratio


class SdTask:
    """Trains the pipeline's UNet; the VAE and text encoder are frozen on `device`.

    Each sample's generator draws, in this order: the posterior sample's noise, the diffusion
    noise, the timestep, the caption dropout's uniform, the noise offset's per-channel normal;
    all five every step whatever the settings, so a setting changes no other draw."""

    def __init__(
        self,
        parts: Pipeline,
        device: torch.device,
        gradient_checkpointing: bool,
        *,
        snr_gamma: float | None = None,
        noise_offset: float = 0.0,
        caption_dropout: float = 0.0,
    ) -> None:
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
        self.snr_gamma, self.noise_offset = snr_gamma, noise_offset
        self.caption_dropout = caption_dropout

    def trainable(self) -> torch.nn.Module:
        return self.unet

    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        device = batch.device
        if batch.latents is not None:  # prepare's, the VAE encoder skipped
            posterior = latent_posterior(batch.latents)
        else:
            with torch.no_grad():
                posterior = self.vae.encode((batch.images * 2.0 - 1.0).to(device)).latent_dist
        shape = posterior.mean.shape[1:]
        sampled_noise = _draw(shape, batch).to(device)
        noise = _draw(shape, batch).to(device)
        horizon = self.scheduler.config.num_train_timesteps
        timesteps = torch.cat(
            [torch.randint(0, horizon, (1,), generator=g) for g in batch.generators]
        ).to(device)
        kept = torch.cat([torch.rand(1, generator=g) for g in batch.generators])
        offsets = _draw(torch.Size((shape[0], 1, 1)), batch).to(device)
        # Dropped captions become the empty prompt, whose embedding guidance subtracts.
        captions = [
            "" if float(u) < self.caption_dropout else caption
            for u, caption in zip(kept, batch.captions, strict=True)
        ]
        tokens = self.tokenizer(
            captions, padding="max_length", truncation=True,
            max_length=self.tokenizer.model_max_length, return_tensors="pt",
        ).input_ids.to(device)  # fmt: skip
        with torch.no_grad():
            # A sample of the posterior, its noise from the samples' own generators.
            latents = (
                posterior.mean + posterior.std * sampled_noise
            ) * self.vae.config.scaling_factor
            text = self.text_encoder(tokens)[0]
        noise = noise + self.noise_offset * offsets
        noisy = self.scheduler.add_noise(latents, noise, timesteps)
        if self.scheduler.config.prediction_type == "v_prediction":  # SD 2.x at 768
            target = self.scheduler.get_velocity(latents, noise, timesteps)
        else:
            target = noise
        prediction = model(noisy, timesteps, text).sample
        per_sample = F.mse_loss(prediction.float(), target.float(), reduction="none")
        per_sample = per_sample.mean(dim=tuple(range(1, per_sample.dim())))
        return (per_sample * loss_weights(self.scheduler, timesteps, self.snr_gamma)).mean()

    @staticmethod
    def export(unet: torch.nn.Module, folder: Path) -> None:
        """The fine-tuned UNet in diffusers' layout: swap it into the staged pipeline folder."""
        unet.save_pretrained(folder)
