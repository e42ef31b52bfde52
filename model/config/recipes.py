"""The training recipes (recipes/, docs/training.md): data preparation, Stable Diffusion
fine-tuning and ESRGAN super-resolution, submitted as Kueue-admitted distributed jobs by
`python -m jobs recipe <recipe> --stack <stack>`.

Paths are relative to the shared-data volume (mounted at /mnt/shared-data in every training pod).
Pretrained weights are never downloaded: an admin stages them once under `weights_root` and
records each file's sha256 here (`python -m recipes checksums <folder>` prints the YAML); a
recipe whose weights are missing, unlisted or differ stops before it trains.

Defaults come from the source documents the platform was built from unless a field says
otherwise (sources named per field). The training recipes' sections (sd_finetune, esrgan) are in
model/config/recipe_training.py.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator

from model.config.base import DnsLabel, Int, Settings, shaped
from model.config.bounds import INT64_MAX, MAX_PROCESSES
from model.config.recipe_training import EsrganSettings, SdFinetuneSettings, SharedPath
from model.config.references import LOCAL_QUEUE, PRIORITY_CLASS, STAGED_MODEL, refers
from model.config.selftest import PinnedImage

RECIPES = ("prepare", "sd-finetune", "esrgan")

Sha256 = Annotated[str, shaped(r"[0-9a-f]{64}", "64 lowercase hex digits (sha256sum's output)")]


def scheduled(cfg: Any) -> bool:
    """Recipe jobs go through Kueue only where the stack runs it (jobs/recipe.py)."""
    return cfg.scheduling.enabled


class StagedWeights(Settings):
    """One pretrained model staged on shared storage: a folder and every file's checksum."""

    path: SharedPath = Field(description="The folder under recipes.weights_root.")
    sha256: dict[str, Sha256] = Field(
        default_factory=dict,
        description="Every file the recipe reads, by its path inside the folder, with its "
        "sha256. Empty means not staged yet: the recipe refuses to run.",
    )


def _default_weights() -> dict[str, StagedWeights]:
    # The Hugging Face layouts the loaders read: diffusers' pipeline folder (unet, vae,
    # text_encoder, tokenizer, scheduler), transformers' CLIPModel folder, torchvision's VGG19.
    return {
        "stable-diffusion": StagedWeights(path="stable-diffusion-v1-5"),
        "clip": StagedWeights(path="clip-vit-base-patch32"),
        "vgg19": StagedWeights(path="vgg19"),
    }


# Which staged models each recipe reads.
WEIGHTS_NEEDED: dict[str, tuple[str, ...]] = {
    "prepare": ("clip",),
    "sd-finetune": ("stable-diffusion",),
    "esrgan": ("vgg19",),
}


class PrepareSettings(Settings):
    """img2dataset output → 512×512 WebDataset shards, filtered by aesthetic and CLIP scores."""

    source: SharedPath = Field(
        "raw/laion-aesthetics",
        description="img2dataset's output folder (`<shard>/<key>.jpg|.txt|.json`).",
    )
    output: SharedPath = Field(
        "datasets/laion-aesthetics-512", description="Where the WebDataset shards go."
    )
    resolution: Int = Field(
        512,
        ge=8,
        le=8192,
        multiple_of=8,
        description="Side of the square the images become; a multiple of 8, the VAE's "
        "downsampling, as sd_finetune.resolution (which must equal it to train on latents).",
    )
    aesthetic_key: str = Field(
        "aesthetic",
        description="The metadata key holding the LAION aesthetic score (img2dataset copies "
        "the parquet's columns into each sample's .json).",
    )
    min_aesthetic: float = Field(
        5.0,
        # The LAION aesthetic predictor scores 1 to 10.
        ge=0,
        le=10,
        description="Pairs scoring at or below this are dropped (LAION-Aesthetics V2 '5+').",
    )
    min_clip_similarity: float = Field(
        0.28,
        ge=-1,
        le=1,
        description="Pairs whose CLIP image-text cosine similarity is below this are dropped; "
        "equal is kept. 0.28: LAION-5B's English threshold for ViT-B/32 (Schuhmann et al. "
        "2022, section 3.1).",
    )
    samples_per_shard: Int = Field(
        1000, ge=1, le=INT64_MAX, description="Samples per WebDataset tar."
    )
    clip_batch: Int = Field(
        64, ge=1, le=INT64_MAX, description="Images scored per CLIP forward pass."
    )
    latents: bool = Field(
        False,
        description="Also write each kept image's Stable Diffusion VAE posterior (mean and log "
        "variance, float16) for it and its mirror image as <key>.latents.npy, so sd-finetune "
        "with latents: true skips the VAE encoder (a quarter of a step's FLOPs). Reads the "
        "staged stable-diffusion weights; encodes on the GPU.",
    )
    cpu_workers: Int | None = Field(
        None,
        ge=0,
        le=MAX_PROCESSES,
        description="Processes per rank that read, decode and resize the pairs while the GPU "
        "scores (0: in the rank itself); unset: the node's cores shared among its ranks.",
    )


class RecipesSettings(Settings):
    """The recipes' image, where their weights are staged, and each recipe's settings."""

    image: PinnedImage | None = Field(
        None,
        description="The recipes image (recipes/Dockerfile), pinned by digest. Required to "
        "submit; `--render-only` renders with a placeholder.",
    )
    queue: Annotated[DnsLabel, refers(LOCAL_QUEUE, when=scheduled)] = Field(
        "default", description="The training namespace's LocalQueue."
    )
    priority_class: Annotated[DnsLabel, refers(PRIORITY_CLASS, when=scheduled)] = Field(
        "research", description="PriorityClass and Kueue WorkloadPriorityClass of the jobs."
    )
    grace_period_seconds: Int = Field(
        300,
        ge=30,
        le=3600,
        description="terminationGracePeriodSeconds of the recipes' pods: an evicted or "
        "preempted pod finishes its step and saves its checkpoint in this time before SIGKILL "
        "(Kubernetes' default, 30 s, is too short for a UNet's optimizer state).",
    )
    weights_root: SharedPath = Field(
        "weights", description="Where admins stage pretrained weights on shared-data."
    )
    weights: dict[Annotated[str, refers(STAGED_MODEL)], StagedWeights] = Field(
        default_factory=_default_weights,
        description="Staged models by name: stable-diffusion, clip, vgg19.",
    )
    prepare: PrepareSettings = Field(default_factory=PrepareSettings)
    sd_finetune: SdFinetuneSettings = Field(default_factory=SdFinetuneSettings)
    esrgan: EsrganSettings = Field(default_factory=EsrganSettings)

    @field_validator("weights", mode="before")
    @classmethod
    def _over_defaults(cls, value: Any) -> Any:
        # A stack that records one model's checksums keeps the other models' defaults, and an
        # entry that gives only `sha256` keeps its default folder.
        if not isinstance(value, dict):
            return value
        merged: dict[str, Any] = {
            name: entry.model_dump() for name, entry in _default_weights().items()
        }
        for name, entry in value.items():
            if isinstance(entry, dict) and name in merged:
                entry = {**merged[name], **entry}
            merged[name] = entry
        return merged

    def section(self, recipe: str) -> PrepareSettings | SdFinetuneSettings | EsrganSettings:
        return {
            "prepare": self.prepare,
            "sd-finetune": self.sd_finetune,
            "esrgan": self.esrgan,
        }[recipe]


def recipe_settings(settings: RecipesSettings, recipe: str) -> dict[str, Any]:
    """What the image-side recipe reads (as JSON; the stack's `cfg.recipes`): its section, and
    its staged weights with their checksums. Paths stay relative to shared-data; the pod
    resolves them."""
    return {
        "recipe": recipe,
        **settings.section(recipe).model_dump(mode="json"),
        "weights": {
            name: {
                "path": f"{settings.weights_root}/{settings.weights[name].path}",
                "sha256": dict(settings.weights[name].sha256),
            }
            for name in weights_needed(settings, recipe)
        },
    }


def weights_needed(settings: RecipesSettings, recipe: str) -> tuple[str, ...]:
    """The staged models the recipe reads with these settings: prepare reads Stable
    Diffusion's VAE too when it precomputes latents."""
    if recipe == "prepare" and settings.prepare.latents:
        return (*WEIGHTS_NEEDED[recipe], "stable-diffusion")
    return WEIGHTS_NEEDED[recipe]
