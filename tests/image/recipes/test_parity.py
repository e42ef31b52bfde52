"""The recipes at parity with diffusers' train_text_to_image.py: SD's loss written out as that
script computes it, with diffusers' own DDPMScheduler and the same draws; the parity settings'
defaults against their sources; when gradient checkpointing is on; the CUDA precision branches
on a mocked device. Expected values come from the sources named, never from the recipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from trainkit import keyed_generator, mixed_precision

from recipes.fit import checkpointing
from recipes.sd import SdTask, load_pipeline
from recipes.shards import Batch
from recipes.tiny import stage_tiny_sd

ROOT = Path(__file__).resolve().parents[3]
CPU = torch.device("cpu")
GIB = 2**30


@pytest.fixture(scope="module")
def sd_folder(tmp_path_factory) -> Path:
    return stage_tiny_sd(tmp_path_factory.mktemp("sd") / "stable-diffusion")


def diffusers_loss(parts, batch: Batch, gamma, offset: float, dropout: float) -> torch.Tensor:
    """train_text_to_image.py's loss (diffusers 0.42.1, examples/text_to_image), written out:
    the posterior sample mean + std·ε times the VAE's scaling factor; noise plus the offset
    times a per-channel normal; x_t = √ᾱ_t·x_0 + √(1-ᾱ_t)·ε; the target ε, or
    v = √ᾱ_t·ε - √(1-ᾱ_t)·x_0; Min-SNR weights min(SNR, γ)/SNR (ε) or /(SNR + 1) (v) with
    SNR = ᾱ_t/(1-ᾱ_t) (Hang et al. 2023); captions dropped to "" (--proportion_empty_prompts).
    The draws are taken from each sample's generator in the order sd.py documents."""
    scheduler = parts.scheduler
    alphas = scheduler.alphas_cumprod
    with torch.no_grad():
        posterior = parts.vae.encode(batch.images * 2 - 1).latent_dist
    shape = posterior.mean.shape[1:]
    draws = []
    for g in batch.generators:
        eps_posterior, noise = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
        t = int(torch.randint(0, 1000, (1,), generator=g))
        u = float(torch.rand(1, generator=g))
        channel = torch.randn((shape[0], 1, 1), generator=g)
        draws.append((eps_posterior, noise, t, u, channel))
    latents = torch.stack(
        [
            (posterior.mean[i] + posterior.std[i] * d[0]) * parts.vae.config.scaling_factor
            for i, d in enumerate(draws)
        ]
    )
    noise = torch.stack([d[1] + offset * d[4] for d in draws])
    t = torch.tensor([d[2] for d in draws])
    a = alphas[t].float().view(-1, 1, 1, 1)
    noisy = a.sqrt() * latents + (1 - a).sqrt() * noise
    v_prediction = scheduler.config.prediction_type == "v_prediction"
    target = a.sqrt() * noise - (1 - a).sqrt() * latents if v_prediction else noise
    captions = ["" if d[3] < dropout else c for d, c in zip(draws, batch.captions, strict=True)]
    tokens = parts.tokenizer(
        captions, padding="max_length", truncation=True,
        max_length=parts.tokenizer.model_max_length, return_tensors="pt",
    ).input_ids  # fmt: skip
    with torch.no_grad():
        text = parts.text_encoder(tokens)[0]
    prediction = parts.unet(noisy, t, text).sample
    per_sample = F.mse_loss(prediction.float(), target.float(), reduction="none").mean([1, 2, 3])
    if gamma is None:
        return per_sample.mean()
    snr = alphas[t].float() / (1 - alphas[t].float())
    weights = torch.minimum(snr, torch.full_like(snr, gamma))
    weights = weights / (snr + 1) if v_prediction else weights / snr
    return (per_sample * weights).mean()


@pytest.mark.parametrize("prediction", ["epsilon", "v_prediction"])
@pytest.mark.parametrize("gamma", [None, 5.0])
def test_the_sd_loss_is_diffusers_formula(sd_folder, prediction, gamma):
    from diffusers import DDPMScheduler

    parts = load_pipeline(sd_folder)
    parts.scheduler = DDPMScheduler.from_config(parts.scheduler.config, prediction_type=prediction)
    task = SdTask(parts, CPU, False, snr_gamma=gamma, noise_offset=0.1, caption_dropout=0.5)
    images = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    captions = ["red cat", "blue dog", "green tree", "sky river"]

    def batch() -> Batch:
        return Batch(images, captions, [keyed_generator(7, i) for i in range(4)], CPU)

    dropped = [float(torch.rand(1, generator=_after_three(g))) < 0.5 for g in batch().generators]
    assert any(dropped) and not all(dropped)  # both caption branches are exercised
    expected = diffusers_loss(parts, batch(), gamma, 0.1, 0.5)
    torch.testing.assert_close(task.loss(task.unet, batch()), expected, rtol=1e-5, atol=1e-7)


def _after_three(g: torch.Generator) -> torch.Generator:
    """`g` past the posterior noise, the noise and the timestep (the tiny VAE's 4x16x16)."""
    torch.randn((4, 16, 16), generator=g)
    torch.randn((4, 16, 16), generator=g)
    torch.randint(0, 1000, (1,), generator=g)
    return g


def test_the_snr_is_that_of_diffusers_compute_snr(sd_folder):
    from diffusers.training_utils import compute_snr

    from recipes.sd import snr

    scheduler = load_pipeline(sd_folder).scheduler
    t = torch.tensor([0, 1, 250, 500, 999])
    torch.testing.assert_close(snr(scheduler, t), compute_snr(scheduler, t))


def recipe_settings(recipe: str) -> dict:
    asked = subprocess.run(
        [sys.executable, "-m", "tools.recipe_settings", recipe], input="{}", cwd=ROOT,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(asked.stdout)


def test_the_parity_defaults_are_their_sources():
    sd = recipe_settings("sd-finetune")
    # diffusers train_text_to_image.py: --max_grad_norm 1.0; EMAModel(decay=0.9999).
    assert (sd["max_grad_norm"], sd["ema_decay"]) == (1.0, 0.9999)
    # Hang et al. 2023 (Min-SNR): γ = 5; diffusers' --snr_gamma help recommends 5.0.
    assert sd["snr_gamma"] == 5.0
    # CompVis Stable Diffusion v1 model card: "10% dropping of the text-conditioning".
    assert sd["caption_dropout"] == 0.1
    # diffusers' --noise_offset default: 0 (off).
    assert sd["noise_offset"] == 0.0
    assert sd["gradient_checkpointing"] == "auto"
    # The loop's constants before they became settings: log every 10 steps, 2 loader workers.
    assert (sd["log_every"], sd["loader_workers"], sd["compile"]) == (10, 2, False)
    esrgan = recipe_settings("esrgan")
    assert esrgan["max_grad_norm"] == 1.0 and esrgan.get("ema_decay") is None


# --- gradient checkpointing only when the micro-batch does not fit --------------------------

# 860M trained parameters (SD 1.5's UNet) x (8 B AdamW + 4 B EMA).
SD_STATE = 859_520_964 * 12


@pytest.mark.parametrize(
    ("total_gib", "trial_gib", "expected"),
    [
        # NVIDIA H100 SXM: 80 GB. 30 GiB + 9.6 GiB of state is half of it: off.
        (80, 30, False),
        # NVIDIA A100 40GB: the same micro-step leaves under 10 % free: on.
        (40, 30, True),
        # A trial that ran out of memory: on.
        (24, None, True),
    ],
)
def test_checkpointing_is_on_only_where_the_micro_batch_does_not_fit(
    total_gib, trial_gib, expected
):
    trial = None if trial_gib is None else trial_gib * GIB
    on, why = checkpointing("auto", "cuda", total_gib * GIB, trial, SD_STATE)
    assert on is expected
    assert why.startswith(f"gradient_checkpointing {'on' if expected else 'off'}")


def test_on_a_cpu_auto_keeps_checkpointing_on_and_a_set_mode_is_obeyed():
    assert checkpointing("auto", "cpu", 0, None, SD_STATE)[0] is True
    assert checkpointing("off", "cuda", 40 * GIB, None, SD_STATE)[0] is False
    assert checkpointing("on", "cuda", 80 * GIB, GIB, 0)[0] is True


# --- the CUDA precision branches on a mocked device -----------------------------------------


@pytest.fixture
def cuda(monkeypatch):
    """A CUDA device that answers bf16 support as told; the scaler sees CUDA available."""
    asked: list[dict] = []

    def answer(supported: bool) -> list[dict]:
        def is_bf16_supported(**kwargs) -> bool:
            asked.append(kwargs)
            return supported

        monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        return asked

    return answer


def test_a_gpu_without_native_bf16_trains_fp16_with_a_gradient_scaler(cuda):
    # NVIDIA: bf16 tensor cores from Ampere (sm_80); Volta and Turing only emulate it, so the
    # question must exclude emulation (torch.cuda.is_bf16_supported(including_emulation=False)).
    asked = cuda(False)
    dtype, scaler = mixed_precision(torch.device("cuda", 0))
    assert dtype == torch.float16 and scaler.is_enabled()
    assert asked == [{"including_emulation": False}]


def test_a_gpu_with_bf16_trains_bf16_without_a_scaler(cuda):
    cuda(True)
    dtype, scaler = mixed_precision(torch.device("cuda", 0))
    assert dtype == torch.bfloat16 and not scaler.is_enabled()


def test_a_cpu_trains_bf16_without_a_scaler():
    dtype, scaler = mixed_precision(CPU)
    assert dtype == torch.bfloat16 and not scaler.is_enabled()


# --- gradient clipping after unscaling --------------------------------------------------------


@pytest.mark.parametrize("scaled", [False, True])
def test_gradients_are_clipped_to_norm_1_after_unscaling(scaled):
    """diffusers' --max_grad_norm 1.0 clips the true gradients: with fp16's loss scale of 2^16
    a clip before unscaling would leave a step 65,536 times too small."""
    from recipes.loop import optimizer_step

    weight = torch.nn.Parameter(torch.zeros(3))
    model = torch.nn.ParameterList([weight])
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, enabled=scaled)
    loss = (weight * torch.tensor([30.0, 40.0, 0.0])).sum()  # gradient (30, 40, 0): norm 50
    scaler.scale(loss).backward()
    optimizer_step(model, optimizer, scaler, 1.0)
    # SGD at lr 1 moves by minus the clipped gradient: (30, 40, 0) / 50.
    torch.testing.assert_close(weight.detach(), torch.tensor([-0.6, -0.8, 0.0]))
    assert weight.grad is None


# --- validation samples -----------------------------------------------------------------------


def test_validation_samples_are_drawn_only_where_a_gpu_is_present():
    from recipes.validation import skipped_because

    assert skipped_because("cuda", ["a red house"]) is None
    assert "no GPU" in skipped_because("cpu", ["a red house"])
    assert "validation_prompts is empty" in skipped_because("cuda", [])


def test_validation_samples_are_pngs_of_the_prompts_the_same_at_every_checkpoint(
    sd_folder, tmp_path
):
    """The sampler itself, on this CPU with the tiny pipeline: one PNG per prompt at the
    training resolution, and the same seed gives the same image at the next checkpoint."""
    from PIL import Image

    from recipes.validation import sample

    task = SdTask(load_pipeline(sd_folder), CPU, False)
    prompts = ["a red house", "a blue river"]
    runs = [
        sample(task, task.unet, prompts, seed=0, steps=2, resolution=32, folder=tmp_path / name)
        for name in ("step-1", "step-2")
    ]
    assert [p.name for p in runs[0]] == ["00.png", "01.png"]
    images = [[Image.open(p) for p in run] for run in runs]
    assert all(image.size == (32, 32) for image in images[0])
    assert [im.tobytes() for im in images[0]] == [im.tobytes() for im in images[1]]
    assert images[0][0].tobytes() != images[0][1].tobytes()  # another prompt, another seed
    assert task.unet.training  # handed back to training as it was


# --- sd-finetune on prepare's latents ---------------------------------------------------------


@pytest.fixture(scope="module")
def latent_shards(sd_folder, tmp_path_factory) -> Path:
    """prepare's shards with latents, from lossless (PNG) img2dataset input at 32²."""
    import numpy as np
    from PIL import Image

    from recipes import prepare
    from recipes.weights import checksums

    root = tmp_path_factory.mktemp("shared")
    rng = np.random.default_rng(0)
    for index in range(8):
        folder = root / "raw" / f"{index // 4:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
        image = Image.fromarray(pixels).resize((40, 36), Image.Resampling.BICUBIC)
        image.save(folder / f"{index:09d}.png")
        (folder / f"{index:09d}.txt").write_text(["red cat", "blue dog"][index % 2])
        (folder / f"{index:09d}.json").write_text(json.dumps({"aesthetic": 6.0}))
    settings = {
        "recipe": "prepare", "source": "raw", "output": "shards", "resolution": 32,
        "aesthetic_key": "aesthetic", "min_aesthetic": 5.0, "min_clip_similarity": 0.0,
        "samples_per_shard": 4, "clip_batch": 4, "latents": True, "cpu_workers": 0,
        "weights": {"stable-diffusion": {"path": str(sd_folder), "sha256": checksums(sd_folder)}},
    }  # fmt: skip
    prepare.run(settings, root, root / "out", scorer=lambda images, texts: [1.0] * len(texts))
    return root / "shards"


def test_training_on_latents_skips_the_encoder_and_trains_what_images_train(
    sd_folder, latent_shards
):
    """The same positions, the same flips and draws: the loss on prepare's latents is the loss
    on the images (up to the moments' float16), and the VAE encoder is never called."""
    from recipes.shards import Posteriors, ShardStream, micro_batch, rank_shards

    task = SdTask(load_pipeline(sd_folder), CPU, False, snr_gamma=5.0, caption_dropout=0.1)
    stream = ShardStream(rank_shards(latent_shards, 0, 1), seed=3)
    posteriors = Posteriors(stream, 0, 32)
    flips = {torch.equal(posteriors[at][0], stream.sample_latents(at)[1][1]) for at in range(8)}
    assert flips == {False, True}
    for position in (0, 2, 4, 6):  # 8 samples: both flips are drawn among them
        on_images = task.loss(task.unet, micro_batch(stream, position, 2, 32, 0, CPU))
        batch = micro_batch(stream, position, 2, 32, 0, CPU, latents=True)
        encode, task.vae.encode = task.vae.encode, None  # any call would fail
        try:
            on_latents = task.loss(task.unet, batch)
        finally:
            task.vae.encode = encode
        assert batch.images is None and batch.latents.shape == (2, 8, 16, 16)
        torch.testing.assert_close(on_latents, on_images, rtol=1e-2, atol=1e-4)


def test_latents_of_another_size_than_the_crop_are_refused(latent_shards):
    from recipes.shards import DataError, ShardStream, micro_batch, rank_shards

    stream = ShardStream(rank_shards(latent_shards, 0, 1), seed=0)
    with pytest.raises(DataError, match=r"resolution must equal recipes\.prepare\.resolution"):
        micro_batch(stream, 0, 1, 16, 0, CPU, latents=True)


def test_prepare_with_latents_reads_the_staged_stable_diffusion_weights():
    asked = subprocess.run(
        [sys.executable, "-m", "tools.recipe_settings", "prepare"], cwd=ROOT,
        input=json.dumps({"prepare": {"latents": True}}), capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    assert sorted(json.loads(asked.stdout)["weights"]) == ["clip", "stable-diffusion"]
    assert sorted(recipe_settings("prepare")["weights"]) == ["clip"]


def test_the_trial_micro_step_reports_its_peak_or_none_when_out_of_memory(monkeypatch):
    """recipes.fit.trial_peak on a mocked GPU: the peak torch reports after the step and its
    backward, None when it runs out of memory; the gradients are freed either way."""
    from recipes.fit import trial_peak

    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda d: calls.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda d: 7 * GIB)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty"))
    model = torch.nn.Linear(2, 1)
    assert trial_peak(lambda: model(torch.ones(1, 2)).sum(), model, "cuda:0") == 7 * GIB
    assert model.weight.grad is None and calls == ["reset", "empty"]

    def too_big() -> torch.Tensor:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    assert trial_peak(too_big, model, "cuda:0") is None
