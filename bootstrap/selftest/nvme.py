"""The NVMe cache (the node's local NVMe as RAID0) with fio: 4 KiB random-read IOPS and 1 MiB
sequential read and write, O_DIRECT through libaio so the page cache stays out of it, against
200K IOPS and 3 GB/s (the source documents' seed figures; a stack passes higher per-type floors
as `nvme-cache.randread_iops`, `nvme-cache.seq_read_mb_s`, `nvme-cache.seq_write_mb_s`).

fio is Debian's package in the image (bootstrap/Dockerfile). Its absence is a SKIP naming it.
The floors hold a GPU node's RAID0; on a CPU run the figures are measured for reference only."""

from __future__ import annotations

import json
import time
from pathlib import Path

from selftest.context import SelfTestContext
from selftest.result import CheckResult, Floor
from selftest.tools import run_tool

MB = 1e6
SEED_SOURCE = "source documents: NVMe RAID0 >= 200K IOPS and >= 3 GB/s (seed figures)"
SEED_FLOORS = {"randread_iops": 200_000.0, "seq_read_mb_s": 3000.0, "seq_write_mb_s": 3000.0}
# Four jobs, each on its own 1 GiB region of one file: enough queues to spread over a RAID0.
JOBS, REGION = 4, "1G"
RUNTIME_S = {"short": 5, "full": 20, "cpu": 2}
# check, fio --rw, block size, queue depth, side of the JSON to read, unit, floor (a write
# first: it lays out the file the reads read).
PATTERNS = [
    ("seq_write", "write", "1M", 32, "write", "MB/s", "seq_write_mb_s"),
    ("seq_read", "read", "1M", 32, "read", "MB/s", "seq_read_mb_s"),
    ("randread", "randread", "4k", 64, "read", "IOPS", "randread_iops"),
]


def fio_command(target: Path, rw: str, bs: str, iodepth: int, runtime_s: int) -> list[str]:
    return [
        "fio",
        "--output-format=json",
        f"--name={rw}",
        f"--filename={target}",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--iodepth={iodepth}",
        f"--numjobs={JOBS}",
        f"--size={REGION}",
        f"--offset_increment={REGION}",
        f"--runtime={runtime_s}",
        "--time_based",
        "--direct=1",
        "--ioengine=libaio",
        "--group_reporting",
    ]


def parse_fio(text: str, side: str) -> tuple[float, float]:
    """(IOPS, MB/s) of one group-reported fio JSON run's read or write side; fio may print
    warnings before the JSON document."""
    doc = json.loads(text[text.index("{") :])
    job = doc["jobs"][0]
    if job.get("error"):
        raise ValueError(f"fio job {job.get('jobname')} failed with error {job['error']}")
    numbers = job[side]
    return float(numbers["iops"]), float(numbers["bw_bytes"]) / MB


def judge(
    ctx: SelfTestContext, name: str, floor_name: str, value: float, unit: str, version: str
) -> CheckResult:
    key, check = f"nvme-cache.{floor_name}", f"nvme.{name}"
    if ctx.device != "cuda":
        return CheckResult(
            check,
            "SKIP",
            round(value, 1),
            unit,
            reason="not a GPU node: the "
            "floors are for a GPU node's NVMe RAID0; measured for reference",
        )
    floor = ctx.floors.get(key, SEED_FLOORS[floor_name])
    source = ctx.floor_sources.get(key, SEED_SOURCE) + f"; {version}"
    ok = value >= floor
    reason = "" if ok else f"{value:,.0f} {unit} on {ctx.nvme_cache}, under the {floor:,.0f} floor"
    return CheckResult(
        check, "PASS" if ok else "FAIL", round(value, 1), unit, floor, source, reason,
        floor=Floor(floor, unit),
    )  # fmt: skip


def run(ctx: SelfTestContext) -> list[CheckResult]:
    """Local rank 0 of each node measures its own cache."""
    names = [f"nvme.{p[0]}" for p in PATTERNS]
    if ctx.local_rank != 0:
        return []
    version = run_tool(["fio", "--version"])
    if not version.ok:
        reason = f"{version.problem}: install Debian's fio (the bootstrap image has it)"
        return [CheckResult(name, "SKIP", reason=reason) for name in names]
    if not ctx.nvme_cache.is_dir():
        return [
            CheckResult(name, "FAIL", reason=f"not mounted: {ctx.nvme_cache}") for name in names
        ]
    work = ctx.nvme_cache / "selftest" / ctx.run_id
    work.mkdir(parents=True, exist_ok=True)
    target = work / f"fio-rank{ctx.rank}.bin"
    runtime = RUNTIME_S[ctx.check_set if ctx.device == "cuda" else "cpu"]
    results = []
    try:
        for name, rw, bs, depth, side, unit, floor_name in PATTERNS:
            started = time.perf_counter()
            done = run_tool(fio_command(target, rw, bs, depth, runtime), timeout_s=runtime + 120)
            if not done.ok:
                results.append(CheckResult(f"nvme.{name}", "FAIL", reason=done.problem))
                continue
            iops, mb_s = parse_fio(done.text, side)
            value = iops if unit == "IOPS" else mb_s
            result = judge(ctx, name, floor_name, value, unit, version.text.strip())
            result.duration_s = time.perf_counter() - started
            results.append(result)
    finally:
        target.unlink(missing_ok=True)
    return results
