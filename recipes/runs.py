"""Each recipe as `python -m recipes` runs it. A training recipe is wired to the loop: its staged
weights verified, its task built, its run(s) trained, its result exported, and the figures its
report holds. ESRGAN trains in two stages, 2x then 4x from the 2x generator (progressive
training); a stage whose exported generator exists is done, so a resumed job continues where it
stopped."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.distributed as dist
from trainkit import autocast_dtype, complete_checkpoints, device_for, keyed_generator

from recipes.fit import checkpointing, state_bytes, trial_peak
from recipes.loop import Run, train, verified_once
from recipes.sd import SdTask, load_pipeline
from recipes.shards import Batch
from recipes.validation import sample, skipped_because
from recipes.weights import require

# A finished ESRGAN stage's losses, beside its generator: the report covers both stages even
# when the 2x one finished in an earlier run.
STAGE_LOSSES = "losses.json"


def _run(settings: dict, shared_data: Path, folder: Path, steps: int, crop: int, **extra) -> Run:
    return Run(
        recipe=settings["recipe"],
        steps=steps,
        global_batch=settings["global_batch"],
        micro_batch=settings["micro_batch"],
        learning_rate=settings["learning_rate"],
        warmup_steps=settings["warmup_steps"],
        checkpoint_every=settings["checkpoint_every"],
        keep_checkpoints=settings["keep_checkpoints"],
        seed=settings["seed"],
        crop=crop,
        shards=shared_data / settings["dataset"],
        checkpoints=folder / "checkpoints",
        log_every=settings["log_every"],
        workers=settings["loader_workers"],
        compile=settings["compile"],
        max_grad_norm=settings["max_grad_norm"],
        ema_decay=settings.get("ema_decay"),
        latents=settings.get("latents", False),
        **extra,
    )


def _figures(outcomes: list[dict], steps: int, before: list[float] | None = None) -> dict:
    """The report's figures; `losses` are the whole run's (a Session keeps those of the
    segments before a resume), `before` those of stages finished in earlier runs."""
    losses = [*(before or [])]
    losses += [loss for outcome in outcomes for _, loss in sorted(outcome["losses"].items())]
    rates = [o["samples_per_s"] for o in outcomes if o["samples_per_s"] is not None]
    return {
        "steps": steps,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "samples_per_s": rates[-1] if rates else None,
        "resumed": any(o["resumed_from"] for o in outcomes),
        "interrupted": any(o["interrupted"] for o in outcomes),
        "peak_memory_bytes": max((o["peak_memory_bytes"] or 0 for o in outcomes), default=None),
        "losses": losses,
    }


def _checkpointing(task: SdTask, settings: dict, device: torch.device) -> bool:
    """recipes.fit's decision from a trial micro-step on this GPU, the same on every rank."""
    trial, total = None, 0
    if settings["gradient_checkpointing"] == "auto" and device.type == "cuda":
        unet = task.trainable().to(device, memory_format=torch.channels_last)
        size, side, dtype = settings["micro_batch"], settings["resolution"], autocast_dtype(device)
        batch = Batch(
            torch.rand(size, 3, side, side, device=device), ["a photograph"] * size,
            [keyed_generator(settings["seed"], -1, i) for i in range(size)], device,
        )  # fmt: skip

        def step() -> torch.Tensor:
            with torch.autocast("cuda", dtype=dtype):
                return task.loss(unet, batch)

        trial = trial_peak(step, unet, device)
        total = torch.cuda.get_device_properties(device).total_memory
    ema = settings["ema_decay"] is not None
    on, why = checkpointing(
        settings["gradient_checkpointing"], device.type, total, trial,
        state_bytes(task.trainable(), ema),
    )  # fmt: skip
    agreed = torch.tensor([int(on)], device=device)
    dist.all_reduce(agreed, op=dist.ReduceOp.MAX)  # one rank short of memory decides for all
    if dist.get_rank() == 0:
        print(json.dumps({"recipe": "sd-finetune", "checkpointing": why}), flush=True)
    return bool(agreed.item())


def sd_finetune(settings: dict, shared_data: Path, out: Path, local_rank: int, **extra) -> dict:
    folder = verified_once(lambda: require(shared_data, settings["weights"], "stable-diffusion"))
    device = device_for(local_rank)
    task = SdTask(
        load_pipeline(folder), device, gradient_checkpointing=False,
        snr_gamma=settings["snr_gamma"], noise_offset=settings["noise_offset"],
        caption_dropout=settings["caption_dropout"],
    )  # fmt: skip
    if _checkpointing(task, settings, device):
        task.unet.enable_gradient_checkpointing()
    run = _run(settings, shared_data, out, settings["steps"], settings["resolution"], **extra)
    skipped = skipped_because(device.type, settings["validation_prompts"])

    def validate(step: int, unet: torch.nn.Module) -> None:
        sample(
            task, unet, settings["validation_prompts"], seed=settings["validation_seed"],
            steps=settings["validation_steps"], resolution=settings["resolution"],
            folder=out / "samples" / f"step-{step:08d}",
        )  # fmt: skip

    if skipped is None and dist.get_rank() == 0:
        run.on_checkpoint = validate
    outcome = train(task, run, local_rank)
    if outcome["finished"] and dist.get_rank() == 0:
        # The EMA is the fine-tuned model diffusers' script exports; the raw weights beside it.
        if outcome["ema"] is not None:
            task.export(outcome["ema"], out / "unet")
            task.export(outcome["model"], out / "unet-raw")
        else:
            task.export(outcome["model"], out / "unet")
    figures = _figures([outcome], outcome["step"])
    # Every checkpoint's samples, those of the segments before a resume included.
    written = sorted(str(p.relative_to(out)) for p in out.glob("samples/step-*/*.png"))
    figures["validation"] = {"skipped": skipped} if skipped else {"samples": written}
    return figures


def esrgan(settings: dict, shared_data: Path, out: Path, local_rank: int, **extra) -> dict:
    from recipes.esrgan.model import grow_from
    from recipes.esrgan.task import EsrganTask

    vgg = verified_once(lambda: require(shared_data, settings["weights"], "vgg19"))
    device = device_for(local_rank)
    interrupt_after = extra.pop("interrupt_after", None)
    outcomes, done, carried_on, before = [], 0, False, []
    previous: Path | None = None
    for scale, steps in ((2, settings["steps_2x"]), (4, settings["steps_4x"])):
        stage = out / f"{scale}x"
        exported = stage / "generator.pt"
        if exported.is_file():  # a finished stage of an earlier run
            done, previous, carried_on = done + steps, exported, True
            before += json.loads((stage / STAGE_LOSSES).read_text())
            continue
        # The same initial weights on every rank and in every run: a resume depends on it.
        torch.manual_seed(settings["seed"])
        task = EsrganTask(settings, scale, vgg, device)
        # Grown from 2x unless the stage has a checkpoint to resume (a save cut short is none).
        if previous is not None and not complete_checkpoints(stage / "checkpoints"):
            grow_from(torch.load(previous, weights_only=True), task.trainable())
        # The interruption counts steps over both stages.
        stop = interrupt_after - done if interrupt_after and interrupt_after > done else None
        run = _run(settings, shared_data, stage, steps, settings["hr_crop"], **extra)
        run.interrupt_after, run.stage = stop, f"{scale}x"
        outcome = train(task, run, local_rank)
        outcomes.append(outcome)
        done += outcome["step"]
        if not outcome["finished"]:
            break
        if dist.get_rank() == 0:
            losses = [loss for _, loss in sorted(outcome["losses"].items())]
            (stage / STAGE_LOSSES).write_text(json.dumps(losses))
            torch.save(outcome["model"].state_dict(), exported)
        dist.barrier()
        previous = exported
    figures = _figures(outcomes, done, before)
    figures["resumed"] = figures["resumed"] or carried_on
    return figures


def prepare(settings: dict, shared_data: Path, out: Path, local_rank: int, **extra) -> dict:
    """prepare scores on `cuda:LOCAL_RANK` by itself and writes its own report."""
    from recipes.prepare import run

    return run(settings, shared_data, out, **extra)


RUNS = {"prepare": prepare, "sd-finetune": sd_finetune, "esrgan": esrgan}
