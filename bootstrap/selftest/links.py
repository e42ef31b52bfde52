"""The links between a node's GPUs: every NVLink link up (`nvidia-smi nvlink --status`), and a
real copy between every GPU pair `nvidia-smi topo -p2p r` marks P2P-capable, with the topology
(`topo -m`) saying which pairs are NVLink. Part of selftest.hardware's group."""

from __future__ import annotations

import re
from collections.abc import Callable

import torch

from selftest.result import CheckResult

_NVLINK_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: .*\))?$")
_NVLINK_LINK = re.compile(r"^Link (\d+): (.*)$")


def parse_nvlink(text: str) -> dict[int, dict[int, str]]:
    """`nvidia-smi nvlink --status`: GPU index -> link -> speed ('26.562 GB/s') or '<inactive>'."""
    gpus: dict[int, dict[int, str]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        gpu, link = _NVLINK_GPU.match(line), _NVLINK_LINK.match(line)
        if gpu:
            current = gpus.setdefault(int(gpu.group(1)), {})
        elif link and current is not None:
            current[int(link.group(1))] = link.group(2).strip()
    return gpus


def nvlink_check(gpus: dict[int, dict[int, str]]) -> CheckResult:
    name = "hardware.nvlink"
    links = {(g, n): s for g, ls in gpus.items() for n, s in ls.items()}
    if not links:
        return CheckResult(name, "SKIP", reason="no NVLink on these GPUs")
    down = sorted(k for k, speed in links.items() if "inactive" in speed.lower())
    by_gpu: dict[int, list[int]] = {}
    for gpu, link in down:
        by_gpu.setdefault(gpu, []).append(link)
    reason = "; ".join(
        f"GPU {g}: link {', '.join(map(str, ls))} inactive" for g, ls in by_gpu.items()
    )
    figures = [
        {
            "gpu": g,
            "value": sum("inactive" not in s for s in ls.values()),
            "unit": "NVLink links up",
        }
        for g, ls in gpus.items()
        if ls
    ]
    return CheckResult(
        name,
        "FAIL" if down else "PASS",
        len(links) - len(down),
        "links up",
        len(links),
        "nvidia-smi nvlink --status: every link of every GPU that has NVLink",
        reason,
        details={"figures": figures},
    )


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_matrix(text: str) -> dict[tuple[int, int], str]:
    """The GPU-by-GPU cells of `nvidia-smi topo -m` or `topo -p2p r`: (row, column) -> 'NV18',
    'PIX', 'SYS', 'OK', 'NS', … ('X' on the diagonal is left out)."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header = next((line.split() for line in lines if line.split()[:1] == ["GPU0"]), [])
    columns = [int(c[3:]) for c in header if re.fullmatch(r"GPU\d+", c)]
    cells = {}
    for line in lines:
        words = line.split()
        if len(words) > len(columns) and re.fullmatch(r"GPU\d+", words[0]):
            row = int(words[0][3:])
            for column, cell in zip(columns, words[1 : len(columns) + 1], strict=True):
                if column != row:
                    cells[(row, column)] = cell
    return cells


def p2p_check(p2p: dict, topology: dict, probe: Callable[[int, int], str | None]) -> CheckResult:
    """Every ordered pair `topo -p2p r` marks OK must really read its peer (`probe` returns an
    error or None); a pair joined by NVLink (`topo -m` NV#) that is not OK is a broken link."""
    name = "hardware.p2p"
    capable = sorted(pair for pair, status in p2p.items() if status == "OK")
    broken = [
        f"GPU{a}->GPU{b}: NVLink ({topology[(a, b)]}) but P2P {p2p.get((a, b), '?')}"
        for (a, b) in sorted(topology)
        if topology[(a, b)].startswith("NV") and p2p.get((a, b)) != "OK"
    ]
    if not capable and not broken:
        return CheckResult(name, "SKIP", reason="no GPU pair is P2P-capable here (topo -p2p r)")
    failed = [f"GPU{a}->GPU{b}: {error}" for a, b in capable if (error := probe(a, b))]
    problems = broken + failed
    return CheckResult(
        name,
        "FAIL" if problems else "PASS",
        len(capable) - len(failed),
        "pairs",
        len(capable),
        "nvidia-smi topo -p2p r (OK pairs) and topo -m (NV# pairs); a copy between each OK pair",
        "; ".join(problems),
    )


def cuda_peer_probe(a: int, b: int) -> str | None:
    """Peer access from GPU a to GPU b, and a copy between them that arrives intact."""
    if not torch.cuda.can_device_access_peer(a, b):
        return "cudaDeviceCanAccessPeer is false"
    source = torch.arange(1 << 20, dtype=torch.int32, device=f"cuda:{a}")
    copied = source.to(f"cuda:{b}")
    return None if torch.equal(copied.cpu(), source.cpu()) else "the copy arrived corrupted"
