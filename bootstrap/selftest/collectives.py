"""Collectives: all-reduce gives the right answer, at the bus bandwidth the fabric promises, and
NCCL really uses the fabric (a silent fall back to TCP sockets is the most common failure).

Bandwidth follows nccl-tests' PERFORMANCE.md: algbw = bytes / seconds, and for all-reduce
busbw = algbw × 2(n−1)/n, so that the figure compares with the hardware's link speed whatever n."""

from __future__ import annotations

import re
import time
from pathlib import Path

import torch
import torch.distributed as dist

from contract.floors import SOURCE, busbw_floor
from selftest.context import SelfTestContext
from selftest.result import CheckResult, Floor

GB = 1e9
# nccl-tests' defaults (README, "Performance"): -w 5 warm-up iterations, not timed, then -n 20
# timed ones. Fewer leave launch and first-touch costs in the small sizes' times, and the busbw
# curve stops rising with the message size.
WARMUP_ITERS = 5
ITERS = 20
# Default sweep: 1 KiB … 64 MiB per rank on CPU keeps `make selftest` well under a minute;
# GPU runs sweep to 2 GiB, where the floors below were measured.
CPU_SIZES = [2**10, 2**14, 2**18, 2**22, 2**26]
GPU_SIZES = [2**20, 2**24, 2**27, 2**29, 2**31]

# The gloo floor on CPU has no datasheet: it is a config value, sized to catch a broken loopback.
DEFAULT_CPU_FLOOR_GBPS = 0.05

# Small-message all-reduce, 8 B to 64 KiB per rank. The source documents ask for network
# latency <= 50 us: that seeds the ceiling within a node and across nodes on each RDMA fabric
# (the 8 B figure is judged); a stack sets its own per fabric, and plain TCP has none.
LATENCY_SIZES = [8, 64, 512, 4096, 65536]
LATENCY_FLOORS_US = {"intra": 50.0, "efa": 50.0, "infiniband": 50.0, "roce": 50.0}
LATENCY_SOURCE = "source documents: network latency <= 50 us (seed, 8 B all-reduce)"

# NCCL_DEBUG=INFO names the network it picked ("Using network IB", "Using network AWS Libfabric",
# "Using network Socket") and each connection's transport ("... via NET/Socket/0", "via NET/IB/0",
# "via NET/AWS Libfabric/0", "via P2P/IPC" inside a node).
_USING_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$", re.MULTILINE)
_VIA_NET = re.compile(r"NCCL INFO .* via NET/([^/\s][^/]*)/")
RDMA_FABRICS = {"efa", "infiniband", "roce"}
# Each network connection's channel line (NVIDIA/nccl src/transport/net.cc, sendSetup and
# recvSetup, logged under INIT, which NCCL_DEBUG=INFO prints by default):
# "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s", the first suffix "/GDRDMA"
# when the NIC reads and writes GPU memory directly; a proxied send adds "(<proxy rank>)" after
# the device. Without /GDRDMA the data is staged through host memory.
_NET_CHANNEL = re.compile(r"NCCL INFO Channel .* via NET/([^/\n]+)/\d+(?:\(\d+\))?(/GDRDMA)?")
# On InfiniBand and RoCE, GPUDirect RDMA needs the host's nvidia-peermem: with the driver on the
# host (driver.enabled false) nothing else loads it, and NCCL says so only in these lines.
GDR_FABRICS = {"infiniband", "roce"}


def bus_bandwidth(nbytes: int, seconds: float, world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s for one all-reduce of `nbytes` per rank."""
    algbw = nbytes / seconds / GB
    return algbw, algbw * 2 * (world_size - 1) / world_size


def nccl_networks(log_text: str) -> set[str]:
    """The networks NCCL's INFO log says it used: 'Socket', 'IB', 'Libfabric', 'AWS Libfabric'…"""
    found = set(_USING_NETWORK.findall(log_text)) | set(_VIA_NET.findall(log_text))
    return {name.strip() for name in found}


def socket_fallback_reason(log_text: str, fabric: str) -> str | None:
    """Why this run fell back to TCP sockets on an RDMA fabric, or None when it did not."""
    if fabric not in RDMA_FABRICS:
        return None
    networks = nccl_networks(log_text)
    if "Socket" in networks:
        others = sorted(networks - {"Socket"})
        used = f" (also saw {', '.join(others)})" if others else ""
        return f"NCCL uses NET/Socket on a {fabric} fabric{used}: the RDMA transport did not load"
    return None


def net_connections(log_text: str) -> list[tuple[str, bool]]:
    """(network, uses GPUDirect RDMA) for each network connection NCCL's log shows."""
    return [(net, bool(gdr)) for net, gdr in _NET_CHANNEL.findall(log_text)]


def gpudirect_rdma(log_text: str) -> tuple[str, int, str]:
    """(status, connections with GPUDirect RDMA, reason) on an InfiniBand or RoCE fabric: FAIL
    when no network connection uses it, WARN when only some do (a GPU far from its NIC)."""
    connections = [(net, gdr) for net, gdr in net_connections(log_text) if net != "Socket"]
    direct = sum(1 for _, gdr in connections if gdr)
    if not connections:
        return "SKIP", 0, "no network connection in NCCL's log (single node): nothing to judge"
    nets = "/".join(sorted({net for net, _ in connections}))
    if direct == 0:
        return (
            "FAIL",
            0,
            (
                f"none of NCCL's {len(connections)} NET/{nets} connections uses GPUDirect RDMA (no "
                "/GDRDMA): data is staged through host memory; load nvidia-peermem on the host"
            ),
        )
    if direct < len(connections):
        staged = len(connections) - direct
        return "WARN", direct, f"{staged} of {len(connections)} NET/{nets} connections lack /GDRDMA"
    return "PASS", direct, ""


def floor_for(ctx: SelfTestContext, scope: str) -> tuple[float | None, str]:
    """The busbw floor (GB/s) for 'intra' or 'inter' node all-reduce, and its source."""
    # The names the stack's config gives them (model/config/selftest.py).
    key = f"{scope}_node_busbw_gbps"
    if key in ctx.floors:
        return ctx.floors[key], ctx.floor_sources.get(key, "selftest config")
    if ctx.device == "cpu":
        return DEFAULT_CPU_FLOOR_GBPS, "selftest config (gloo on CPU: no datasheet figure)"
    floor = busbw_floor(scope, ctx.instance_type)
    return floor, SOURCE if floor is not None else "no floor known for this instance type"


def _time_all_reduce(buf: torch.Tensor, group, device: str, iters: int) -> float:
    """Seconds per all-reduce, after WARMUP_ITERS untimed ones, averaged over `iters`."""
    for _ in range(WARMUP_ITERS):
        dist.all_reduce(buf, group=group)
    _sync(device)
    dist.barrier(group=group)
    started = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf, group=group)
    _sync(device)
    return (time.perf_counter() - started) / iters


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# Fault injection for the tests (SELFTEST_INJECT_FAULTS, context.py): this rank's contribution
# gets the lowest bit of one element flipped before the all-reduce.
FAULT = "sdc-allreduce"
CORRECT_SOURCE = (
    "rank r's own segment carries r+1+(i mod 1024), exact zeros elsewhere: every segment of the "
    "sum must equal its owner's pattern bit for bit (nccl-tests -c)"
)


def pattern(rank: int, segment: int) -> torch.Tensor:
    """Rank `rank`'s values, small integers an fp32 sum holds exactly."""
    return (rank + 1 + torch.arange(segment) % 1024).float()


def contribution(rank: int, world: int, segment: int) -> torch.Tensor:
    """Rank `rank`'s all-reduce input: its pattern in its own segment, exact zeros elsewhere, so
    each segment of the sum is one rank's contribution and a wrong one names its rank."""
    buf = torch.zeros(world * segment, dtype=torch.float32)
    buf[rank * segment : (rank + 1) * segment] = pattern(rank, segment)
    return buf


def wrong_segments(result: torch.Tensor, world: int, segment: int) -> dict[int, int]:
    """Wrong elements of the sum, by the rank whose segment holds them."""
    wrong = {}
    for owner in range(world):
        got = result[owner * segment : (owner + 1) * segment]
        count = int((got != pattern(owner, segment)).sum())
        if count:
            wrong[owner] = count
    return wrong


def culprits(seen: list[dict[int, int]]) -> tuple[list[int], list[int]]:
    """From each receiver's wrong segments: (the ranks whose contribution arrived wrong at more
    than half the receivers, the receivers that alone saw other segments wrong). With two ranks
    a segment wrong at both is its owner's; wrong at one, that receiver's."""
    n = len(seen)
    contributors = sorted({s for wrong in seen for s in wrong
                           if 2 * sum(s in other for other in seen) > n})  # fmt: skip
    receivers = [r for r, wrong in enumerate(seen) if set(wrong) - set(contributors)]
    return contributors, receivers


def correctness(ctx: SelfTestContext, name: str, group=None, numel: int = 1 << 16) -> CheckResult:
    """One all-reduce over `group` of every rank's contribution, each rank's view of it gathered:
    FAIL on the ranks named as the culprit, WARN on the others that received the wrong sum."""
    started = time.perf_counter()
    n, me = dist.get_world_size(group), dist.get_rank(group)
    segment = max(1, numel // n)
    buf = contribution(me, n, segment)
    if FAULT in ctx.faults:
        buf.view(torch.int32)[me * segment] ^= 1
    buf = buf.to(_dev(ctx))
    dist.all_reduce(buf, group=group)
    wrong = wrong_segments(buf.cpu(), n, segment)
    seen: list = [None] * n
    dist.all_gather_object(seen, (ctx.node, ctx.local_rank, ctx.rank, wrong), group=group)
    contributors, receivers = culprits([view[3] for view in seen])

    def who(r: int) -> str:
        node, gpu, rank, _ = seen[r]
        return f"rank {rank} (node {node}, GPU {gpu})"

    reasons = [
        f"the contribution of {who(s)} arrived wrong at "
        f"{sum(s in view[3] for view in seen)} of {n} ranks "
        f"({max(view[3].get(s, 0) for view in seen)} of {segment} elements)"
        for s in contributors
    ] + [f"{who(r)} received a sum the others did not" for r in receivers]
    count = sum(wrong.values())
    if me in contributors or me in receivers:
        status = "FAIL"
    elif count:
        status = "WARN"
        reasons.insert(0, f"received a wrong sum ({count} elements) through no fault of its own")
    else:
        status = "PASS"
    return CheckResult(
        name, status, count, "wrong elements", 0, CORRECT_SOURCE,
        "; ".join(reasons) if status != "PASS" else "", time.perf_counter() - started,
        details={"contributors": [seen[s][2] for s in contributors],
                 "receivers": [seen[r][2] for r in receivers]},
    )  # fmt: skip


def correctness_checks(ctx: SelfTestContext, local: int) -> list[CheckResult]:
    """The sum checked across the whole group and, on several nodes, within each node (the
    transports the bandwidth checks measure: the network and the node's own links)."""
    groups, mine = node_group(ctx, local)
    results = [correctness(ctx, "collectives.allreduce_correct")]
    intra = "collectives.allreduce_correct_intra_node"
    if len(groups) == 1:
        why = "single node: the whole group's all-reduce is the node's"
        return [*results, CheckResult(intra, "SKIP", reason=why)]
    if dist.get_world_size(mine) == 1:
        why = "one rank per node: nothing to check inside a node"
        return [*results, CheckResult(intra, "SKIP", reason=why)]
    return [*results, correctness(ctx, intra, mine)]


def _dev(ctx: SelfTestContext) -> torch.device:
    return torch.device("cuda", ctx.local_rank) if ctx.device == "cuda" else torch.device("cpu")


def sweep(ctx: SelfTestContext, sizes: list[int], group, group_size: int, iters: int) -> list[dict]:
    """busbw per message size (bytes per rank) over `group`."""
    rows = []
    for nbytes in sizes:
        buf = torch.ones(nbytes // 4, dtype=torch.float32, device=_dev(ctx))
        seconds = _time_all_reduce(buf, group, ctx.device, iters)
        algbw, busbw = bus_bandwidth(nbytes, seconds, group_size)
        rows.append({"bytes": nbytes, "seconds": seconds, "algbw": algbw, "busbw": busbw})
    return rows


def bandwidth_check(ctx: SelfTestContext, scope: str, rows: list[dict], seconds: float):
    """The largest message's busbw against the floor (small messages measure latency, not bw)."""
    floor, source = floor_for(ctx, scope)
    best = rows[-1]["busbw"]
    if floor is None:
        status, reason = "WARN", f"no {scope}-node floor for {ctx.instance_type!r}"
    elif best >= floor:
        status, reason = "PASS", ""
    else:
        status = "FAIL"
        reason = f"busbw {best:.3g} GB/s at {rows[-1]['bytes']} B is under the {floor} GB/s floor"
    return CheckResult(
        f"collectives.allreduce_busbw_{scope}_node", status, round(best, 4), "GB/s", floor,
        source, reason, seconds, details={"sweep": rows, "floor": floor},
        floor=None if floor is None else Floor(floor, "GB/s"),
    )  # fmt: skip


def node_groups(world_size: int, local_world_size: int) -> list[list[int]]:
    """Ranks per node, as torchrun numbers them: node k holds ranks k·L … k·L+L−1."""
    return [
        list(range(start, min(start + local_world_size, world_size)))
        for start in range(0, world_size, local_world_size)
    ]


def node_group(ctx: SelfTestContext, local: int) -> tuple[list[list[int]], object]:
    """Every node's ranks, and the process group of this rank's node. Every rank creates every
    node's group (new_group is collective)."""
    groups = node_groups(ctx.world_size, local)
    handles = [dist.new_group(ranks) for ranks in groups]
    return groups, next(h for ranks, h in zip(groups, handles, strict=True) if ctx.rank in ranks)


def scoped_sweeps(
    ctx: SelfTestContext, sizes: list[int], iters: int, local: int
) -> dict[str, tuple[list[dict] | None, float, str]]:
    """The sweep within this rank's node and across all nodes: scope -> (rows, seconds, why
    there are none)."""
    groups, mine = node_group(ctx, local)
    out: dict[str, tuple[list[dict] | None, float, str]] = {}
    started = time.perf_counter()
    if dist.get_world_size(mine) > 1:
        rows = sweep(ctx, sizes, mine, dist.get_world_size(mine), iters)
        out["intra"] = (rows, time.perf_counter() - started, "")
    else:
        out["intra"] = (None, 0.0, "one rank per node: nothing to measure inside a node")
    started = time.perf_counter()
    if len(groups) > 1:
        out["inter"] = (sweep(ctx, sizes, None, ctx.world_size, iters),
                        time.perf_counter() - started, "")  # fmt: skip
    else:
        out["inter"] = (None, 0.0, "single node: no cross-node all-reduce")
    return out


def run(
    ctx: SelfTestContext,
    sizes: list[int] | None = None,
    iters: int = ITERS,
    local_world_size: int | None = None,
    nccl_log: Path | None = None,
) -> list[CheckResult]:
    """Correctness, then busbw within each node and across all nodes, then the fallback check."""
    sizes = sizes or (GPU_SIZES if ctx.device == "cuda" else CPU_SIZES)
    local = local_world_size or ctx.world_size
    results = correctness_checks(ctx, local)
    for scope, (rows, seconds, why) in scoped_sweeps(ctx, sizes, iters, local).items():
        name = f"collectives.allreduce_busbw_{scope}_node"
        results.append(bandwidth_check(ctx, scope, rows, seconds) if rows
                       else CheckResult(name, "SKIP", reason=why))  # fmt: skip
    results += [fallback_check(ctx, nccl_log), gpudirect_check(ctx, nccl_log)]
    return results


def preflight(
    ctx: SelfTestContext, nccl_log: Path | None = None, local_world_size: int | None = None
) -> list[CheckResult]:
    """The preflight's part: the small all-reduces checked across the whole group and within
    each node, then the transport they used (NCCL's log), without the bandwidth sweeps."""
    return [*correctness_checks(ctx, local_world_size or ctx.world_size),
            fallback_check(ctx, nccl_log), gpudirect_check(ctx, nccl_log)]  # fmt: skip


def latency_floor(ctx: SelfTestContext, scope: str) -> tuple[float | None, str]:
    """The 8-byte all-reduce latency ceiling (µs) within a node, or across nodes on the pool's
    fabric; a stack's `{scope}_node_allreduce_latency_us` wins. TCP has no floor."""
    key = f"{scope}_node_allreduce_latency_us"
    if key in ctx.floors:
        return ctx.floors[key], ctx.floor_sources.get(key, "selftest config")
    floor = LATENCY_FLOORS_US.get("intra" if scope == "intra" else ctx.fabric)
    return floor, LATENCY_SOURCE if floor is not None else f"no latency floor for {ctx.fabric}"


def latency_check(ctx: SelfTestContext, scope: str, rows: list[dict], seconds: float):
    """The smallest message's time is the latency (nccl-tests reads it the same way); the
    sweep to 64 KiB is kept for the report."""
    for row in rows:
        row["latency_us"] = row["seconds"] * 1e6
    latency, name = rows[0]["latency_us"], f"collectives.allreduce_latency_{scope}_node"
    floor, source = latency_floor(ctx, scope)
    details = {"latency_sweep": rows}
    if ctx.device != "cuda":
        return CheckResult(name, "SKIP", round(latency, 1), "us", reason="gloo on CPU: measured "
                           "for reference; the floors are NCCL's on a GPU fabric",
                           duration_s=seconds, details=details)  # fmt: skip
    if floor is None:
        return CheckResult(name, "INFO", round(latency, 1), "us", reason=source,
                           duration_s=seconds, details=details)  # fmt: skip
    ok = latency <= floor
    reason = (
        ""
        if ok
        else (
            f"{latency:.1f} us for a {rows[0]['bytes']} B all-reduce, over the {floor:g} us floor"
        )
    )
    return CheckResult(name, "PASS" if ok else "FAIL", round(latency, 1), "us", floor, source,
                       reason, seconds, details=details)  # fmt: skip


def latency_run(ctx: SelfTestContext, iters: int = ITERS, local_world_size: int | None = None):
    """Small-message all-reduce latency (8 B to 64 KiB) within and across nodes."""
    results = []
    for scope, (rows, seconds, why) in scoped_sweeps(
        ctx, LATENCY_SIZES, iters, local_world_size or ctx.world_size
    ).items():
        name = f"collectives.allreduce_latency_{scope}_node"
        results.append(latency_check(ctx, scope, rows, seconds) if rows
                       else CheckResult(name, "SKIP", reason=why))  # fmt: skip
    return results


def fallback_check(ctx: SelfTestContext, nccl_log: Path | None) -> CheckResult:
    """FAIL when NCCL's own log shows TCP sockets on a fabric that should be RDMA."""
    name = "collectives.nccl_transport"
    if ctx.device != "cuda":
        return CheckResult(name, "SKIP", reason="gloo on CPU: no NCCL transport to check")
    if nccl_log is None or not nccl_log.exists():
        return CheckResult(name, "WARN", reason="no NCCL_DEBUG=INFO log to read")
    text = nccl_log.read_text(errors="replace")
    networks = ", ".join(sorted(nccl_networks(text))) or "none (single node: P2P/SHM only)"
    reason = socket_fallback_reason(text, ctx.fabric)
    return CheckResult(
        name, "FAIL" if reason else "PASS", networks, "", f"no NET/Socket on {ctx.fabric}",
        "NCCL_DEBUG=INFO log: 'Using network …' and '… via NET/<transport>/'", reason or "",
    )  # fmt: skip


def gpudirect_check(ctx: SelfTestContext, nccl_log: Path | None) -> CheckResult:
    """FAIL an InfiniBand or RoCE pool whose NCCL log shows no connection with GPUDirect RDMA."""
    name = "collectives.gpudirect_rdma"
    if ctx.device != "cuda":
        return CheckResult(name, "SKIP", reason="gloo on CPU: no NCCL network to check")
    if ctx.fabric not in GDR_FABRICS:
        return CheckResult(name, "SKIP", reason=f"judged on infiniband and roce, not {ctx.fabric}")
    if nccl_log is None or not nccl_log.exists():
        return CheckResult(name, "WARN", reason="no NCCL_DEBUG=INFO log to read")
    status, direct, reason = gpudirect_rdma(nccl_log.read_text(errors="replace"))
    return CheckResult(
        name, status, direct, "connections with /GDRDMA", "every network connection",
        "NCCL_DEBUG=INFO channel lines '... via NET/<net>/<dev>/GDRDMA' (src/transport/net.cc)",
        reason,
    )  # fmt: skip
