"""Check 4, storage: sequential write and read throughput and small-file read latency on the
storage plane's two volumes, `shared-data` (FSx for Lustre in AWS) and `nvme-cache` (the node's
local NVMe), against the plan's floors; then the WebDataset pipeline on `shared-data`.

Floors are looked up in `ctx.floors` by `<volume>.write_mb_s`, `<volume>.read_mb_s` (minimums;
Lustre's derives from capacity × per-TiB tier) and `<volume>.small_file_p99_us` (a maximum; the
source documents ask for the NVMe cache under 200 µs). A measurement without a floor is INFO,
with the reason saying no floor was set: the figure is in the report, but nothing was judged."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import torch.distributed as dist

from selftest import data
from selftest.context import SelfTestContext
from selftest.result import CheckResult, Floor, run_check

MB = 1e6
BLOCK = 4 * 1024 * 1024
SMALL_FILE_BYTES = 4096


def _drop_from_page_cache(fd: int) -> None:
    # Clean pages only leave the cache when asked; without this the read figure is the page
    # cache's memory bandwidth, not the volume's.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def sequential_throughput(directory: Path, size_bytes: int) -> tuple[float, float]:
    """MB/s of one fsync'd sequential write of `size_bytes`, then of reading it back cold."""
    path = directory / "sequential.bin"
    block = os.urandom(BLOCK)  # random bytes: no file system compresses them away
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        written = 0
        while written < size_bytes:
            written += os.write(fd, block[: min(BLOCK, size_bytes - written)])
        os.fsync(fd)
    finally:
        os.close(fd)
    write_s = time.perf_counter() - started
    fd = os.open(path, os.O_RDONLY)
    try:
        _drop_from_page_cache(fd)
        started = time.perf_counter()
        while os.read(fd, BLOCK):
            pass
        read_s = time.perf_counter() - started
    finally:
        os.close(fd)
        path.unlink()
    return size_bytes / write_s / MB, size_bytes / read_s / MB


def small_file_latencies_us(directory: Path, count: int) -> list[float]:
    """Open-read-close latency of `count` cold 4 KiB files in µs: a data loader's pattern."""
    paths = [directory / f"small-{index:05d}" for index in range(count)]
    payload = os.urandom(SMALL_FILE_BYTES)
    for path in paths:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, payload)
            os.fsync(fd)
            _drop_from_page_cache(fd)
        finally:
            os.close(fd)
    latencies = []
    for path in paths:
        started = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        os.read(fd, SMALL_FILE_BYTES)
        os.close(fd)
        latencies.append((time.perf_counter() - started) * 1e6)
        path.unlink()
    return latencies


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile, by the inclusive method (q=50 is the median)."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _against_floor(
    ctx: SelfTestContext, name: str, key: str, value: float, unit: str, *, at_most: bool = False
) -> CheckResult:
    floor = ctx.floors.get(key)
    if floor is None:
        return CheckResult(name, "INFO", round(value, 1), unit, reason=f"no floor set ({key})")
    ok = value <= floor if at_most else value >= floor
    reason = "" if ok else f"{value:.1f} {unit} {'above' if at_most else 'below'} {floor:g}"
    return CheckResult(
        name, "PASS" if ok else "FAIL", round(value, 1), unit, floor,
        ctx.floor_sources.get(key, ""), reason,
        floor=None if at_most else Floor(floor, unit),  # a latency's is a ceiling
    )  # fmt: skip


def check_volume(ctx: SelfTestContext, volume: str, mount: Path) -> list[CheckResult]:
    """One volume's three figures, or one FAIL when it is not mounted."""
    started = time.perf_counter()
    if not mount.is_dir():
        return [CheckResult(f"storage.{volume}", "FAIL", reason=f"not mounted: {mount}")]
    work = mount / "selftest" / ctx.run_id / f"storage-rank{ctx.rank}"
    work.mkdir(parents=True, exist_ok=True)
    write_mb_s, read_mb_s = sequential_throughput(work, ctx.storage_bytes)
    latencies = small_file_latencies_us(work, ctx.small_files)
    work.rmdir()
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    results = [
        _against_floor(ctx, f"storage.{volume}.write", f"{volume}.write_mb_s", write_mb_s, "MB/s"),
        _against_floor(ctx, f"storage.{volume}.read", f"{volume}.read_mb_s", read_mb_s, "MB/s"),
        _against_floor(
            ctx,
            f"storage.{volume}.small_file_p99",
            f"{volume}.small_file_p99_us",
            p99,
            "us",
            at_most=True,
        ),
    ]
    results[-1].details = {"latencies_us": latencies, "p50_us": p50, "p99_us": p99}
    elapsed = time.perf_counter() - started
    for result in results:
        result.duration_s = elapsed / len(results)
    return results


def run(ctx: SelfTestContext) -> list[CheckResult]:
    """Every rank calls this (the pipeline check has a barrier); local rank 0 of each node
    measures the volumes, so ranks sharing a node do not race for the same disk."""
    results: list[CheckResult] = []
    if ctx.local_rank == 0:
        for volume, mount in (("shared-data", ctx.shared_data), ("nvme-cache", ctx.nvme_cache)):
            results += run_check(
                f"storage.{volume}", lambda v=volume, m=mount: check_volume(ctx, v, m)
            )
    # A rank that returned early would leave the others waiting at the pipeline's barrier.
    results += run_check("storage.pipeline", lambda: [data.pipeline_check(ctx)])
    if dist.is_initialized():
        dist.barrier()
    return results
