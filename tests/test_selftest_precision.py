"""Which precision training autocasts to on each GPU the catalog offers. bf16 arithmetic needs
compute capability 8.0 (NVIDIA CUDA C++ Programming Guide, bf16 Tensor Core MMA from sm_80);
the capabilities are NVIDIA's "CUDA GPUs" list: V100 7.0, T4 7.5, A10G 8.6, L4 8.9, A100 8.0,
H100 9.0. Below 8.0 the loops take fp16 with a GradScaler (selftest.train_worker, recipes.loop)."""

from __future__ import annotations

import pytest
import torch
from selftest import compute, trainkit


@pytest.mark.parametrize(
    ("gpu", "capability", "dtype"),
    [
        ("V100 (p3dn)", (7, 0), torch.float16),
        ("T4 (g4dn)", (7, 5), torch.float16),
        ("A100 (p4d)", (8, 0), torch.bfloat16),
        ("A10G (g5)", (8, 6), torch.bfloat16),
        ("L4 (g6)", (8, 9), torch.bfloat16),
        ("H100 (p5)", (9, 0), torch.bfloat16),
    ],
)
def test_autocast_dtype_follows_the_compute_capability(monkeypatch, gpu, capability, dtype):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    # is_bf16_supported() would answer True on a V100 through emulation: it must not decide.
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert trainkit.autocast_dtype(torch.device("cuda", 0)) == dtype, gpu


def test_cpu_autocast_stays_bf16():
    # torch.amp docs: CPU autocast runs in torch.bfloat16.
    assert trainkit.autocast_dtype(torch.device("cpu")) == torch.bfloat16


@pytest.mark.parametrize(
    "name", ["NVIDIA L4", "Tesla T4", "Tesla V100-SXM2-32GB"]
)  # as `nvidia-smi -q` names them (Product Name)
def test_no_bf16_peak_is_assumed_for_l4_t4_or_v100(name):
    # FACTS.md lists no dense-bf16 or HBM peak for them (T4 and V100 compute no bf16 at all):
    # their GEMM and bandwidth checks WARN "no catalog peak" instead of failing on a guess.
    assert compute.peaks_for(name, 32 * 2**30) == (None, None)
