"""Validation samples: at each checkpoint a fixed set of prompts is sampled from the UNet being
trained (its EMA when there is one, as diffusers' train_text_to_image.py validates) and written
as PNGs under `<output>/samples/step-<n>/`, beside the checkpoints; the report links them.
Same prompts, same seed at every checkpoint, so the images show what the training changed.

Only where a GPU is present: 25 denoising steps of SD 1.5 at 512² take seconds on a GPU and
many minutes on a CPU, which would stall every rank waiting at the next collective."""

from __future__ import annotations

from pathlib import Path

import torch


def skipped_because(device_type: str, prompts: list[str]) -> str | None:
    """Why no samples are drawn, or None when they are."""
    if not prompts:
        return "recipes.sd_finetune.validation_prompts is empty"
    if device_type != "cuda":
        return "no GPU: sampling on a CPU would stall the ranks for minutes per checkpoint"
    return None


def sample(
    task, unet: torch.nn.Module, prompts: list[str], *, seed: int, steps: int, resolution: int,
    folder: Path,
) -> list[Path]:  # fmt: skip
    """One PNG per prompt in `folder`, `steps` DDIM steps from the pipeline's frozen parts and
    `unet`; `task` is the SdTask holding those parts."""
    from diffusers import DDIMScheduler, StableDiffusionPipeline

    pipeline = StableDiffusionPipeline(
        vae=task.vae, text_encoder=task.text_encoder, tokenizer=task.tokenizer, unet=unet,
        scheduler=DDIMScheduler.from_config(task.scheduler.config), safety_checker=None,
        feature_extractor=None, requires_safety_checker=False,
    )  # fmt: skip
    pipeline.set_progress_bar_config(disable=True)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    was_training = unet.training
    unet.eval()
    try:
        for index, prompt in enumerate(prompts):
            generator = torch.Generator(task.device).manual_seed(seed + index)
            image = pipeline(
                prompt, height=resolution, width=resolution, num_inference_steps=steps,
                generator=generator,
            ).images[0]  # fmt: skip
            path = folder / f"{index:02d}.png"
            image.save(path)
            written.append(path)
    finally:
        unet.train(was_training)
    return written
