"""An exponential moving average of a model's weights, as diffusers' EMAModel keeps it for
train_text_to_image.py (diffusers 0.42.1, training_utils.py): after optimizer step n (1-based)
the average moves towards the weights by 1 - decay(n), where decay(n) = min(decay,
(1 + m) / (10 + m)) with m = n - 1, and 0 at the first step (the average starts as the
weights). The warm-up keeps the first thousands of steps from averaging in the random start.

The average is a module of its own (a copy, frozen) so a Session checkpoints it with the model
(`Session(modules={"ema": ema.module})`) and a resume continues it exactly. One fused
`_foreach_lerp_` per step: no host sync, no loop over parameters in Python."""

from __future__ import annotations

import copy

import torch


def ema_decay(step: int, decay: float) -> float:
    """The decay applied after optimizer step `step` (1-based), diffusers' schedule."""
    warm = step - 1
    if warm <= 0:
        return 0.0
    return min(decay, (1 + warm) / (10 + warm))


class Ema:
    """The average of `model`'s trainable parameters; buffers are copied as they are."""

    def __init__(self, model: torch.nn.Module, decay: float) -> None:
        self.decay = decay
        self.module = copy.deepcopy(model).requires_grad_(False).eval()

    @torch.no_grad()
    def update(self, model: torch.nn.Module, step: int) -> None:
        """Move the average after optimizer step `step` (1-based) of `model`."""
        pairs = [
            (mine, theirs)
            for mine, theirs in zip(self.module.parameters(), model.parameters(), strict=True)
            if theirs.requires_grad
        ]
        if pairs:
            averaged, current = (list(side) for side in zip(*pairs, strict=True))
            torch._foreach_lerp_(averaged, current, 1.0 - ema_decay(step, self.decay))
        for mine, theirs in zip(self.module.buffers(), model.buffers(), strict=True):
            mine.copy_(theirs)
