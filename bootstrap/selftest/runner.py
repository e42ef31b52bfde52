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

from contract.dcgm import LEVELS as DCGM_LEVELS
from contract.env import (
    SELFTEST_AUTOSCALER_METRIC,
    SELFTEST_CHECKS,
    SELFTEST_DCGM_HOSTENGINE,
    SELFTEST_DCGM_LEVEL,
    SELFTEST_DCGM_URL,
    SELFTEST_EXPECTED_FABRIC_DEVICES,
    SELFTEST_EXPECTED_GPUS,
    SELFTEST_FABRIC,
    SELFTEST_FLOOR_SOURCES,
    SELFTEST_FLOORS,
    SELFTEST_IMAGE,
    SELFTEST_INSTANCE_TYPE,
    SELFTEST_NVME_CACHE,
    SELFTEST_OUT,
    SELFTEST_PROMETHEUS_URL,
    SELFTEST_PUSHGATEWAY_URL,
    SELFTEST_RUN_ID,
    SELFTEST_SHARED_DATA,
)
from contract.mounts import NVME_CACHE_MOUNT_PATH, SHARED_DATA_MOUNT_PATH
from selftest import (
    agreement,
    baseline,
    bundle,
    collectives,
    compute,
    hardware,
    inventory,
    metrics,
    node_join,
    nvme,
    placement,
    push,
    quarantine,
    report,
)
from selftest.context import SelfTestContext
from selftest.result import CheckResult, merge, run_check, worst

# The order. Storage and training come from their own modules (another helper's);
# a group whose module is absent from the image is a WARN, never a crash.
GROUPS = ["inventory", "hardware", "compute", "agreement", "collectives", "latency", "storage",
          "nvme", "metrics", "training"]  # fmt: skip
# `--checks short`: the periodic run, a few minutes on an idle node: the node's health, its
# GPUs' and fabric's figures and its NVMe cache, without the shared-data storage and training
# runs (minutes of their own, and load on the shared file system from every node at once).
# `--checks preflight`: before a new or restarted multi-node job trains, on its own nodes (the
# JobSet's preflight, docs/training.md): the GPUs are visible, one small all-reduce across the
# whole group is right, and NCCL's transport is the fabric's (collectives.preflight: the same
# checks, without the bandwidth sweeps), and every GPU of the job's nodes computes what the
# others do (agreement: silent data corruption). Seconds, and the failed node named.
PREFLIGHT = "preflight"
CHECK_SETS = {
    "full": GROUPS,
    "short": [group for group in GROUPS if group not in ("storage", "training")],
    PREFLIGHT: ["inventory", "agreement", "collectives"],
}
NEEDS_PEERS = {"agreement", "collectives", "latency", "storage", "training"}


def parse_args(argv: list[str] | None, env: dict[str, str]) -> argparse.Namespace:
    """Flags, each defaulting to its SELFTEST_* variable (the Job sets those)."""
    e = env.get
    p = argparse.ArgumentParser(prog="python -m selftest", description=__doc__)
    p.add_argument("--run-id", default=e(SELFTEST_RUN_ID, "local"))
    p.add_argument("--image", default=e(SELFTEST_IMAGE, "local"))
    p.add_argument("--out", type=Path, default=Path(e(SELFTEST_OUT, "out/selftest")))
    p.add_argument(
        "--shared-data", type=Path, default=Path(e(SELFTEST_SHARED_DATA, SHARED_DATA_MOUNT_PATH))
    )
    p.add_argument("--nvme-cache", type=Path,
                   default=Path(e(SELFTEST_NVME_CACHE, NVME_CACHE_MOUNT_PATH)))  # fmt: skip
    p.add_argument("--device", choices=["cuda", "cpu"], default=e("SELFTEST_DEVICE"))
    p.add_argument("--expected-gpus", type=int, default=int(e(SELFTEST_EXPECTED_GPUS, "0")))
    p.add_argument("--catalog-gpus", type=int, default=_int(e("SELFTEST_CATALOG_GPUS")))
    p.add_argument("--expected-fabric-devices", type=int,
                   default=int(e(SELFTEST_EXPECTED_FABRIC_DEVICES, "0")))  # fmt: skip
    p.add_argument("--fabric", default=e(SELFTEST_FABRIC, "tcp"),
                   help="tcp, efa, infiniband or roce")  # fmt: skip
    p.add_argument("--instance-type", default=e(SELFTEST_INSTANCE_TYPE))
    p.add_argument(
        "--floor",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a threshold, e.g. intra_node_busbw_gbps=0.05 (repeatable)",
    )
    p.add_argument("--dcgm-url", default=e(SELFTEST_DCGM_URL))
    p.add_argument("--prometheus-url", default=e(SELFTEST_PROMETHEUS_URL))
    p.add_argument(
        "--autoscaler-metric",
        action="store_true",
        default=e(SELFTEST_AUTOSCALER_METRIC, "").lower() == "true",
        help="check that the GPU autoscalers' metric is served for this pod (needs "
        "--prometheus-url)",
    )
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
    p.add_argument(
        "--checks",
        default=e(SELFTEST_CHECKS, "full"),
        help="short (the periodic run), preflight (before a job), full (the default), or "
        "groups to run, "
        f"comma-separated: {', '.join(GROUPS)}",
    )
    p.add_argument(
        "--pushgateway-url",
        default=e(SELFTEST_PUSHGATEWAY_URL),
        help="push the results as metrics to this Prometheus Pushgateway",
    )
    p.add_argument(
        "--dcgm-hostengine",
        default=e(SELFTEST_DCGM_HOSTENGINE),
        help="host[:port] of the node's DCGM host engine, for dcgmi diag",
    )
    p.add_argument(
        "--dcgm-level",
        type=int,
        choices=DCGM_LEVELS,
        default=_int(e(SELFTEST_DCGM_LEVEL)),
        help="dcgmi diag's run level; default: the check set's (short 1, full 2)",
    )
    p.add_argument("--bench", action="store_true", help="also print the benchmark figures")
    args = p.parse_args(argv)
    # argparse holds a flag to its choices, not a default read from the environment.
    if args.dcgm_level not in (None, *DCGM_LEVELS):
        raise SystemExit(f"--dcgm-level / {SELFTEST_DCGM_LEVEL} {args.dcgm_level}: valid: "
                         f"{', '.join(map(str, DCGM_LEVELS))}")  # fmt: skip
    return args


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


def selected_groups(checks: str) -> list[str]:
    """The groups `--checks` names, in the issue's order; an unknown name stops the run."""
    if checks in CHECK_SETS:
        return CHECK_SETS[checks]
    names = [name.strip() for name in checks.split(",") if name.strip()]
    unknown = [name for name in names if name not in GROUPS]
    if unknown or not names:
        raise SystemExit(
            f"--checks / SELFTEST_CHECKS {checks!r}: unknown {unknown or 'empty'}; "
            f"valid: short, full, {PREFLIGHT}, or a comma-separated list of {', '.join(GROUPS)}"
        )
    return [group for group in GROUPS if group in names]


def build_context(args: argparse.Namespace, env: dict[str, str]) -> SelfTestContext:
    world = int(env.get("WORLD_SIZE", "1"))
    local_world = int(env.get("LOCAL_WORLD_SIZE", str(world)))
    # The Job passes the stack's floors as JSON (SELFTEST_FLOORS, with their sources); a
    # --floor flag overrides one by hand.
    floors = json.loads(env.get(SELFTEST_FLOORS) or "{}")
    sources = json.loads(env.get(SELFTEST_FLOOR_SOURCES) or "{}")
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
        autoscaler_metric=args.autoscaler_metric,
        join_timeout_s=args.join_timeout, dcgm_hostengine=args.dcgm_hostengine,
        dcgm_level=args.dcgm_level,
        check_set="short" if args.checks in ("short", PREFLIGHT) else "full",
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
    local = int(os.environ.get("LOCAL_WORLD_SIZE", ctx.world_size))
    if name == "collectives" and args.checks == PREFLIGHT:
        log = nccl_log_path(ctx, os.getpid()) if ctx.device == "cuda" else None
        return lambda: collectives.preflight(ctx, log, local)
    if name == "collectives":
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
        log = nccl_log_path(ctx, os.getpid()) if ctx.device == "cuda" else None
        return lambda: collectives.run(ctx, sizes, args.iters, local, log)
    if name == "latency":
        return lambda: collectives.latency_run(ctx, args.iters, local)
    module = {"inventory": inventory, "hardware": hardware, "compute": compute,
              "agreement": agreement, "nvme": nvme, "metrics": metrics}.get(name)  # fmt: skip
    if module is not None:
        return lambda: module.run(ctx)
    if importlib.util.find_spec(f"selftest.{name}") is None:
        return None
    # Imported inside run_check: a module that is present but fails to import is a FAIL.
    return lambda: importlib.import_module(f"selftest.{name}").run(ctx)


def run_groups(ctx, args, grouped: bool) -> list[CheckResult]:
    results = []
    for name in selected_groups(args.checks):
        check = group_runner(name, ctx, args)
        if check is None:
            results.append(CheckResult(name, "WARN", reason=f"selftest.{name} not in this image"))
        elif name in NEEDS_PEERS and not grouped:
            results.append(CheckResult(name, "SKIP", reason="no process group (see rendezvous)"))
        else:
            results += run_check(name, check)
    return results


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


def preflight_verdict(per_rank) -> str:
    """One line naming each node that FAILed a check, and which (each rank's own results)."""
    failed: dict[str, list[str]] = {}
    for node, _, results in per_rank:
        for result in results:
            if result.status == "FAIL" and result.name not in failed.get(node, []):
                failed.setdefault(node, []).append(result.name)
    if not failed:
        return "preflight PASS on every node"
    return "preflight FAIL: " + "; ".join(
        f"node {node}: {', '.join(names)}" for node, names in failed.items()
    )


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    env = dict(os.environ)
    args = parse_args(argv, env)
    selected_groups(args.checks)  # a bad --checks stops here, before the process group forms
    baseline.tolerance(env)  # and so does a bad SELFTEST_BASELINE_TOLERANCE
    ctx = build_context(args, env)
    rendezvous = init_group(ctx, env)
    grouped = rendezvous.status == "PASS"
    mine = [rendezvous, *run_groups(ctx, args, grouped)]

    together = grouped and ctx.world_size > 1
    # Each rank says where it ran, so the metrics are per node and per GPU.
    per_rank = [(ctx.node, ctx.local_rank, mine)]
    if together:
        gathered = [None] * ctx.world_size if ctx.is_rank0 else None
        dist.gather_object(per_rank[0], gathered, dst=0)
        per_rank = gathered if ctx.is_rank0 else per_rank
    results = merge([r for _, _, r in per_rank]) if ctx.is_rank0 else mine
    if ctx.is_rank0:  # which domain each node ran in, and those the cross-node figure spanned
        results = placement.name_domains(per_rank, results)
    # A canary's figures against its pool's baseline: a FAIL fails the run (and keeps a node
    # the run tests on joining tainted), but is no fault of the node's hardware: quarantine
    # reads each rank's own results, which these rows are not part of.
    held = {}
    if ctx.is_rank0 and baseline.enabled(env):
        held = baseline.hold(env, ctx.prometheus_url, per_rank)
        results += baseline.report_rows(held)
    failed = [r.name for r in results if r.status == "FAIL"]
    # Every node's local rank 0 writes its own node's bundle and, with quarantine on, cordons
    # its own node for the hardware checks it failed: rank 0, which holds every rank's results,
    # tells each node what it failed.
    shared = [bool(failed), quarantine.failures_by_node(per_rank)]
    if together:
        dist.broadcast_object_list(shared, src=0)
    any_failed, node_failures = shared
    outcome = tripped = None
    if ctx.local_rank == 0:
        if any_failed:
            node_ranks = range(ctx.rank, ctx.rank + int(env.get("LOCAL_WORLD_SIZE", "1")))
            bundle.write(ctx.out_dir, ctx.node, node_ranks, env)
        # A node-join FAIL asks the pool's circuit breaker first: open, it quarantines nothing.
        tripped = node_join.breaker(env) if node_join.enabled(env) and any_failed else None
        if (
            node_failures.get(ctx.node)
            and quarantine.enabled(env)
            and not (tripped and tripped.open)
        ):
            outcome = quarantine.quarantine(env, ctx.node, node_failures[ctx.node])
        elif (
            node_failures.get(ctx.node)
            and args.checks == PREFLIGHT
            # Outside a pod there is no termination message to write.
            and quarantine.VERDICT_PATH.exists()
        ):
            # A team's pod may not touch nodes: the platform's watcher reads the verdict from
            # the container's termination message and quarantines the node (selftest/watch.py).
            problem = quarantine.write_verdict(ctx.node, node_failures[ctx.node])
            if problem:
                print(f"preflight: {problem}", file=sys.stderr)
    outcomes = [outcome]
    if together:  # also waits for every bundle before the report names them
        outcomes = [None] * ctx.world_size if ctx.is_rank0 else None
        dist.gather_object(outcome, outcomes, dst=0)
    if ctx.is_rank0:
        if failed:
            results.append(bundle.bundle_row(ctx.out_dir, failed))
        cordoned = quarantine.report_row([o for o in outcomes if o is not None])
        if cordoned is not None:
            results.append(cordoned)
        if node_join.enabled(env):  # one node: rank 0 is its local rank 0
            results.append(node_join.settle(env, ctx.node, not failed, tripped))
        # Each node's baseline rows go with its group: the pool's baseline leaves out a figure
        # its node's run FAILed (components/observability/baseline.py).
        pushed = [*per_rank, *((node, 0, rows) for node, rows in held.items())]
        results.append(push.push(args.pushgateway_url, pushed, time.time()))
    doc = report.report_doc(results, ctx.run_id, ctx.image, ctx.nodes,
                            time.perf_counter() - started)  # fmt: skip
    if ctx.is_rank0:
        json_path, html_path = report.write(ctx.out_dir, doc, results)
        print(report.table(results))
        print(f"\nself-test {report.headline(doc['status'], results, ctx.device)}")
        print(f"report: {json_path}, {html_path} ({doc['duration_s']} s)")
        if failed:
            print(f"support bundle: {ctx.out_dir / 'support-bundle'}")
        if args.bench:
            print("\n".join(["", "benchmark:", *bench_lines(results)]))
        if args.checks == PREFLIGHT:
            print(preflight_verdict(per_rank))
    elif not grouped:  # a rank cut off from rank 0 still says why in the Job's log
        print(report.table(results), file=sys.stderr)
    if grouped:
        dist.destroy_process_group()
    return 1 if worst(r.status for r in results) == "FAIL" else 0
