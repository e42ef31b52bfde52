"""`make recipes-smoke`: prepare, sd-finetune and esrgan at toy scale on this machine's CPU, as
the jobs run them: two torchrun ranks on gloo, settings from the config model (defaults with toy
overrides), tiny random models staged with their checksums as an admin stages the real ones,
and synthetic img2dataset input. Each recipe is interrupted by SIGTERM mid-run, saves, and is
started again to resume. Reports land in out/recipes/<recipe>/report.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from contract.env import RECIPE_SETTINGS
from recipes.tiny import stage_tiny_clip, stage_tiny_sd, stage_tiny_vgg, synthetic_img2dataset
from recipes.weights import checksums

ROOT = Path("out/recipes")
# The image side imports nothing of the program: the config model gives each recipe's settings
# through its own command, run by the program's interpreter (the Makefile passes .venv's).
PROGRAM_PYTHON = os.environ.get("PROGRAM_PYTHON", ".venv/bin/python")
STAGERS = {"stable-diffusion": stage_tiny_sd, "clip": stage_tiny_clip, "vgg19": stage_tiny_vgg}
IMAGES = 64
# Toy scale: 32-pixel images, 2 ranks x micro-batch 1 x accumulation 2 = global batch 4.
TRAINING = {"global_batch": 4, "micro_batch": 1, "checkpoint_every": 2, "learning_rate": 1e-3}
OVERRIDES = {
    # The tiny random CLIP (seed 0) scores these pairs between about -0.5 and 0: -0.2 drops
    # some and keeps most, as a real threshold does.
    # 32² pairs with their VAE latents: sd-finetune trains on them, skipping the encoder.
    "prepare": {
        "resolution": 32, "min_clip_similarity": -0.2, "samples_per_shard": 8, "latents": True,
    },
    "sd_finetune": {**TRAINING, "steps": 6, "resolution": 32, "latents": True},
    "esrgan": {
        **TRAINING, "steps_2x": 3, "steps_4x": 3, "hr_crop": 32,
        "num_blocks": 1, "num_features": 8, "growth_channels": 4,
    },
}  # fmt: skip
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
# Where each recipe gets SIGTERM: prepare after each rank's first source folder (of 4), sd
# mid-run, esrgan in its 4x stage.
INTERRUPT_AFTER = {"prepare": 1, "sd-finetune": 3, "esrgan": 4}


def settings_of(recipe: str, overrides: dict) -> dict:
    """What the config model hands the recipe's pod for these `gpu-platform:recipes` overrides."""
    asked = subprocess.run(
        [PROGRAM_PYTHON, "-m", "tools.recipe_settings", recipe],
        input=json.dumps(overrides), capture_output=True, text=True,
    )  # fmt: skip
    if asked.returncode:
        raise SystemExit(f"error: settings of {recipe}: {asked.stderr or asked.stdout}")
    return json.loads(asked.stdout)


def stage(shared: Path) -> dict[str, dict]:
    """Each recipe's settings (toy overrides on the defaults), with tiny models and input staged
    where the defaults put them and their checksums recorded, as an admin stages the real ones."""
    weights: dict[str, dict] = {}
    for recipe in INTERRUPT_AFTER:
        defaults = settings_of(recipe, {})
        for name, entry in defaults["weights"].items():
            if name not in weights:
                weights[name] = {"sha256": checksums(STAGERS[name](shared / entry["path"]))}
        if recipe == "prepare":
            synthetic_img2dataset(shared / defaults["source"], IMAGES)
    settings = {}
    for recipe in INTERRUPT_AFTER:
        section = recipe.replace("-", "_")
        settings[recipe] = settings_of(recipe, {"weights": weights, section: OVERRIDES[section]})
    return settings


def launch(
    recipe: str, settings: dict[str, dict], shared: Path, *extra: str, stderr: Path | None = None
) -> int:
    """Run `recipe` on two ranks; its stderr to the terminal, or to the file `stderr`."""
    command = [
        *TORCHRUN, "-m", "recipes", recipe, "--shared-data", str(shared),
        "--out", str(ROOT / recipe), "--metrics-port", "0", *extra,
    ]  # fmt: skip
    env = {
        **os.environ,
        RECIPE_SETTINGS: json.dumps(settings[recipe]),
        "PYTHONPATH": os.pathsep.join(["bootstrap", "."]),
    }
    if stderr is None:
        return subprocess.run(command, env=env).returncode
    with open(stderr, "w") as log:
        return subprocess.run(command, env=env, stderr=log).returncode


def interrupt(recipe: str, settings: dict[str, dict], shared: Path, step: int) -> str | None:
    """Run `recipe` with SIGTERM after `step`: None when it saved and stopped, or its stderr.
    torchrun reports the ranks' exit 143 as a failure, with a ChildFailedError traceback; the
    smoke causes that exit on purpose, so the report goes to a file unless something went wrong."""
    log = ROOT / "logs" / f"{recipe}-interrupted.stderr"
    log.parent.mkdir(parents=True, exist_ok=True)
    launch(recipe, settings, shared, "--interrupt-after", str(step), stderr=log)
    report = ROOT / recipe / "report.json"
    if report.is_file() and json.loads(report.read_text())["interrupted"]:
        return None
    return log.read_text()


def main() -> int:
    started = time.perf_counter()
    shutil.rmtree(ROOT, ignore_errors=True)
    shared = ROOT / "shared-data"
    settings = stage(shared)
    for recipe, step in INTERRUPT_AFTER.items():
        print(f"== {recipe}: SIGTERM after {step}")
        failure = interrupt(recipe, settings, shared, step)
        if failure is not None:
            print(failure, end="", file=sys.stderr)
            print(f"error: {recipe} did not save and stop on SIGTERM", file=sys.stderr)
            return 1
        print(f"== {recipe}: saved and stopped (exit 143, as an evicted pod); resuming")
        if launch(recipe, settings, shared):
            return 1
    print(f"\n{'recipe':12} {'steps':>5} {'loss first':>11} {'loss last':>10} {'samples/s':>9}")
    reports = {r: json.loads((ROOT / r / "report.json").read_text()) for r in INTERRUPT_AFTER}
    for recipe, report in reports.items():
        first, last = (
            "-" if report[key] is None else f"{report[key]:.4f}"
            for key in ("loss_first", "loss_last")
        )
        print(
            f"{recipe:12} {report['steps']:>5} {first:>11} {last:>10} "
            f"{report['samples_per_s'] or 0:>9.1f}  resumed={report['resumed']}"
        )
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0 if learned(reports) else 1


def learned(reports: dict[str, dict]) -> bool:
    """Every training recipe's loss fell over its whole run, both segments of the interrupted
    run included (prepare has no loss); says which did not."""
    fell = True
    for recipe, report in reports.items():
        if report["loss_first"] is None:
            continue
        if len(report["losses"]) != report["steps"] or report["loss_last"] >= report["loss_first"]:
            print(
                f"error: {recipe}: the loss did not fall over the whole run "
                f"({len(report['losses'])} losses for {report['steps']} steps, first "
                f"{report['loss_first']}, last {report['loss_last']})",
                file=sys.stderr,
            )
            fell = False
    return fell


if __name__ == "__main__":
    sys.exit(main())
