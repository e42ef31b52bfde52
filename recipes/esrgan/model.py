"""The RRDB generator of ESRGAN (Wang et al. 2018, section 3.1 and figure 4): residual dense
blocks of five 3×3 convolutions with dense connections and LeakyReLU(0.2), three of them nested in
a residual-in-residual block, every residual branch scaled by 0.2 (section 3.1, "residual
scaling"); upsampling by nearest-neighbour ×2 then a convolution, once per factor of two."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SCALES = (2, 4)
# ESRGAN section 3.1: residual branches are scaled by β = 0.2 before they are added.
RESIDUAL_SCALE = 0.2
NEGATIVE_SLOPE = 0.2


def _conv(channels_in: int, channels_out: int) -> nn.Conv2d:
    return nn.Conv2d(channels_in, channels_out, 3, padding=1)


class ResidualDenseBlock(nn.Module):
    """Five convolutions; each sees the block input and every earlier output (dense
    connections), the first four add `growth` channels, the fifth maps back to `features`."""

    def __init__(self, features: int, growth: int):
        super().__init__()
        self.convs = nn.ModuleList(
            _conv(features + i * growth, growth if i < 4 else features) for i in range(5)
        )
        # ESRGAN section 3.1, "smaller initialization": Kaiming init scaled by 0.1 keeps the
        # deep residual stack close to identity at the start, which the paper found trains
        # more easily.
        with torch.no_grad():
            for conv in self.convs:
                nn.init.kaiming_normal_(conv.weight, a=0, mode="fan_in").mul_(0.1)
                nn.init.zeros_(conv.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seen = [x]
        for conv in self.convs[:4]:
            seen.append(F.leaky_relu(conv(torch.cat(seen, 1)), NEGATIVE_SLOPE))
        return x + RESIDUAL_SCALE * self.convs[4](torch.cat(seen, 1))


class RRDB(nn.Module):
    """Residual-in-residual dense block: three dense blocks in sequence, the whole scaled and
    added back to the input."""

    def __init__(self, features: int, growth: int):
        super().__init__()
        self.blocks = nn.Sequential(*(ResidualDenseBlock(features, growth) for _ in range(3)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + RESIDUAL_SCALE * self.blocks(x)


class RRDBNet(nn.Module):
    """LR (B, 3, h, w) in [0, 1] → SR (B, 3, h·scale, w·scale). `upsample[i]` is the
    convolution after the i-th nearest ×2, so a 4× model is a 2× model plus `upsample.1`."""

    def __init__(
        self, scale: int, num_blocks: int = 23, num_features: int = 64, growth_channels: int = 32
    ):
        super().__init__()
        if scale not in SCALES:
            raise ValueError(f"esrgan scale: {scale!r} is not supported; use one of {SCALES}")
        self.scale = scale
        self.conv_first = _conv(3, num_features)
        self.body = nn.Sequential(*(RRDB(num_features, growth_channels) for _ in range(num_blocks)))
        self.conv_body = _conv(num_features, num_features)
        self.upsample = nn.ModuleList(
            _conv(num_features, num_features) for _ in range(scale.bit_length() - 1)
        )
        self.conv_hr = _conv(num_features, num_features)
        self.conv_last = _conv(num_features, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.conv_first(x)
        features = features + self.conv_body(self.body(features))
        for conv in self.upsample:
            upsampled = F.interpolate(features, scale_factor=2, mode="nearest")
            features = F.leaky_relu(conv(upsampled), NEGATIVE_SLOPE)
        return self.conv_last(F.leaky_relu(self.conv_hr(features), NEGATIVE_SLOPE))


# The layer a 4× model has and a 2× one lacks.
EXTRA = "upsample.1."


def grow_from(two_x_state: dict[str, torch.Tensor], four_x_model: RRDBNet) -> list[str]:
    """Progressive training: start `four_x_model` from a trained 2× state dict. Every 2×
    parameter is copied (same name, same shape); what the 2× model lacks, the second
    upsampling convolution, starts as the identity (Dirac kernel, zero bias), so the 4× stage
    starts as the 2× network with one more nearest ×2 of its features rather than with a random
    layer in the middle that would undo what the 2× stage learned. Returns the new keys,
    sorted. Raises ValueError naming the key when the two models were built differently."""
    if four_x_model.scale != 4:
        raise ValueError(f"grow_from: the target model has scale {four_x_model.scale}; need 4")
    target = four_x_model.state_dict()
    problems = []
    for key, tensor in two_x_state.items():
        if key not in target:
            problems.append(f"{key}: not in the 4× model (is the state dict a 2× RRDBNet's?)")
        elif tensor.shape != target[key].shape:
            problems.append(
                f"{key}: shape {tuple(tensor.shape)} in the 2× state, "
                f"{tuple(target[key].shape)} in the 4× model (num_blocks, num_features and "
                "growth_channels must match between the stages)"
            )
    new = sorted(target.keys() - two_x_state.keys())
    # Only the second upsampling convolution may be missing: anything else absent means the
    # state is partial, and silently starting those layers fresh would waste the 2× stage.
    problems += [f"{key}: missing from the 2× state" for key in new if not key.startswith(EXTRA)]
    if problems:
        raise ValueError("grow_from: " + "; ".join(problems))
    four_x_model.load_state_dict({**target, **two_x_state})
    with torch.no_grad():
        nn.init.dirac_(four_x_model.upsample[1].weight)
        nn.init.zeros_(four_x_model.upsample[1].bias)
    return new
