"""Mixed precision and determinism, chosen from the device rather than assumed."""

from __future__ import annotations

import torch


def autocast_dtype(device: torch.device) -> torch.dtype:
    """bf16 where the device computes it natively (every CPU autocast, CUDA Ampere and later);
    fp16 otherwise. torch.cuda.is_bf16_supported() answers True by default on a GPU that only
    emulates bf16 (Volta, Turing), so it is asked without emulation."""
    if device.type == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False):
        return torch.float16
    return torch.bfloat16


def mixed_precision(device: torch.device) -> tuple[torch.dtype, torch.amp.GradScaler]:
    """The autocast dtype and its gradient scaler: fp16's narrow range needs loss scaling, bf16
    has fp32's exponent and does not, so the scaler is enabled for fp16 only."""
    dtype = autocast_dtype(device)
    return dtype, torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)


def deterministic_kernels() -> None:
    """Every kernel deterministic, or a RuntimeError naming the one that has no deterministic
    implementation: a resume checked bit for bit cannot let one through with a warning. With
    warn_only=False torch (2.13, aten/src/ATen/native/transformers) also keeps SDPA off cuDNN
    attention, whose backward is not deterministic, and runs flash attention's backward in its
    deterministic mode and memory-efficient attention's with one key split. cuBLAS needs
    CUBLAS_WORKSPACE_CONFIG set before it starts (the worker's environment sets it)."""
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
