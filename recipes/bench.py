"""`make bench-recipes`: first the overlap benchmark (recipes.overlap: the data path against a
stand-in GPU step, measurable on a CPU), then training steps of sd-finetune and esrgan at their
real sizes on one device (the GPU when there is one), through the recipes' own task and step
code, with randomly initialised weights of the real shapes (nothing to stage or download).
Prints the step time (the first step, which pays for warm-up, left out), the peak memory and
the goodput beside the throughput (trainkit.goodput's arithmetic over the run), and writes
out/recipes/bench.json (`--out`). On a GPU the overlap benchmark then runs sd-finetune's real
step, on the model just measured, in place of the stand-in sleep
(`--overlap-step-ms` keeps the stand-in); on a CPU, or without sd-finetune at 512² x 4, the
stand-in.

Shapes: Stable Diffusion 1.5 (its unet/, vae/ and text_encoder/ config.json: UNet blocks
320-640-1280-1280 with 768-wide cross-attention, VAE blocks 128-256-512-512, CLIP ViT-L/14's text
tower); ESRGAN's RRDBNet (23 blocks, 64 features, growth 32) and VGG19 up to conv5_4."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from trainkit import keyed_generator, mixed_precision, peak_memory
from trainkit.goodput import COMPLETED, attempt_record, figures

from recipes import overlap
from recipes.esrgan.losses import VGG19_FILE, VGG19Features
from recipes.esrgan.task import EsrganTask
from recipes.loop import forward_backward
from recipes.sd import Pipeline, SdTask
from recipes.shards import Batch
from recipes.tiny import stage_tiny_tokenizer

OUT = Path("out/recipes/bench.json")
RUNS = ("overlap", "sd-finetune", "esrgan")


def sd15(device: torch.device) -> SdTask:
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    with tempfile.TemporaryDirectory() as folder:
        # Token ids only index the embedding: a byte-level vocabulary exercises the same path.
        stage_tiny_tokenizer(Path(folder))
        tokenizer = CLIPTokenizer.from_pretrained(folder, model_max_length=77)
    text = CLIPTextConfig(
        hidden_size=768, intermediate_size=3072, num_attention_heads=12, num_hidden_layers=12,
        max_position_embeddings=77, vocab_size=49408, hidden_act="quick_gelu",
    )  # fmt: skip
    vae = AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(128, 256, 512, 512), layers_per_block=2, sample_size=512,
    )  # fmt: skip
    scheduler = DDPMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False
    )
    unet = UNet2DConditionModel(sample_size=64, cross_attention_dim=768)
    parts = Pipeline(tokenizer, CLIPTextModel(text), vae, scheduler, unet)
    return SdTask(parts, device, gradient_checkpointing=True)


def esrgan(device: torch.device, crop: int) -> EsrganTask:
    settings = {
        "num_blocks": 23, "num_features": 64, "growth_channels": 32, "pixel_loss": "l1",
        "pixel_weight": 0.1, "perceptual_weight": 1.0, "noise_sigma": 0.05,
        "jpeg_quality": [30, 95], "hr_crop": crop,
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        torch.save(VGG19Features().state_dict(), Path(folder) / VGG19_FILE)
        return EsrganTask(settings, 4, Path(folder), device)


def train_step(task, device: torch.device) -> tuple[torch.nn.Module, Callable[[Batch], float]]:
    """The task's model on `device` and one optimizer step of it on a batch, waited for."""
    model = task.trainable().to(device)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-6)
    dtype, scaler = mixed_precision(device)

    def step(data: Batch) -> float:
        loss = forward_backward(model, task, [data], dtype, scaler)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return float(loss)

    return model, step


def bench_goodput(started_at: float, times: list[float], ended_at: float) -> float:
    """The run's goodput as trainkit's ledger computes it (trainkit.goodput.figures) for one
    attempt of one GPU that kept every step: step time over wall time from the model's move to
    the device, so the warm-up and the set-up between steps count against it (no checkpoints or
    restarts here: a job's own ledger adds those)."""
    attempt = attempt_record(0, 0, 1, started_at, 0, nodes=1)
    attempt.update(step_seconds=sum(times), saves={"0": 0.0, str(len(times)): sum(times)},
                   completed_step=len(times), end=COMPLETED, ended_at=ended_at)  # fmt: skip
    return figures([attempt])["goodput"]


def measure(task, device: torch.device, size: int, batch: int, steps: int):
    """The figures of `steps` steps, and the step itself (the overlap benchmark reuses it)."""
    started_at = time.time()
    model, train = train_step(task, device)
    dtype = mixed_precision(device)[0]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for step in range(steps):
        data = Batch(
            torch.rand(batch, 3, size, size, generator=keyed_generator(step)),
            ["a photograph of a red house by a river"] * batch,
            [keyed_generator(step, sample) for sample in range(batch)],
            device,
        )
        started = time.perf_counter()
        loss = train(data)
        times.append(time.perf_counter() - started)
    peak = peak_memory(device)
    timed = times[1:] or times
    return {
        "image_size": size, "batch_per_gpu": batch, "steps": steps, "loss": loss,
        "step_s": sum(timed) / len(timed), "first_step_s": times[0],
        "samples_per_s": batch * len(timed) / sum(timed), "peak_memory_gib": peak / 2**30,
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "dtype": str(dtype).removeprefix("torch."),
        "goodput": bench_goodput(started_at, times, time.time()),
    }, train  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recipes.bench")
    parser.add_argument(
        "--only", action="append", choices=RUNS, help="run only this part (repeatable)"
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"the figures (default: {OUT})")
    parser.add_argument(
        "--overlap-step-ms", type=float, help="the stand-in GPU step (default: 45 ms)"
    )
    parser.add_argument("--overlap-workers", type=int, default=2, help="loader workers")
    parser.add_argument("--overlap-steps", type=int, default=40)
    parser.add_argument("--steps", type=int, default=3, help="the first is warm-up")
    parser.add_argument("--sd-resolution", type=int, default=512)
    parser.add_argument("--sd-batch", type=int, default=4, help="per GPU (the recipe's default)")
    parser.add_argument("--esrgan-crop", type=int, default=128)
    parser.add_argument(
        "--esrgan-batch", type=int, default=8, help="per GPU (the recipe's default)"
    )
    args = parser.parse_args(argv)
    device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    torch.manual_seed(0)
    runs = args.only or RUNS
    figures = {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"}
    sd_step = None
    if "sd-finetune" in runs:
        task = sd15(device)
        figures["sd-finetune"], sd_step = measure(
            task, device, args.sd_resolution, args.sd_batch, args.steps
        )
        save(args.out, figures)
    # The real GPU step feeds on the overlap's own batches: sd-finetune's shapes exactly.
    real = (
        device.type == "cuda" and args.overlap_step_ms is None
        and (args.sd_resolution, args.sd_batch) == (overlap.CROP, overlap.MICRO_BATCH)
    )  # fmt: skip
    if "overlap" in runs:
        figures["overlap"] = overlap.run(
            args.overlap_step_ms, args.overlap_workers, args.overlap_steps,
            sd_step if real else None, device,
        )  # fmt: skip
        save(args.out, figures)
    if sd_step is not None:
        del task, sd_step
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if "esrgan" in runs:
        task = esrgan(device, args.esrgan_crop)
        figures["esrgan"], _ = measure(
            task, device, args.esrgan_crop, args.esrgan_batch, args.steps
        )
    print(f"device: {figures['device']}")
    for recipe in ("sd-finetune", "esrgan"):
        if recipe in figures:
            f = figures[recipe]
            print(
                f"{recipe:12} {f['image_size']}² x {f['batch_per_gpu']}: step {f['step_s']:.3f} s "
                f"(first {f['first_step_s']:.2f} s), {f['samples_per_s']:.1f} samples/s, "
                f"peak {f['peak_memory_gib']:.1f} GiB, {f['trainable_parameters']:,} trained "
                f"parameters, {f['dtype']}, goodput {f['goodput']:.1%}"
            )
    save(args.out, figures)
    return 0


def save(path: Path, figures: dict) -> None:
    """The figures so far, after each part: a run stopped at its time limit keeps them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
