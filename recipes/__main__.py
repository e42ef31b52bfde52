"""python -m recipes <command>

  prepare | sd-finetune | esrgan   run a recipe, under torchrun in the job (one process alone
                                   works too); settings as JSON in RECIPE_SETTINGS or --settings
  checksums <folder>               the sha256 mapping of a staged model, for the stack file

A recipe's refusals (weights missing or changed, a batch the GPUs cannot reach, shards that
cannot feed every rank) exit 2 before the first step; the report lands in --out/report.json.
A recipe's job is submitted from the program side: `python -m jobs recipe <recipe> --stack <stack>`
(jobs/recipe.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

from contract.env import RECIPE_SETTINGS
from contract.mounts import SHARED_DATA_MOUNT_PATH

RECIPES = ("prepare", "sd-finetune", "esrgan")
SHARED_DATA = Path(SHARED_DATA_MOUNT_PATH)


def _arguments(command: str, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m recipes {command}")
    parser.add_argument("--settings", type=Path, help="JSON file (default: $RECIPE_SETTINGS)")
    parser.add_argument("--shared-data", type=Path, default=SHARED_DATA)
    parser.add_argument("--out", type=Path, help="default: <shared-data>/<settings output>")
    parser.add_argument(
        "--interrupt-after", type=int, help="SIGTERM itself after this step, as an eviction would"
    )
    parser.add_argument(
        "--metrics-port", type=int, default=None, help="default 8000; 0 takes a free port"
    )
    return parser.parse_args(argv)


def _settings(command: str, source: Path | None) -> dict:
    text = source.read_text() if source else os.environ.get(RECIPE_SETTINGS)
    if not text:
        raise SystemExit(f"error: {command}: no settings: set RECIPE_SETTINGS or --settings")
    settings = json.loads(text)
    if settings.get("recipe") != command:
        raise SystemExit(f"error: settings are for {settings.get('recipe')!r}, not {command!r}")
    return settings


def run_recipe(command: str, argv: list[str]) -> int:
    from trainkit import INTERRUPTED, CheckpointError, MetricsServer, join, leave
    from trainkit.metrics import METRICS_PORT

    from contract.batch import BatchError
    from recipes.loop import CheckFailed
    from recipes.prepare import PrepareError
    from recipes.runs import RUNS
    from recipes.shards import DataError
    from recipes.weights import WeightsError

    args = _arguments(command, argv)
    settings = _settings(command, args.settings)
    out = args.out or args.shared_data / settings["output"]
    started = time.perf_counter()
    rank, local_rank = join()
    port = METRICS_PORT if args.metrics_port is None else args.metrics_port
    metrics = MetricsServer(command, port) if local_rank == 0 else None
    try:
        figures = RUNS[command](
            settings, args.shared_data, out, local_rank=local_rank,
            interrupt_after=args.interrupt_after, metrics=metrics,
        )  # fmt: skip
    except (BatchError, CheckFailed, DataError, CheckpointError, PrepareError, WeightsError) as e:
        print(f"error: {command}: {e}", file=sys.stderr)
        leave(2)
    if rank == 0:
        if command != "prepare":  # prepare writes its own, with its counts
            figures["duration_s"] = round(time.perf_counter() - started, 3)
            out.mkdir(parents=True, exist_ok=True)
            (out / "report.json").write_text(json.dumps(figures, indent=1) + "\n")
        if metrics is not None:  # what Prometheus would have scraped last, for the record
            url = f"http://127.0.0.1:{metrics.port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as response:
                (out / "metrics.txt").write_bytes(response.read())
    # Saved and stopped on SIGTERM: exit as a terminated process would, so the Job never counts
    # an evicted pod's index as succeeded; its podFailurePolicy ignores the disrupted pod.
    leave(INTERRUPTED if figures["interrupted"] else 0)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "checksums":
        from recipes.weights import checksums_yaml

        if len(rest) != 1 or not Path(rest[0]).is_dir():
            print("usage: python -m recipes checksums <staged model folder>", file=sys.stderr)
            return 2
        print(checksums_yaml(Path(rest[0])), end="")
        return 0
    if command in RECIPES:
        return run_recipe(command, rest)
    print(f"error: unknown command {command!r}; one of checksums, {', '.join(RECIPES)}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
