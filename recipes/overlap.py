"""The overlap benchmark (part of `make bench-recipes`, measurable on a CPU): is the GPU fed, or
waiting on the host? A stand-in GPU step of X ms (a sleep: a GPU step occupies no host core
once launched) consumes micro-batches from the recipes' real data path (tar read, JPEG decode,
keyed crop and flip, uint8) whose cost is Y ms. Serially a step takes X + Y; with the loader's
worker processes preparing ahead it should take max(X, Y) (or less with several workers).

By default X is 45 ms, the low end of the review's estimate of an SD 1.5 step on a GPU (4 ×
512² per GPU: 45-85 ms): the GPU step dominates, as it does for real, and the loader should
hide the data entirely, step ≈ X, where serially it is X + Y. X = Y (`--overlap-step-ms` at the
printed Y) is the hardest case; on a machine of 2 busy cores it shows the loader's fixed cost
per batch (a few ms of queue and unpickling) and the cores' contention more than the overlap.

With `step` (on a GPU, `make bench-recipes` passes sd-finetune's real training step, its model
and optimizer at SD 1.5's shapes), X is that step on a batch already on the GPU, and the serial
and loader figures run it on each batch they make: the host's kernel launches then contend with
the data path as they do in training, which a sleep cannot show.

Prints X, Y, both step times, their ratio to max(X, Y) and host-side samples/s per worker."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from recipes.shards import Batch, KeyedBatches, ShardStream, micro_batch, rank_shards
from recipes.tiny import synthetic_shards

# sd-finetune's shapes (docs/training.md): 512² images from prepare, micro-batch 4, 512 crop.
IMAGE, MICRO_BATCH, CROP = 512, 4, 512
# The default stand-in GPU step: the review's estimate for SD 1.5, 4 x 512² per GPU, low end.
STEP_MS = 45.0


Step = Callable[[Batch], object]


def _timed_steps(next_batch, step: Step, steps: int) -> float:
    """Mean seconds per step of `steps` steps, each a batch then the GPU step on it."""
    started = time.perf_counter()
    for _ in range(steps):
        step(next_batch())
    return (time.perf_counter() - started) / steps


def measure(
    step_ms: float | None, workers: int, steps: int, folder: Path,
    step: Step | None = None, device: torch.device | None = None,
) -> dict:  # fmt: skip
    synthetic_shards(folder, shards=4, per_shard=16, size=IMAGE)
    paths = rank_shards(folder, 0, 1)
    # The stand-in's device: a GPU converts the uint8 crops to float itself, on `meta` that
    # costs the host nothing either, so the figures hold only the host's part of a step.
    device = device if step is not None else torch.device("meta")
    stream = ShardStream(paths, seed=0)
    positions = iter(range(0, 10**9, MICRO_BATCH))

    def serial_batch() -> Batch:
        return micro_batch(stream, next(positions), MICRO_BATCH, CROP, 0, device)

    # One thread, as in a loader worker (DataLoader's workers set it): Y is a worker's cost, and
    # torch's intra-op threads spinning against a busy neighbour core would inflate it ten-fold.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fixed = serial_batch()  # the first pays for opening the tars
        data_s = _timed_steps(serial_batch, lambda _: None, steps)
        if step is None:
            nominal_s = (step_ms or STEP_MS) / 1000
            step = lambda _: time.sleep(nominal_s)  # noqa: E731
        # X as this machine runs it: a sleep overshoots by the scheduler's wake-up latency, a
        # few ms on busy cores, which is not the loader's cost; the real step on one batch.
        step(fixed)  # the real step's first call pays for its warm-up
        step_s = _timed_steps(lambda: fixed, step, steps)
        serial_s = _timed_steps(serial_batch, step, steps)
    finally:
        torch.set_num_threads(threads)
    with KeyedBatches(
        paths, 0, 0, MICRO_BATCH, CROP, start=0, workers=workers, pin_memory=False
    ) as batches:
        for _ in range(2 * workers + 1):  # workers started and their prefetch queue filled
            batches.next(device)
        loader_s = _timed_steps(lambda: batches.next(device), step, steps)
    bound = max(step_s, data_s)
    return {
        "step_ms": step_s * 1e3, "data_ms": data_s * 1e3, "workers": workers,
        "serial_step_ms": serial_s * 1e3, "loader_step_ms": loader_s * 1e3,
        "serial_ratio": serial_s / bound, "loader_ratio": loader_s / bound,
        "host_samples_per_s_per_worker": MICRO_BATCH / data_s,
        "gpu_step": "stand-in sleep" if device.type == "meta" else f"real ({device.type})",
    }  # fmt: skip


def run(
    step_ms: float | None, workers: int, steps: int,
    step: Step | None = None, device: torch.device | None = None,
) -> dict:  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        figures = measure(step_ms, workers, steps, Path(folder), step, device)
    f = figures
    print(
        f"overlap      GPU step X {f['step_ms']:.1f} ms ({f['gpu_step']}), "
        f"data Y {f['data_ms']:.1f} ms "
        f"({MICRO_BATCH} x {CROP}², {f['host_samples_per_s_per_worker']:.1f} samples/s per "
        f"worker): serial {f['serial_step_ms']:.1f} ms ({f['serial_ratio']:.2f} x max(X, Y)), "
        f"loader with {f['workers']} workers {f['loader_step_ms']:.1f} ms "
        f"({f['loader_ratio']:.2f} x max(X, Y))"
    )
    return figures
