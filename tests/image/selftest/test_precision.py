"""Precision and peaks on the GPUs without native bf16 or a published peak. Which dtype each GPU
of the catalog trains in is tested on a mocked device in tests/image/selftest/test_training.py."""

from __future__ import annotations

import pytest
import torch
import trainkit
from selftest import compute


def test_cpu_autocast_stays_bf16():
    # torch.amp docs: CPU autocast runs in torch.bfloat16.
    assert trainkit.autocast_dtype(torch.device("cpu")) == torch.bfloat16


@pytest.mark.parametrize(
    "name", ["NVIDIA L4", "Tesla T4", "Tesla V100-SXM2-32GB"]
)  # as `nvidia-smi -q` names them (Product Name)
def test_no_bf16_peak_is_assumed_for_l4_t4_or_v100(name):
    # FACTS.md lists no dense-bf16 or HBM peak for them (T4 and V100 compute no bf16 at all):
    # their GEMM and bandwidth checks WARN "no catalog peak" instead of failing on a guess.
    assert compute.peaks_for(name) == (None, None)
