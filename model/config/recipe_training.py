"""The training recipes' settings (`gpu-platform:recipes`, model/config/recipes.py): the batch
every training recipe reaches exactly, what they share, and sd-finetune's and esrgan's own.
Defaults come from the source documents and the recipes' references (diffusers'
train_text_to_image.py, the ESRGAN paper) unless a field says otherwise."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from model.config.base import FieldProblem, Int, Settings, shaped
from model.config.bounds import INT64_MAX, MAX_GPU_MEMORY_GIB, MAX_PROCESSES

# A path inside the shared-data volume: relative, no `..`, no empty or dot segments.
RELATIVE_WORDS = "a relative path inside shared-data, e.g. datasets/laion-512 (no leading /, no ..)"
SharedPath = Annotated[
    str, shaped(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*", RELATIVE_WORDS)
]


class BatchSettings(Settings):
    """The global batch, and what one GPU takes per micro-step; gradient accumulation makes up
    the difference, so global_batch must equal micro_batch x GPUs x accumulation exactly."""

    global_batch: Int = Field(
        ge=1, le=INT64_MAX, description="Samples per optimizer step, over every GPU."
    )
    micro_batch: Int = Field(
        ge=1, le=INT64_MAX, description="Samples per GPU per forward/backward pass."
    )

    @model_validator(mode="after")
    def _reachable(self) -> BatchSettings:
        # GPUs x accumulation = global_batch / micro_batch: a whole number, or no job of any
        # size reaches the global batch (contract/batch.py refuses it at every GPU count).
        if self.global_batch % self.micro_batch:
            low = self.global_batch - self.global_batch % self.micro_batch
            near = [n for n in (low, low + self.micro_batch) if n >= self.micro_batch]
            raise FieldProblem(
                "global_batch",
                f"{self.global_batch} is not a multiple of micro_batch ({self.micro_batch}), so "
                f"no GPU count reaches it; give {' or '.join(map(str, near))}, or another "
                "micro_batch",
            )
        return self


class TrainingSettings(BatchSettings):
    """What every training recipe shares."""

    learning_rate: float = Field(gt=0, le=1, description="Peak learning rate (AdamW).")
    warmup_steps: Int = Field(
        0, ge=0, le=INT64_MAX, description="Linear warm-up before the cosine decay."
    )
    checkpoint_every: Int = Field(
        1000,
        ge=1,
        le=INT64_MAX,
        description="Steps between DCP checkpoints on shared-data (and on SIGTERM).",
    )
    keep_checkpoints: Int = Field(
        3, ge=1, le=INT64_MAX, description="Checkpoints kept; older ones deleted."
    )
    seed: Int = Field(
        0, ge=0, le=INT64_MAX, description="Seeds weights init, data order and augmentation."
    )
    min_gpu_memory_gib: Int = Field(
        ge=1,
        le=MAX_GPU_MEMORY_GIB,
        description="Smallest GPU (memory, GiB) the recipe at its defaults fits on.",
    )
    gpus_per_node: Int | None = Field(
        None,
        ge=1,
        le=16,
        description="GPUs per node a submit takes unless --gpus-per-node says; unset: every "
        "GPU of the pool's nodes.",
    )
    log_every: Int = Field(
        10,
        ge=1,
        le=INT64_MAX,
        description="Steps between reads of the loss (log line and gauges). Each read waits "
        "for the GPU's queued work, so the loss stays on the device in between (platform "
        "choice).",
    )
    loader_workers: Int = Field(
        2,
        ge=0,
        le=MAX_PROCESSES,
        description="Data-loader worker processes per GPU that decode and augment ahead of the "
        "step (0: in the training process, serial with it). diffusers' "
        "--dataloader_num_workers defaults to 0; 2 hides a 4 x 512² micro-batch's ~30 ms of "
        "decoding behind the GPU step (make bench-recipes, overlap).",
    )
    compile: bool = Field(
        False,
        description="torch.compile the trained model (TorchInductor): faster steps after a "
        "compile of minutes at the first step; off by default because every restart, resume "
        "included, pays the compile again.",
    )
    max_grad_norm: float | None = Field(
        1.0,
        gt=0,
        le=1e6,
        description="Gradients clipped to this global L2 norm after unscaling (diffusers' "
        "train_text_to_image.py --max_grad_norm, default 1.0); null: no clipping.",
    )


class SdFinetuneSettings(TrainingSettings):
    """Stable Diffusion UNet fine-tuning (diffusers); the VAE and text encoder stay frozen."""

    learning_rate: float = Field(
        3e-6, gt=0, le=1, description="Peak learning rate, cosine-annealed."
    )
    global_batch: Int = Field(
        32, ge=1, le=INT64_MAX, description="Samples per optimizer step (4 x 8 GPUs)."
    )
    micro_batch: Int = Field(4, ge=1, le=INT64_MAX, description="Samples per GPU per micro-step.")
    steps: Int = Field(150_000, ge=1, le=INT64_MAX, description="Optimizer steps.")
    resolution: Int = Field(
        512,
        ge=8,
        le=8192,
        multiple_of=8,
        description="Training crop side, pixels; a multiple of 8, the VAE's downsampling.",
    )
    dataset: SharedPath = Field(
        "datasets/laion-aesthetics-512", description="WebDataset shards (prepare's output)."
    )
    latents: bool = Field(
        False,
        description="Train on the VAE posteriors prepare precomputed (prepare.latents: true), "
        "a sample's flip drawn as for an image, instead of encoding every crop: needs "
        "resolution equal to prepare's (the whole image is the crop).",
    )
    gradient_checkpointing: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Recompute the UNet's activations in the backward pass (about a third "
        "more compute for a fraction of the activation memory). auto: only when a trial "
        "micro-step without it would leave under 10 % of the GPU's memory free (or does not "
        "fit); on a CPU always, as before.",
    )
    ema_decay: float | None = Field(
        0.9999,
        gt=0,
        lt=1,
        description="Keep an exponential moving average of the UNet's weights with this decay "
        "(diffusers' EMAModel default 0.9999, warmed up as (1 + n) / (10 + n) of its step n), "
        "exported as <output>/unet (the raw weights as <output>/unet-raw) and used for the "
        "validation samples; null: no EMA, the raw weights exported.",
    )
    snr_gamma: float | None = Field(
        5.0,
        gt=0,
        le=1e6,
        description="Min-SNR loss weighting min(SNR(t), γ)/SNR(t) (min(SNR, γ)/(SNR + 1) for "
        "v-prediction): γ = 5 as recommended by Hang et al. 2023, 'Efficient Diffusion "
        "Training via Min-SNR Weighting Strategy', and diffusers' --snr_gamma help; null: "
        "plain MSE.",
    )
    noise_offset: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Add this times a per-sample, per-channel normal draw to the noise "
        "(diffusers' --noise_offset, default 0; 0.1 is the value of crosslabs' 'Diffusion "
        "with Offset Noise'), so the model learns to change an image's mean brightness.",
    )
    caption_dropout: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Share of samples trained on the empty prompt, which keeps "
        "classifier-free guidance working: 10 % as Stable Diffusion v1 was trained (the "
        "CompVis model card: '10% dropping of the text-conditioning').",
    )
    validation_prompts: list[str] = Field(
        default_factory=lambda: [
            "a photograph of an astronaut riding a horse",
            "a red house by a river, oil painting",
        ],
        description="Prompts sampled at each checkpoint where a GPU is present, written as "
        "PNGs beside the checkpoint (platform choice); empty: no samples.",
    )
    validation_seed: Int = Field(
        0, ge=0, le=INT64_MAX, description="Seed of the validation samples' noise."
    )
    validation_steps: Int = Field(
        25,
        ge=1,
        le=INT64_MAX,
        description="Denoising steps per validation sample (DDIM; platform choice).",
    )
    min_gpu_memory_gib: Int = Field(
        40,
        ge=1,
        le=MAX_GPU_MEMORY_GIB,
        description="SD 1.5 UNet at 512², 4 per GPU, AdamW, bf16 autocast with gradient "
        "checkpointing: platform estimate, see recipes/README.md for measured peaks.",
    )
    output: SharedPath = Field("runs/sd-finetune", description="Checkpoints and reports.")


class EsrganSettings(TrainingSettings):
    """ESRGAN's RRDB generator trained on degraded crops: 2× first, then 4× fine-tuned from it."""

    learning_rate: float = Field(
        1e-4, gt=0, le=1, description="Peak lr (ESRGAN paper, section 4.1)."
    )
    global_batch: Int = Field(
        16, ge=1, le=INT64_MAX, description="Samples per step (ESRGAN paper: 16)."
    )
    micro_batch: Int = Field(
        8,
        ge=1,
        le=INT64_MAX,
        description="Samples per GPU per micro-step. A 16.7M-parameter generator is "
        "launch-bound with 2 per GPU on 8 GPUs: 8 per GPU on 2 GPUs (or accumulation 2 on 1) "
        "keeps each GPU busy.",
    )
    gpus_per_node: Int | None = Field(
        2,
        ge=1,
        le=16,
        description="GPUs a submit takes unless --gpus-per-node says (1-2 fit ESRGAN's size).",
    )
    hr_crop: Int = Field(
        128, ge=16, le=8192, description="High-resolution crop side (ESRGAN paper: 128)."
    )
    steps_2x: Int = Field(
        100_000, ge=1, le=INT64_MAX, description="Steps of the 2× stage (platform choice)."
    )
    steps_4x: Int = Field(
        50_000,
        ge=1,
        le=INT64_MAX,
        description="Steps of the 4× stage, from the 2× weights (platform choice).",
    )
    num_blocks: Int = Field(23, ge=1, le=4096, description="RRDB blocks (ESRGAN paper: 23).")
    num_features: Int = Field(64, ge=1, le=4096, description="Feature channels (ESRGAN paper: 64).")
    growth_channels: Int = Field(
        32, ge=1, le=4096, description="Dense-block growth (ESRGAN paper: 32)."
    )
    pixel_loss: Literal["l1", "mse"] = Field(
        "l1",
        description="The pixel term. The source documents name it L1 but compute MSE; L1 is "
        "the default, as they describe and as ESRGAN trains; mse reproduces their code.",
    )
    pixel_weight: float = Field(
        0.1, ge=0, le=1e6, description="Weight of the pixel loss (sources: 0.1)."
    )
    perceptual_weight: float = Field(1.0, ge=0, le=1e6, description="Weight of the VGG19 loss.")
    noise_sigma: float = Field(
        0.05, ge=0, le=1, description="Gaussian noise σ on [0, 1] pixels (sources: 0.05)."
    )
    # Pillow's JPEG quality scale is 1 to 100.
    jpeg_quality: tuple[
        Annotated[Int, Field(ge=1, le=100)], Annotated[Int, Field(ge=1, le=100)]
    ] = Field(
        (30, 95),
        description="JPEG quality drawn uniformly in [low, high] (Real-ESRGAN's range).",
    )
    dataset: SharedPath = Field(
        "datasets/laion-aesthetics-512", description="WebDataset shards of HR images."
    )
    min_gpu_memory_gib: Int = Field(
        24,
        ge=1,
        le=MAX_GPU_MEMORY_GIB,
        description="RRDB 23 blocks at 128² HR crops, 8 per GPU (platform estimate).",
    )
    output: SharedPath = Field("runs/esrgan", description="Checkpoints and reports.")

    @model_validator(mode="after")
    def _quality_range(self) -> EsrganSettings:
        low, high = self.jpeg_quality
        if not 1 <= low <= high <= 100:
            raise FieldProblem(
                "jpeg_quality", f"[{low}, {high}]: need 1 <= low <= high <= 100 (Pillow's scale)"
            )
        return self
