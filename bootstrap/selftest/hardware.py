"""Node health from the GPUs' own reports: PCIe links trained at their full generation and
width (read under load: idle links downclock), uncorrectable memory errors and the row remapper
(pending = reset needed, failure = replace), NVLink links up, and peer access between every GPU
pair the topology says is P2P-capable (selftest.links); then the kernel's XID events
(selftest.xid) and DCGM's diagnostic (selftest.dcgm).

Local rank 0 of each node reads the node's GPUs; every rank keeps its own GPU busy while the
links are read. The parsers take the tools' text, so the tests drive them with real output."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.distributed as dist

from selftest import dcgm, xid
from selftest.context import SelfTestContext
from selftest.links import cuda_peer_probe, nvlink_check, p2p_check, parse_matrix, parse_nvlink
from selftest.result import CheckResult
from selftest.tools import run_tool

PCIE_FIELDS = [
    "index",
    "pci.bus_id",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
]
# nvidia-smi --help-query-gpu: pcie.link.gen.max is "the maximum PCI-E link generation possible
# with this GPU and system configuration" (the lower of the GPU's and the slot's), and the
# current figures "may be reduced when the GPU is not in use": hence the load while reading.
PCIE_SOURCE = "nvidia-smi --query-gpu=pcie.link.{gen,width}.{current,max}, read under load"
LOAD_SETTLE_S = 1.0
NAMES = ["pcie_link", "ecc_uncorrectable", "row_remap", "nvlink", "p2p", "xid", "dcgm_diag"]


# --- PCIe ---------------------------------------------------------------------------------------


def parse_pcie(csv_text: str) -> list[dict]:
    """Rows of `nvidia-smi --query-gpu=<PCIE_FIELDS> --format=csv,noheader,nounits`."""
    rows = []
    for line in csv_text.strip().splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(PCIE_FIELDS) or not cells[0].isdigit():
            continue  # a header line, when the format asked for one
        index, bus, *links = cells
        numbers = [int(v) if v.isdigit() else None for v in links]
        rows.append(
            dict(
                zip(
                    ["gpu", "bus_id", "gen", "gen_max", "width", "width_max"],
                    [int(index), bus, *numbers],
                    strict=True,
                )
            )
        )
    return rows


def pcie_check(rows: list[dict]) -> CheckResult:
    name = "hardware.pcie_link"
    if not rows:
        return CheckResult(name, "SKIP", reason="nvidia-smi listed no GPU link")
    down, unread = [], []
    for r in rows:
        label = f"GPU {r['gpu']} ({r['bus_id']})"
        if None in (r["gen"], r["gen_max"], r["width"], r["width_max"]):
            unread.append(label)
        elif r["gen"] < r["gen_max"] or r["width"] < r["width_max"]:
            down.append(
                f"{label}: Gen{r['gen']} x{r['width']}, capable of "
                f"Gen{r['gen_max']} x{r['width_max']}"
            )
    full = len(rows) - len(down) - len(unread)
    if down:
        status, reason = "FAIL", "downtrained PCIe link: " + "; ".join(down)
    elif unread:
        status, reason = "WARN", "link not readable (N/A) for " + ", ".join(unread)
    else:
        status, reason = "PASS", ""
    figures = [
        f
        for r in rows
        if r["gen"] is not None
        for f in (
            {"gpu": r["gpu"], "value": r["gen"], "unit": "PCIe generation"},
            {"gpu": r["gpu"], "value": r["width"], "unit": "PCIe lanes"},
        )
    ]
    return CheckResult(
        name,
        status,
        full,
        "GPUs at full link",
        len(rows),
        PCIE_SOURCE,
        reason,
        details={"links": rows, "figures": figures},
    )


# --- memory errors: `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` ----------------------

_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_KEY_VALUE = re.compile(r"^(.+?)\s+:\s?(.*)$")


def parse_query(text: str) -> dict[str, dict]:
    """`nvidia-smi -q` as a tree per GPU bus id: sections are dicts, `Key : value` lines strings;
    nesting follows the indentation."""
    gpus: dict[str, dict] = {}
    stack: list[tuple[int, dict]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("="):
            continue
        header = _GPU_HEADER.match(line)
        if header:
            stack = [(0, gpus.setdefault(header.group(1), {}))]
            continue
        if not stack:
            continue  # the log's preamble (timestamp, driver, attached GPUs)
        indent = len(raw) - len(raw.lstrip())
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        pair = _KEY_VALUE.match(line)
        if pair:
            stack[-1][1][pair.group(1).strip()] = pair.group(2).strip()
        else:
            section: dict = {}
            stack[-1][1][line] = section
            stack.append((indent, section))
    return gpus


def _section(tree: dict, key: str) -> dict:
    """A section of the tree; {} where nvidia-smi prints the whole section as `N/A`."""
    value = tree.get(key)
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


def uncorrectable(counters: object) -> int | None:
    """Uncorrectable ECC errors in a Volatile or Aggregate section: every `... Uncorrectable ...`
    counter (SRAM and DRAM on Ampere and later), or `Double Bit` / `Total` (older drivers).
    None when the GPU reports none (N/A: ECC off or not supported)."""
    if not isinstance(counters, dict):
        return None
    counts = [_count(v) for k, v in counters.items() if "Uncorrectable" in k]
    double_bit = counters.get("Double Bit")
    if isinstance(double_bit, dict):
        counts.append(_count(double_bit.get("Total")))
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def ecc_check(gpus: dict[str, dict]) -> CheckResult:
    name = "hardware.ecc_uncorrectable"
    source = "nvidia-smi -q -d ECC: Volatile (since the driver loaded) and Aggregate (lifetime)"
    volatile, aggregate = {}, {}
    for bus, tree in gpus.items():
        ecc = _section(tree, "ECC Errors")
        volatile[bus], aggregate[bus] = (
            uncorrectable(ecc.get("Volatile")),
            uncorrectable(ecc.get("Aggregate")),
        )
    if all(v is None for v in volatile.values()):
        return CheckResult(
            name,
            "SKIP",
            reason="no ECC counters reported (N/A: ECC disabled or not supported on these GPUs)",
        )
    since_load = {bus: n for bus, n in volatile.items() if n}
    lifetime = {bus: n for bus, n in aggregate.items() if n}
    total = sum(n or 0 for n in volatile.values())
    if since_load:
        status = "FAIL"
        reason = (
            "; ".join(
                f"GPU {bus}: {n} uncorrectable ECC errors since the driver loaded"
                for bus, n in since_load.items()
            )
            + " (the work on it is suspect; "
        )
        reason += "see hardware.row_remap for the repair)"
    elif lifetime:
        status = "WARN"
        reason = "; ".join(
            f"GPU {bus}: {n} uncorrectable in its lifetime (Aggregate)"
            for bus, n in lifetime.items()
        )
    else:
        status, reason = "PASS", ""
    return CheckResult(
        name,
        status,
        total,
        "errors",
        0,
        source,
        reason,
        details={"volatile": volatile, "aggregate": aggregate},
    )


def row_remap_check(gpus: dict[str, dict]) -> CheckResult:
    """NVIDIA's memory error management (A100 and later: row remapping; earlier: page
    retirement): a pending remap or retirement takes effect at the next GPU reset, so the node
    needs a reboot; a remapping failure is NVIDIA's RMA criterion, so the GPU needs replacing."""
    name = "hardware.row_remap"
    source = "nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT (NVIDIA GPU memory error management)"
    replace_gpu, reboot, seen = [], [], 0
    for bus, tree in gpus.items():
        rows = _section(tree, "Remapped Rows")
        pages = _section(tree, "Retired Pages")
        flags = [
            rows.get("Pending"),
            rows.get("Remapping Failure Occurred"),
            pages.get("Pending Page Blacklist"),
            pages.get("Pending Page Retirement"),
        ]
        seen += any(f in ("Yes", "No") for f in flags)
        if rows.get("Remapping Failure Occurred") == "Yes":
            replace_gpu.append(f"GPU {bus}: row remapping failed: replace the GPU")
        if rows.get("Pending") == "Yes":
            reboot.append(f"GPU {bus}: row remap pending: reset the GPU (reboot the node)")
        if "Yes" in (pages.get("Pending Page Blacklist"), pages.get("Pending Page Retirement")):
            reboot.append(f"GPU {bus}: page retirement pending: reboot the node")
    if not seen:
        return CheckResult(
            name,
            "SKIP",
            reason="neither row remapping nor page retirement reported (N/A) by these GPUs",
        )
    problems = replace_gpu + reboot
    return CheckResult(
        name,
        "FAIL" if problems else "PASS",
        len({p.split(":")[0] for p in problems}),
        "GPUs needing repair",
        0,
        source,
        "; ".join(problems),
    )


# --- the group: PCIe read under load, then memory errors, links (links.py), Xid and DCGM -------


@contextmanager
def gpu_load(ctx: SelfTestContext) -> Iterator[None]:
    """Keep this rank's GPU multiplying until the block ends, so its link runs at speed."""
    stop = threading.Event()
    device = torch.device("cuda", ctx.local_rank)

    def work() -> None:
        a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
        while not stop.is_set():
            a @ a
            torch.cuda.synchronize(device)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join()


def _barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def run(ctx: SelfTestContext) -> list[CheckResult]:
    if ctx.device != "cuda":
        return [CheckResult(f"hardware.{n}", "SKIP", reason="no GPU visible") for n in NAMES]
    started = time.perf_counter()
    with gpu_load(ctx):
        _barrier()  # every GPU of the node is busy before its links are read
        if ctx.local_rank == 0:
            time.sleep(LOAD_SETTLE_S)
            fields = ",".join(PCIE_FIELDS)
            pcie = run_tool(
                ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"]
            )
        _barrier()
    if ctx.local_rank != 0:
        return []
    results = [pcie_check(parse_pcie(pcie.text)) if pcie.ok else _skip("pcie_link", pcie)]
    query = run_tool(["nvidia-smi", "-q", "-d", "ECC,ROW_REMAPPER,PAGE_RETIREMENT"])
    gpus = parse_query(query.text)
    results += (
        [ecc_check(gpus), row_remap_check(gpus)]
        if query.ok
        else [_skip("ecc_uncorrectable", query), _skip("row_remap", query)]
    )
    nvlink = run_tool(["nvidia-smi", "nvlink", "--status"])
    results.append(
        nvlink_check(parse_nvlink(nvlink.text)) if nvlink.ok else _skip("nvlink", nvlink)
    )
    p2p, topo = (
        run_tool(["nvidia-smi", "topo", "-p2p", "r"]),
        run_tool(["nvidia-smi", "topo", "-m"]),
    )
    results.append(
        p2p_check(parse_matrix(p2p.text), parse_matrix(topo.text), cuda_peer_probe)
        if p2p.ok
        else _skip("p2p", p2p)
    )
    results += [xid.run(ctx), dcgm.run(ctx)]
    for result in results:
        result.duration_s = result.duration_s or time.perf_counter() - started
    return results


def _skip(name: str, tool) -> CheckResult:
    return CheckResult(f"hardware.{name}", "SKIP", reason=tool.problem)
