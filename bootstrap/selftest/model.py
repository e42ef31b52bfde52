"""A small UNet-style denoiser: two conv blocks down, one self-attention block at the bottom
through `F.scaled_dot_product_attention` (its flash kernel on GPUs that have one), two up with
skip connections. Small enough to train a few steps on two CPU cores; the same layer kinds as a
diffusion model's, so the same kernels and memory behaviour are exercised on a GPU."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class ConvBlock(nn.Module):
    def __init__(self, channels_in: int, channels_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, stride=stride, padding=1)
        self.norm1 = nn.GroupNorm(8, channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, padding=1)
        self.norm2 = nn.GroupNorm(8, channels_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.silu(self.norm1(self.conv1(x)))
        return F.silu(self.norm2(self.conv2(x)))


class SelfAttention(nn.Module):
    def __init__(self, channels: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm = nn.GroupNorm(8, channels)
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.out = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, channels, height, width = x.shape
        qkv = self.qkv(self.norm(x)).reshape(batch, 3, self.heads, channels // self.heads, -1)
        # (batch, heads, tokens, head_dim) with head_dim contiguous: SDPA's fused kernels (flash,
        # memory-efficient, cuDNN) refuse a last dimension whose stride is not 1 and would leave
        # the math fallback to run instead of the kernels a diffusion model uses.
        q, k, v = qkv.permute(1, 0, 2, 4, 3).contiguous().unbind(0)
        attended = F.scaled_dot_product_attention(q, k, v)
        attended = attended.transpose(-1, -2).reshape(batch, channels, height, width)
        return x + self.out(attended)


class Denoiser(nn.Module):
    """Predicts the noise added to an image. `checkpointing` recomputes each block's activations
    in backward instead of keeping them (torch.utils.checkpoint, non-reentrant)."""

    def __init__(self, width: int = 32, heads: int = 4, checkpointing: bool = True):
        super().__init__()
        self.checkpointing = checkpointing
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.down1 = ConvBlock(width, width * 2, stride=2)
        self.down2 = ConvBlock(width * 2, width * 4, stride=2)
        self.attention = SelfAttention(width * 4, heads)
        self.up2 = ConvBlock(width * 4 + width * 2, width * 2)
        self.up1 = ConvBlock(width * 2 + width, width)
        self.head = nn.Conv2d(width, 3, 3, padding=1)

    def _block(self, block: nn.Module, x: torch.Tensor) -> torch.Tensor:
        if self.checkpointing and self.training:
            return checkpoint(block, x, use_reentrant=False)
        return block(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x0 = self.stem(x)
        x1 = self._block(self.down1, x0)
        x2 = self._block(self.attention, self._block(self.down2, x1))
        up = F.interpolate(x2, scale_factor=2.0, mode="nearest")
        up = self._block(self.up2, torch.cat([up, x1], dim=1))
        up = F.interpolate(up, scale_factor=2.0, mode="nearest")
        up = self._block(self.up1, torch.cat([up, x0], dim=1))
        return self.head(up)
