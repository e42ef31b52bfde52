"""The global batch, reached exactly: global_batch = micro_batch x GPUs x accumulation, for a
whole accumulation of 1 or more. Rounding it would change the optimisation the learning rate
was tuned for, so anything else is refused. Torch-free: `submit` checks before a job is created,
the loop again once torchrun has started the ranks."""

from __future__ import annotations


class BatchError(ValueError):
    """A global batch the GPUs cannot reach; the message says what would."""


def accumulation_steps(global_batch: int, micro_batch: int, gpus: int, keys: str = "") -> int:
    """Micro-steps per optimizer step; `keys` prefixes the setting names in the message
    (`recipes.sd_finetune.` where the config is at hand)."""
    per_pass = micro_batch * gpus
    if global_batch % per_pass == 0:
        return global_batch // per_pass
    head = (
        f"{keys}global_batch {global_batch} is not a multiple of {per_pass}; with {gpus} GPUs "
        f"at micro_batch {micro_batch} reachable global batches are {per_pass}, "
        f"{2 * per_pass}, {3 * per_pass}, …"
    )
    if global_batch % micro_batch:
        tail = (
            f"and no GPU count reaches {global_batch}: it must be a multiple of "
            f"{keys}micro_batch ({micro_batch})"
        )
    else:
        per_micro = global_batch // micro_batch
        counts = [g for g in range(1, per_micro + 1) if per_micro % g == 0]
        tail = f"or use {', '.join(map(str, counts))} GPUs"
    raise BatchError(f"{head}; {tail}")
