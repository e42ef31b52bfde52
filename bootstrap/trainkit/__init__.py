"""trainkit: what makes a distributed training job eviction-safe on the platform, shared by the
self-test, the recipes and teams' own scripts.

- `Session`: resume, SIGTERM stop at a step boundary, background checkpoints with a manifest,
  exit 143, Prometheus gauges (trainkit.session);
- checkpoints: `torch.distributed.checkpoint` saved in the background, hashed as written, checked
  once at resume (trainkit.checkpoint); the folder comes from $TRAINKIT_CHECKPOINT_DIR;
- `Ema`: an exponential moving average of the weights, diffusers' schedule (trainkit.ema);
- keyed draws: every random draw a function of (seed, rank, position) (trainkit.keyed);
- the data loader: worker processes, pinned memory and prefetch over keyed positions
  (trainkit.loader);
- the process: joining torchrun's group, the device, mixed precision, a clean exit;
- across restarts: the hang watchdog (trainkit.watchdog), the job's goodput ledger beside its
  checkpoints (trainkit.goodput), pushed with the standard library (trainkit.pushgateway)."""

from trainkit.checkpoint import (
    MANIFEST,
    Checkpointer,
    CheckpointError,
    checkpoint_root,
    complete_checkpoints,
    load,
    restore,
    verify,
)
from trainkit.ema import Ema, ema_decay
from trainkit.keyed import keyed_generator, keyed_permutation
from trainkit.metrics import MetricsServer
from trainkit.precision import autocast_dtype, deterministic_kernels, mixed_precision
from trainkit.process import (
    INTERRUPTED,
    device_for,
    join,
    leave,
    peak_memory,
    share_cpu_cores,
    sigterm_flag,
)
from trainkit.session import Session

__all__ = [
    "INTERRUPTED", "MANIFEST", "CheckpointError", "Checkpointer", "Ema",
    "MetricsServer", "Session", "autocast_dtype", "checkpoint_root", "complete_checkpoints",
    "deterministic_kernels", "device_for", "ema_decay", "join", "keyed_generator",
    "keyed_permutation", "leave", "load", "mixed_precision", "peak_memory", "restore",
    "share_cpu_cores", "sigterm_flag", "verify",
]  # fmt: skip
