"""The recipes' defaults every stack gets (model/config/recipes.py, recipe_training.py), read
from the model and from the rendered job's RECIPE_SETTINGS, compared with the documented
figures as literals (STYLE.md §15-16). No shipped stack sets `recipes`, so these are what a job
trains with; before this file only docs/config.md (regenerable) and tests that pass their own
numbers in (tests/image/recipes/) held them.

Sources, as the code and recipes/README.md cite them: the source documents the platform was
built from (ESRGAN: pixel-loss weight 0.1, Gaussian noise σ 0.05, a JPEG round-trip; SD: lr 3e-6,
global batch 32 = 4 × 8 GPUs, 150K steps, 512² crops); Wang et al. 2018, "ESRGAN", §3-4.1 (lr
1e-4, batch 16, 128² HR crops, 23 RRDB blocks, 64 features, growth 32); Real-ESRGAN's JPEG
quality range [30, 95] (options/train_realesrnet_x4plus.yml, jpeg_range); diffusers'
train_text_to_image.py (--max_grad_norm 1.0, --noise_offset 0) and EMAModel (decay 0.9999);
Hang et al. 2023, Min-SNR (γ = 5); the CompVis SD v1 model card (10 % text-conditioning
dropped); LAION-Aesthetics V2 "5+" and LAION-5B §3.1 (CLIP ViT-B/32 similarity 0.28)."""

from __future__ import annotations

import json

import pytest

from jobs.recipe import plan_job
from tests.conftest import STACKS, stack_config

ESRGAN = {
    "learning_rate": 1e-4,
    "global_batch": 16,
    "hr_crop": 128,
    "num_blocks": 23,
    "num_features": 64,
    "growth_channels": 32,
    "pixel_loss": "l1",
    "pixel_weight": 0.1,
    "perceptual_weight": 1.0,
    "noise_sigma": 0.05,
    "jpeg_quality": [30, 95],
}
SD_FINETUNE = {
    "learning_rate": 3e-6,
    "global_batch": 32,
    "micro_batch": 4,
    "steps": 150_000,
    "resolution": 512,
    "snr_gamma": 5.0,
    "ema_decay": 0.9999,
    "max_grad_norm": 1.0,
    "noise_offset": 0.0,
    "caption_dropout": 0.1,
}
PREPARE = {"resolution": 512, "min_aesthetic": 5.0, "min_clip_similarity": 0.28}
DOCUMENTED = {"esrgan": ESRGAN, "sd-finetune": SD_FINETUNE, "prepare": PREPARE}


@pytest.mark.parametrize("recipe", DOCUMENTED)
@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_s_recipes_default_to_the_documented_figures(stack, recipe):
    section = stack_config(stack).recipes.section(recipe).model_dump(mode="json")
    assert {k: section[k] for k in DOCUMENTED[recipe]} == DOCUMENTED[recipe]


@pytest.mark.parametrize("recipe", DOCUMENTED)
def test_the_rendered_job_hands_the_recipe_the_documented_figures(recipe):
    # jobs/recipe.py: the pod reads its settings as JSON from RECIPE_SETTINGS. prod's H100
    # pool holds every recipe.
    spec, _ = plan_job(stack_config("prod"), recipe, nodes=1, render_only=True)
    settings = json.loads(spec.env["RECIPE_SETTINGS"])
    assert {k: settings[k] for k in DOCUMENTED[recipe]} == DOCUMENTED[recipe]
