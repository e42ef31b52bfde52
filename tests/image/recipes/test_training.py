"""The recipes' shared training loop, staged weights and metrics, on tiny models on this CPU.

Expected values are literals from the issue and the vendors' documentation; diffusers'
get_cosine_schedule_with_warmup is the independent reference for the learning-rate curve."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import torch
from trainkit.metrics import MetricsServer, exposition

from contract.batch import BatchError, accumulation_steps
from recipes.bench import sd15
from recipes.loop import forward_backward, learning_rate
from recipes.sd import SdTask, load_pipeline
from recipes.shards import DataError, ShardStream, micro_batch, rank_shards
from recipes.tiny import (
    stage_tiny_clip,
    stage_tiny_sd,
    stage_tiny_vgg,
    synthetic_img2dataset,
    synthetic_shards,
)
from recipes.weights import WeightsError, checksums, require
from tests.helpers.hang import HANG_S
from tests.helpers.loopback import free_port
from tests.helpers.tools import promtool

ROOT = Path(__file__).resolve().parents[3]
SD_WEIGHTS = "weights/stable-diffusion-v1-5"


def recipe_settings(recipe: str, **overrides) -> dict:
    """What the config model hands the recipe's pod for these `gpu-platform:recipes` overrides,
    asked through the program's command: the image side's tests import nothing of the program."""
    asked = subprocess.run(
        [sys.executable, "-m", "tools.recipe_settings", recipe],
        input=json.dumps(overrides), cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(asked.stdout)


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shared-data")
    stage_tiny_sd(root / SD_WEIGHTS)
    stage_tiny_vgg(root / "weights/vgg19")
    synthetic_shards(root / "datasets" / "laion-aesthetics-512", shards=2, per_shard=6, size=40)
    return root


def sd_settings(shared: Path, **overrides) -> dict:
    weights = {"path": "stable-diffusion-v1-5", "sha256": checksums(shared / SD_WEIGHTS)}
    section = {"global_batch": 4, "micro_batch": 1, "steps": 4, "resolution": 32}
    section |= {"checkpoint_every": 10, "learning_rate": 1e-3, **overrides}
    weights = {"stable-diffusion": weights}
    return recipe_settings("sd-finetune", weights=weights, sd_finetune=section)


# The issue: global batch 32 = 4 per GPU x 8 GPUs; accumulation makes up the difference.
@pytest.mark.parametrize(("gpus", "accumulation"), [(8, 1), (4, 2), (2, 4), (1, 8)])
def test_accumulation_makes_up_the_global_batch(gpus, accumulation):
    assert accumulation_steps(32, 4, gpus) == accumulation


def test_a_global_batch_the_gpus_cannot_reach_is_refused_with_what_would_work():
    with pytest.raises(BatchError) as refused:
        accumulation_steps(32, 4, 3)
    assert str(refused.value) == (
        "global_batch 32 is not a multiple of 12; with 3 GPUs at micro_batch 4 reachable "
        "global batches are 12, 24, 36, …; or use 1, 2, 4, 8 GPUs"
    )


# The source documents: 3e-6, cosine annealing over 150K steps. cos(pi/4) = sqrt(2)/2.
@pytest.mark.parametrize(
    ("step", "expected"),
    [(0, 3e-6), (37_500, 3e-6 * (2 + math.sqrt(2)) / 4), (75_000, 1.5e-6), (150_000, 0.0)],
)
def test_the_sd_learning_rate_anneals_on_a_cosine(step, expected):
    assert learning_rate(step, 3e-6, 0, 150_000) == pytest.approx(expected, rel=1e-12, abs=1e-20)


@pytest.mark.parametrize("warmup", [0, 500])
def test_the_schedule_is_diffusers_cosine_with_warmup(warmup):
    from diffusers.optimization import get_cosine_schedule_with_warmup

    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=3e-6)
    reference = get_cosine_schedule_with_warmup(optimizer, warmup, 150_000)
    for step in (0, 1, 250, 499, 500, 1000, 74_999, 120_000, 149_999):
        factor = reference.lr_lambdas[0](step)
        assert learning_rate(step, 3e-6, warmup, 150_000) == pytest.approx(3e-6 * factor)


def test_accumulated_micro_batches_give_the_gradient_of_one_large_batch(shared):
    task = SdTask(load_pipeline(shared / SD_WEIGHTS), torch.device("cpu"), True)
    model = task.trainable()
    stream = ShardStream(rank_shards(shared / "datasets/laion-aesthetics-512", 0, 1), seed=0)
    scaler = torch.amp.GradScaler("cuda", enabled=False)

    def gradients(batches):
        model.zero_grad(set_to_none=True)
        loss = forward_backward(model, task, batches, torch.float32, scaler)
        return loss, [p.grad.clone() for p in model.parameters()]

    cpu = torch.device("cpu")
    one_loss, one = gradients([micro_batch(stream, 0, 4, 32, 0, cpu)])
    parts = [micro_batch(stream, position, 2, 32, 0, cpu) for position in (0, 2)]
    accumulated_loss, accumulated = gradients(parts)
    assert float(accumulated_loss) == pytest.approx(float(one_loss), rel=1e-5)
    worst = max(
        float((a - b).abs().max() / (b.abs().max() + 1e-12))
        for a, b in zip(accumulated, one, strict=True)
    )
    assert worst < 1e-4


def test_shards_fewer_than_ranks_are_refused(tmp_path):
    synthetic_shards(tmp_path, shards=1, per_shard=2, size=16)
    with pytest.raises(DataError, match="1 shard\\(s\\) for 2 ranks"):
        rank_shards(tmp_path, 0, 2)


def launch(settings: dict, shared: Path, out: Path, *extra: str, ranks: int = 2, env=None):
    """`python -m recipes <settings' recipe>` under torchrun with `ranks` gloo ranks."""
    env = {
        **os.environ,
        **(env or {}),
        "RECIPE_SETTINGS": json.dumps(settings),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "bootstrap"), str(ROOT)]),
        "MASTER_PORT": str(free_port()),
    }
    env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
    runner = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"]
    recipe = settings["recipe"]
    command = [sys.executable, *(runner if ranks > 1 else []), "-m", "recipes", recipe]
    command += ["--shared-data", str(shared), "--out", str(out), "--metrics-port", "0", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=HANG_S)


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def test_a_resumed_run_reproduces_the_next_losses_exactly(shared, tmp_path):
    settings = sd_settings(shared)
    reference = launch(settings, shared, tmp_path / "reference")
    assert reference.returncode == 0, reference.stderr[-3000:]
    interrupted = launch(settings, shared, tmp_path / "run", "--interrupt-after", "2")
    # torchrun reports a worker that exited 143 (saved and stopped on SIGTERM) as a failure.
    assert interrupted.returncode == 1, interrupted.stderr[-3000:]
    assert "exitcode  : 143" in interrupted.stderr
    first = report(tmp_path / "run")
    assert (first["steps"], first["interrupted"], first["resumed"]) == (2, True, False)
    # The checkpoint, and beside it the job's goodput ledger (trainkit.goodput).
    assert sorted(p.name for p in (tmp_path / "run/checkpoints").iterdir()) == [
        "goodput.json",
        "step-00000002",
    ]
    resumed = launch(settings, shared, tmp_path / "run")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    second = report(tmp_path / "run")
    assert (second["steps"], second["resumed"]) == (4, True)
    # Bitwise: a float's repr round-trips through JSON. The resumed report keeps both segments:
    # the losses before the interruption come back with the checkpoint.
    whole = report(tmp_path / "reference")["losses"]
    assert (first["losses"], second["losses"]) == (whole[:2], whole)
    assert (second["loss_first"], second["loss_last"]) == (whole[0], whole[-1])
    assert second["validation"] == {
        "skipped": "no GPU: sampling on a CPU would stall the ranks for minutes per checkpoint"
    }
    # The EMA is exported as the model (diffusers' script saves the EMA UNet), the raw beside it.
    assert (tmp_path / "run/unet/diffusion_pytorch_model.safetensors").is_file()
    assert (tmp_path / "run/unet-raw/diffusion_pytorch_model.safetensors").is_file()
    exported = (tmp_path / "run/metrics.txt").read_text()
    assert 'gpu_platform_training_step{recipe="sd-finetune"} 4.0' in exported


def test_esrgan_resumed_in_its_4x_stage_reproduces_the_losses_of_both_stages(shared, tmp_path):
    weights = {"vgg19": {"path": "vgg19", "sha256": checksums(shared / "weights/vgg19")}}
    section = {"global_batch": 4, "micro_batch": 1, "steps_2x": 3, "steps_4x": 2, "hr_crop": 16}
    section |= {"num_blocks": 1, "num_features": 8, "growth_channels": 4, "checkpoint_every": 10}
    settings = recipe_settings("esrgan", weights=weights, esrgan=section)
    reference = launch(settings, shared, tmp_path / "reference")
    assert reference.returncode == 0, reference.stderr[-3000:]
    # Step 4 of 5 is the 4x stage's first: the 2x generator is exported, the 4x one grew from it.
    interrupted = launch(settings, shared, tmp_path / "run", "--interrupt-after", "4")
    assert "exitcode  : 143" in interrupted.stderr, interrupted.stderr[-3000:]
    assert (tmp_path / "run/2x/generator.pt").is_file()
    assert not (tmp_path / "run/4x/generator.pt").exists()
    first = report(tmp_path / "run")
    resumed = launch(settings, shared, tmp_path / "run")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    second = report(tmp_path / "run")
    assert (first["steps"], second["steps"], second["resumed"]) == (4, 5, True)
    # Bitwise, across the stage boundary and the resume; the resumed report holds both stages,
    # the 2x one's from the file beside its generator.
    whole = report(tmp_path / "reference")["losses"]
    assert (first["losses"], second["losses"]) == (whole[:4], whole)
    assert (tmp_path / "run/4x/generator.pt").is_file()


def test_compile_trains_through_inductor_what_eager_trains(shared, tmp_path):
    weights = {"vgg19": {"path": "vgg19", "sha256": checksums(shared / "weights/vgg19")}}
    section = {"global_batch": 1, "micro_batch": 1, "steps_2x": 3, "steps_4x": 1, "hr_crop": 16}
    section |= {"num_blocks": 1, "num_features": 8, "growth_channels": 4, "loader_workers": 0}
    eager = recipe_settings("esrgan", weights=weights, esrgan=section)
    compiled = recipe_settings("esrgan", weights=weights, esrgan=section | {"compile": True})
    cache = tmp_path / "inductor"
    for name, settings in (("eager", eager), ("compiled", compiled)):
        # Stopped after two steps of the 2x stage: the 4x stage would only compile a second
        # model (about 15 s on 2 cores) to show the same thing again.
        done = launch(
            settings, shared, tmp_path / name, "--interrupt-after", "2", ranks=1,
            env={"TORCHINDUCTOR_CACHE_DIR": str(cache)},
        )  # fmt: skip
        assert done.returncode == 143, done.stderr[-3000:]
        # Only the compiled run leaves TorchInductor's generated kernels in its cache.
        assert any(cache.rglob("*.py")) is (name == "compiled")
    losses = [report(tmp_path / name)["losses"] for name in ("eager", "compiled")]
    assert len(losses[0]) == 2
    assert losses[1] == pytest.approx(losses[0], rel=1e-3)


def test_changed_weights_stop_the_recipe_before_it_trains(shared, tmp_path):
    settings = sd_settings(shared)
    settings["weights"]["stable-diffusion"]["sha256"]["unet/config.json"] = "0" * 64
    refused = launch(settings, shared, tmp_path, ranks=1)
    assert refused.returncode == 2
    assert "recipes.weights.stable-diffusion" in refused.stderr
    assert "unet/config.json has sha256" in refused.stderr
    assert not (tmp_path / "checkpoints").exists()


def test_an_unreachable_batch_stops_the_recipe_before_it_trains(shared, tmp_path):
    # The config model refuses this batch at plan time; the pod still checks what it is handed
    # (RECIPE_SETTINGS written by hand, or a GPU count the batch does not divide).
    settings = sd_settings(shared) | {"global_batch": 3, "micro_batch": 2}
    refused = launch(settings, shared, tmp_path, ranks=1)
    assert refused.returncode == 2
    assert "global_batch 3 is not a multiple of 2; with 1 GPUs" in refused.stderr
    assert "it must be a multiple of micro_batch (2)" in refused.stderr


def stage(tmp_path: Path, files: dict[str, bytes]) -> dict:
    for name, payload in files.items():
        (tmp_path / "m" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "m" / name).write_bytes(payload)
    return {"m": {"path": "m", "sha256": checksums(tmp_path / "m")}}


# sha256 of b"abc": FIPS 180-2, appendix B.1.
ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_checksums_are_sha256_by_relative_path(tmp_path):
    assert stage(tmp_path, {"sub/a.bin": b"abc"})["m"]["sha256"] == {"sub/a.bin": ABC}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda root, w: (root / "m/a.bin").unlink(), "m/a.bin is missing"),
        (lambda root, w: (root / "m/a.bin").write_bytes(b"abd"), f"expected {ABC}"),
        (lambda root, w: (root / "m/extra.json").write_text("{}"), "extra.json is not in"),
        (lambda root, w: w["m"].update(sha256={}), "sha256 is empty"),
        (lambda root, w: w["m"].update(path="elsewhere"), "elsewhere does not exist"),
    ],
    ids=["missing", "changed", "unrecorded", "not-recorded", "not-staged"],
)
def test_weights_that_cannot_be_trusted_are_refused(tmp_path, change, words):
    weights = stage(tmp_path, {"a.bin": b"abc"})
    assert require(tmp_path, weights, "m") == tmp_path / "m"
    change(tmp_path, weights)
    with pytest.raises(WeightsError, match=r"recipes\.weights\.m") as refused:
        require(tmp_path, weights, "m")
    assert words in str(refused.value)


def test_the_metrics_parse_as_prometheus_exposition():
    text = exposition(
        "esrgan", {"gpu_platform_training_loss": 0.25, "gpu_platform_training_step": 7}
    )
    checked = subprocess.run(
        [promtool(), "check", "metrics"], input=text, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr + checked.stdout
    assert 'gpu_platform_training_loss{recipe="esrgan"} 0.25' in text.splitlines()


def test_the_metrics_endpoint_serves_the_latest_figures():
    server = MetricsServer("sd-finetune", port=0)
    server.update(step=3, step_seconds=0.5)
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        body = reply.read().decode()
    assert 'gpu_platform_training_step_seconds{recipe="sd-finetune"} 0.5' in body
    assert "gpu_platform_training_loss" not in body  # never set, so not reported as 0


def test_the_gpu_bench_trains_stable_diffusion_1_5_at_its_released_size():
    """The bench's shapes are SD 1.5's: parameter counts of the released checkpoint's unet,
    text_encoder and vae (runwayml/stable-diffusion-v1-5 safetensors; the model card's "860M
    UNet" and "123M text encoder"). Built on the meta device: shapes without memory."""
    with torch.device("meta"):
        task = sd15(torch.device("meta"))
    counts = [sum(p.numel() for p in m.parameters()) for m in (task.unet, task.text_encoder)]
    assert counts == [859_520_964, 123_060_480]
    assert sum(p.numel() for p in task.vae.parameters()) == 83_653_863


def test_the_checksums_command_prints_the_mapping_to_paste(tmp_path, capsys):
    from recipes.__main__ import main

    stage(tmp_path, {"sub/a.bin": b"abc"})
    assert main(["checksums", str(tmp_path / "m")]) == 0
    assert capsys.readouterr().out == f"sha256:\n  sub/a.bin: {ABC}\n"
    assert main(["checksums", str(tmp_path / "nowhere")]) == 2


def test_prepare_that_would_keep_nothing_exits_2_through_the_command(tmp_path):
    clip = stage_tiny_clip(tmp_path / "weights/clip-vit-base-patch32")
    synthetic_img2dataset(tmp_path / "raw/laion-aesthetics", 8)
    weights = {"clip": {"sha256": checksums(clip)}}
    # A cosine similarity never exceeds 1: nothing passes a threshold above it.
    section = {"min_clip_similarity": 1.0, "resolution": 64}
    settings = recipe_settings("prepare", weights=weights, prepare=section)
    refused = launch(settings, tmp_path, tmp_path / "out", ranks=1)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "error: prepare: recipes.prepare: the filters kept none of the 8 pairs" in refused.stderr
    assert "lower recipes.prepare.min_clip_similarity (now 1.0)" in refused.stderr
    assert not (tmp_path / "datasets/laion-aesthetics-512/manifest.json").exists()
