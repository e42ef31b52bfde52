"""GPU compute: dense bf16 GEMM TFLOP/s and device-memory bandwidth, as fractions of the
datasheet peaks (FACTS.md "Self-test numbers"), against configurable floors.

On CPU both GPU checks SKIP; a small fp32 CPU GEMM is still measured and reported as a SKIP
with its value, for reference only (no floor applies to a CPU)."""

from __future__ import annotations

import time

import torch

from selftest.context import SelfTestContext
from selftest.result import FRACTION_UNIT, CheckResult, Floor

# Datasheet peaks by the exact device name torch and nvidia-smi report: dense BF16 TFLOP/s and
# HBM TB/s (FACTS.md "Self-test numbers"; SXM parts, as in p4d/p4de/p5/p5e/p5en). Only the A100
# 80 GB's bandwidth is listed, so the 40 GB part gets no bandwidth floor. A name not here (H100
# PCIe or NVL, GH200, H200 NVL: other clocks, power and memory) has no peak rather than a wrong
# one: a substring match gave those the SXM figures.
PEAKS: dict[str, tuple[float, float | None]] = {
    "NVIDIA H200": (989.0, 4.8),
    "NVIDIA H100 80GB HBM3": (989.0, 3.35),
    "NVIDIA A100-SXM4-80GB": (312.0, 2.0),
    "NVIDIA A100-SXM4-40GB": (312.0, None),
}
PEAK_SOURCE = "FACTS.md Self-test numbers (NVIDIA datasheet dense BF16 / HBM peaks)"
# The targets on an H200: GEMM ≥ 75 % of peak, memory bandwidth ≥ 80 %.
DEFAULT_FLOORS = {"gemm_fraction": 0.75, "memory_bandwidth_fraction": 0.80}


def peaks_for(model: str) -> tuple[float | None, float | None]:
    """(TFLOP/s, TB/s) for a device name such as 'NVIDIA H200'; (None, None) when unknown."""
    return PEAKS.get(model.strip(), (None, None))


def gemm_tflops(n: int, seconds_per_gemm: float) -> float:
    """A dense n×n by n×n product is 2n³ floating-point operations."""
    return 2 * n**3 / seconds_per_gemm / 1e12


def copy_tbps(nbytes: int, seconds_per_copy: float) -> float:
    """A device-to-device copy reads and writes every byte once: 2 × nbytes of traffic."""
    return 2 * nbytes / seconds_per_copy / 1e12


def _timed(fn, iters: int, device: str) -> float:
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(iters):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - started) / iters


def fraction_check(name, measured, unit, peak, floor, floor_key, model="") -> CheckResult:
    """measured / peak against the floor fraction; no peak known is a WARN, not a guess."""
    if peak is None:
        reason = f"no datasheet peak for {model!r} (selftest.compute.PEAKS)"
        return CheckResult(name, "WARN", round(measured, 2), unit, reason=reason)
    fraction = measured / peak
    ok = fraction >= floor
    reason = "" if ok else f"{fraction:.0%} of the {peak} {unit} peak, under {floor:.0%}"
    return CheckResult(
        name, "PASS" if ok else "FAIL", round(measured, 2), unit, f">= {floor:.0%} of {peak}",
        f"{PEAK_SOURCE}; floor {floor_key}", reason, details={"fraction": fraction},
        floor=Floor(floor, FRACTION_UNIT),
    )  # fmt: skip


def run(ctx: SelfTestContext, n: int = 8192, copy_bytes: int = 2**32) -> list[CheckResult]:
    if ctx.device != "cuda":
        return cpu_reference()
    device = torch.device("cuda", ctx.local_rank)
    props = torch.cuda.get_device_properties(device)
    tflops_peak, tbps_peak = peaks_for(props.name)
    floors = {**DEFAULT_FLOORS, **ctx.floors}

    started = time.perf_counter()
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    tflops = gemm_tflops(n, _timed(lambda: a @ b, 50, "cuda"))
    gemm = fraction_check("compute.gemm_bf16", tflops, "TFLOP/s", tflops_peak,
                          floors["gemm_fraction"], "gemm_fraction", props.name)  # fmt: skip
    gemm.duration_s = time.perf_counter() - started

    started = time.perf_counter()
    src = torch.empty(copy_bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    tbps = copy_tbps(copy_bytes, _timed(lambda: dst.copy_(src), 20, "cuda"))
    floor_name = "memory_bandwidth_fraction"
    membw = fraction_check("compute.memory_bandwidth", tbps, "TB/s", tbps_peak,
                           floors[floor_name], floor_name, props.name)  # fmt: skip
    membw.duration_s = time.perf_counter() - started
    for result in (gemm, membw):  # per-GPU figures: each rank measures its own GPU
        result.details["gpu"] = ctx.local_rank
    return [gemm, membw]


def cpu_reference(n: int = 512) -> list[CheckResult]:
    """No GPU: both GPU checks SKIP; the CPU GEMM's figure rides along for reference."""
    started = time.perf_counter()
    a, b = torch.randn(n, n), torch.randn(n, n)
    tflops = gemm_tflops(n, _timed(lambda: a @ b, 10, "cpu"))
    return [
        CheckResult("compute.gemm_bf16", "SKIP", round(tflops * 1e3, 2), "GFLOP/s (CPU fp32)",
                    reason="no GPU: CPU fp32 GEMM measured for reference, no floor",
                    duration_s=time.perf_counter() - started),
        CheckResult("compute.memory_bandwidth", "SKIP", reason="no GPU"),
    ]  # fmt: skip
