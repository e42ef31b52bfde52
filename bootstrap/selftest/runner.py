"""The self-test run: read torchrun's environment and the settings, form the process group
(NCCL on GPUs, gloo on CPU) within a join timeout, run each check group in the issue's order
through `run_check`, gather every rank's results on rank 0, and write the report.

A rank that never joins is a FAIL of its own (`distributed.rendezvous`); the checks that need no
peers still run, so the report stays whole. Exit status 0 only when nothing FAILs."""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from selftest import collectives, compute, inventory, metrics, report
from selftest.context import SelfTestContext
from selftest.result import SEVERITY, CheckResult, run_check

# The order. Storage and training come from their own modules (another helper's);
# a group whose module is absent from the image is a WARN, never a crash.
GROUPS = ["inventory", "compute", "collectives", "storage", "metrics", "training"]
NEEDS_PEERS = {"collectives", "storage", "training"}


def parse_args(argv: list[str] | None, env: dict[str, str]) -> argparse.Namespace:
    """Flags, each defaulting to its SELFTEST_* variable (the Job sets those)."""
    e = env.get
    p = argparse.ArgumentParser(prog="python -m selftest", description=__doc__)
    p.add_argument("--run-id", default=e("SELFTEST_RUN_ID", "local"))
    p.add_argument("--image", default=e("SELFTEST_IMAGE", "local"))
    p.add_argument("--out", type=Path, default=Path(e("SELFTEST_OUT", "out/selftest")))
    p.add_argument(
        "--shared-data", type=Path, default=Path(e("SELFTEST_SHARED_DATA", "/mnt/shared-data"))
    )
    p.add_argument("--nvme-cache", type=Path,
                   default=Path(e("SELFTEST_NVME_CACHE", "/mnt/nvme-cache")))  # fmt: skip
    p.add_argument("--device", choices=["cuda", "cpu"], default=e("SELFTEST_DEVICE"))
    p.add_argument("--expected-gpus", type=int, default=int(e("SELFTEST_EXPECTED_GPUS", "0")))
    p.add_argument("--catalog-gpus", type=int, default=_int(e("SELFTEST_CATALOG_GPUS")))
    p.add_argument("--expected-fabric-devices", type=int,
                   default=int(e("SELFTEST_EXPECTED_FABRIC_DEVICES", "0")))  # fmt: skip
    p.add_argument("--fabric", default=e("SELFTEST_FABRIC", "tcp"),
                   help="tcp, efa, infiniband or roce")  # fmt: skip
    p.add_argument("--instance-type", default=e("SELFTEST_INSTANCE_TYPE"))
    p.add_argument(
        "--floor",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a threshold, e.g. intra_node_busbw_gbps=0.05 (repeatable)",
    )
    p.add_argument("--dcgm-url", default=e("SELFTEST_DCGM_URL"))
    p.add_argument("--prometheus-url", default=e("SELFTEST_PROMETHEUS_URL"))
    p.add_argument("--join-timeout", type=float, default=float(e("SELFTEST_JOIN_TIMEOUT", "60")))
    p.add_argument(
        "--sizes",
        default=e("SELFTEST_ALLREDUCE_SIZES"),
        help="all-reduce sweep, bytes per rank, comma-separated",
    )
    p.add_argument(
        "--iters",
        type=int,
        default=collectives.ITERS,
        help="timed all-reduce iterations per size, after 5 untimed",
    )
    p.add_argument("--checks", default=",".join(GROUPS), help="groups to run, comma-separated")
    p.add_argument("--bench", action="store_true", help="also print the benchmark figures")
    return p.parse_args(argv)  # fmt: skip


def _int(text: str | None) -> int | None:
    return int(text) if text else None


def parse_floors(pairs: list[str]) -> dict[str, float]:
    floors = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--floor {pair!r}: expected NAME=VALUE")
        floors[name.strip()] = float(value)
    return floors


def build_context(args: argparse.Namespace, env: dict[str, str]) -> SelfTestContext:
    world = int(env.get("WORLD_SIZE", "1"))
    local_world = int(env.get("LOCAL_WORLD_SIZE", str(world)))
    # The Job passes the stack's floors as JSON (SELFTEST_FLOORS, with their sources); a
    # --floor flag overrides one by hand.
    floors = json.loads(env.get("SELFTEST_FLOORS") or "{}")
    sources = json.loads(env.get("SELFTEST_FLOOR_SOURCES") or "{}")
    by_hand = parse_floors(args.floor)
    floors.update(by_hand)
    sources.update(dict.fromkeys(by_hand, "command line --floor"))
    return SelfTestContext.from_env(
        run_id=args.run_id, image=args.image, out_dir=args.out,
        shared_data=args.shared_data, nvme_cache=args.nvme_cache,
        device=args.device or ("cuda" if torch.cuda.is_available() else "cpu"),
        nodes=max(1, world // max(local_world, 1)), expected_gpus=args.expected_gpus,
        catalog_gpus=args.catalog_gpus, expected_fabric_devices=args.expected_fabric_devices,
        fabric=args.fabric, instance_type=args.instance_type, floors=floors,
        floor_sources={name: sources.get(name, "selftest config") for name in floors},
        dcgm_exporter_url=args.dcgm_url, prometheus_url=args.prometheus_url,
        join_timeout_s=args.join_timeout,
    )  # fmt: skip


def init_group(ctx: SelfTestContext, env: dict[str, str]) -> CheckResult:
    """Form the process group; a rank missing after the join timeout is a FAIL, not a hang."""
    started = time.perf_counter()
    if ctx.device == "cuda":
        torch.cuda.set_device(ctx.local_rank)
        os.environ.update(nccl_environment(ctx, env))
    if "MASTER_ADDR" not in env:  # a lone `python -m selftest`: a one-rank world on loopback
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    try:
        dist.init_process_group(
            "nccl" if ctx.device == "cuda" else "gloo",
            init_method="env://", rank=ctx.rank, world_size=ctx.world_size,
            timeout=datetime.timedelta(seconds=ctx.join_timeout_s),
        )  # fmt: skip
    except Exception as error:  # DistStoreError, RuntimeError: the rendezvous did not complete
        return CheckResult(
            "distributed.rendezvous", "FAIL", None, "ranks", ctx.world_size,
            "WORLD_SIZE from torchrun", f"not every rank joined within {ctx.join_timeout_s:g} s "
            f"({type(error).__name__}: {error})", time.perf_counter() - started,
        )  # fmt: skip
    return CheckResult(
        "distributed.rendezvous", "PASS", ctx.world_size, "ranks", ctx.world_size,
        "WORLD_SIZE from torchrun", duration_s=time.perf_counter() - started,
    )  # fmt: skip


def nccl_environment(ctx: SelfTestContext, env: dict[str, str]) -> dict[str, str]:
    """NCCL's log (INFO unless the Job sets another level), one file per process, where the
    transport checks read it: the self-test names the file, whatever the Job set."""
    return {"NCCL_DEBUG": env.get("NCCL_DEBUG", "INFO"), "NCCL_DEBUG_FILE": str(nccl_log_path(ctx))}


def nccl_log_path(ctx: SelfTestContext, pid: int | None = None) -> Path:
    """This rank's NCCL INFO log: the NCCL_DEBUG_FILE template (no `pid`), or the file it
    names for process `pid`. NCCL expands %p to the writing process's pid and opens the file
    with "w" (src/debug.cc): without %p the training workers, which inherit the variable, would
    overwrite the log the transport checks read."""
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    return ctx.out_dir / f"nccl.rank{ctx.rank}.{'%p' if pid is None else pid}.log"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_runner(name: str, ctx: SelfTestContext, args: argparse.Namespace):
    """The callable for one check group, or None when its module is not in this image."""
    if name == "collectives":
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
        local = int(os.environ.get("LOCAL_WORLD_SIZE", ctx.world_size))
        log = nccl_log_path(ctx, os.getpid()) if ctx.device == "cuda" else None
        return lambda: collectives.run(ctx, sizes, args.iters, local, log)
    module = {"inventory": inventory, "compute": compute, "metrics": metrics}.get(name)
    if module is not None:
        return lambda: module.run(ctx)
    if importlib.util.find_spec(f"selftest.{name}") is None:
        return None
    # Imported inside run_check: a module that is present but fails to import is a FAIL.
    return lambda: importlib.import_module(f"selftest.{name}").run(ctx)


def run_groups(ctx, args, grouped: bool) -> list[CheckResult]:
    results = []
    for name in [g for g in GROUPS if g in args.checks.split(",")]:
        check = group_runner(name, ctx, args)
        if check is None:
            results.append(CheckResult(name, "WARN", reason=f"selftest.{name} not in this image"))
        elif name in NEEDS_PEERS and not grouped:
            results.append(CheckResult(name, "SKIP", reason="no process group (see rendezvous)"))
        else:
            results += run_check(name, check)
    return results


def merge(per_rank: list[list[CheckResult]]) -> list[CheckResult]:
    """One row per check: the worst rank's result, naming that rank when ranks disagree."""
    by_name: dict[str, list[tuple[int, CheckResult]]] = {}
    for rank, results in enumerate(per_rank):
        for result in results:
            by_name.setdefault(result.name, []).append((rank, result))
    merged = []
    for entries in by_name.values():
        rank, chosen = max(entries, key=lambda e: (SEVERITY[e[1].status], -e[0]))
        if len({r.status for _, r in entries}) > 1:
            chosen.reason = f"rank {rank}: {chosen.reason}".rstrip(": ")
        merged.append(chosen)
    return merged


def bench_lines(results: list[CheckResult]) -> list[str]:
    """The benchmark's figures: busbw per size, then every throughput and latency figure."""
    lines = []
    for result in results:
        for row in result.details.get("sweep", []):
            lines.append(f"{result.name}  {row['bytes']:>12} B  algbw {row['algbw']:.4f} GB/s"
                         f"  busbw {row['busbw']:.4f} GB/s")  # fmt: skip
    for result in results:
        if result.unit.endswith("/s") or result.unit in {"µs", "us", "ms"}:
            lines.append(f"{result.name}  {result.value} {result.unit}  ({result.status})")
    return lines


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    env = dict(os.environ)
    args = parse_args(argv, env)
    ctx = build_context(args, env)
    rendezvous = init_group(ctx, env)
    grouped = rendezvous.status == "PASS"
    mine = [rendezvous, *run_groups(ctx, args, grouped)]

    if grouped and ctx.world_size > 1:
        gathered = [None] * ctx.world_size if ctx.is_rank0 else None
        dist.gather_object(mine, gathered, dst=0)
        results = merge(gathered) if ctx.is_rank0 else mine
    else:
        results = mine
    doc = report.report_doc(results, ctx.run_id, ctx.image, ctx.nodes,
                            time.perf_counter() - started)  # fmt: skip
    if ctx.is_rank0:
        json_path, html_path = report.write(ctx.out_dir, doc, results)
        print(report.table(results))
        print(f"\nself-test {report.headline(doc['status'], results, ctx.device)}")
        print(f"report: {json_path}, {html_path} ({doc['duration_s']} s)")
        if args.bench:
            print("\n".join(["", "benchmark:", *bench_lines(results)]))
    elif not grouped:  # a rank cut off from rank 0 still says why in the Job's log
        print(report.table(results), file=sys.stderr)
    if grouped:
        dist.destroy_process_group()
    return 1 if doc["status"] == "FAIL" else 0
