"""The support bundle a failing run leaves beside its report, one folder per node
(`<out>/support-bundle/<node>/`): what NVIDIA support and whoever repairs the node ask for first.

- `nvidia-smi-q.txt`: `nvidia-smi -q`, every GPU's full state;
- `nvidia-smi-topo.txt`: `nvidia-smi topo -m`;
- `kernel-nvidia.log`: the kernel log's NVIDIA lines (NVRM, Xid, nvidia modules);
- `nccl/`: this node's ranks' NCCL_DEBUG=INFO logs;
- `environment.txt`: the environment NCCL saw (NCCL_, FI_, CUDA_, … and the launcher's), with
  anything named like a secret left out and credentials in URLs masked;
- `nvidia-bug-report.log.gz`: `nvidia-bug-report.sh` where the image or host has it;
- `MANIFEST.txt`: each file and how it was obtained, or why it is missing."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from contract.env import NODE_NAME
from selftest.result import CheckResult
from selftest.tools import kernel_log, run_tool

# What NCCL, libfabric, CUDA and the launcher read; the rest of a pod's environment is not NCCL's.
ENV_PREFIXES = (
    "NCCL_",
    "FI_",
    "OFI_",
    "RDMAV_",
    "UCX_",
    "CUDA_",
    "NVIDIA_",
    "TORCH_",
    "SELFTEST_",
    "LOCAL_",
    "POD_",
)
ENV_NAMES = {
    "LD_LIBRARY_PATH",
    "PATH",
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "WORLD_SIZE",
    NODE_NAME,
    "HOSTNAME",
    "OMP_NUM_THREADS",
}
SECRET = re.compile(r"SECRET|TOKEN|PASSW|KEY|CREDENTIAL|AUTH|SESSION|COOKIE", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")
_NVIDIA_LINE = re.compile(r"nvidia|NVRM|Xid", re.IGNORECASE)


def nccl_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables NCCL and its transports read, secrets excluded."""
    kept = {
        name: _URL_CREDENTIALS.sub(r"\1***@", value)
        for name, value in env.items()
        if (name.startswith(ENV_PREFIXES) or name in ENV_NAMES) and not SECRET.search(name)
    }
    return dict(sorted(kept.items()))


def nvidia_lines(log: str) -> str:
    return "".join(line + "\n" for line in log.splitlines() if _NVIDIA_LINE.search(line))


def write(out_dir: Path, node: str, ranks: Iterable[int], env: Mapping[str, str]) -> Path:
    """This node's bundle; returns its folder."""
    folder = out_dir / "support-bundle" / node
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []

    def save(filename: str, how: str, text: str, problem: str) -> None:
        if problem and not text:
            manifest.append(f"{filename}: missing: {problem}")
            return
        (folder / filename).write_text(text)
        manifest.append(f"{filename}: {how}" + (f" ({problem})" if problem else ""))

    for filename, argv in (
        ("nvidia-smi-q.txt", ["nvidia-smi", "-q"]),
        ("nvidia-smi-topo.txt", ["nvidia-smi", "topo", "-m"]),
    ):
        done = run_tool(argv)
        save(filename, " ".join(argv), done.text, done.problem)
    log = kernel_log()
    save("kernel-nvidia.log", "dmesg, NVIDIA lines", nvidia_lines(log.text), log.problem)
    env_text = "".join(f"{k}={v}\n" for k, v in nccl_environment(env).items())
    save("environment.txt", "the environment NCCL saw, secrets excluded", env_text, "")

    nccl = folder / "nccl"
    logs = [p for rank in ranks for p in sorted(out_dir.glob(f"nccl.rank{rank}.*.log"))]
    for path in logs:
        nccl.mkdir(exist_ok=True)
        shutil.copy2(path, nccl / path.name)
    manifest.append(
        f"nccl/: {len(logs)} NCCL_DEBUG=INFO logs of ranks {list(ranks)}"
        if logs
        else "nccl/: missing: no NCCL log (gloo on CPU, or NCCL never ran)"
    )

    report = folder / "nvidia-bug-report.log"
    bug = run_tool(["nvidia-bug-report.sh", "--output-file", str(report)], timeout_s=600)
    made = sorted(p.name for p in folder.glob("nvidia-bug-report.log*"))
    manifest.append(
        f"{', '.join(made)}: nvidia-bug-report.sh"
        if made
        else f"nvidia-bug-report.log.gz: missing: {bug.problem or 'no output'}"
    )
    (folder / "MANIFEST.txt").write_text("\n".join(manifest) + "\n")
    return folder


def bundle_row(out_dir: Path, failed: list[str]) -> CheckResult:
    """The report's pointer to the bundles: a figure with no threshold, never judged."""
    return CheckResult(
        "report.support_bundle",
        "INFO",
        str(out_dir / "support-bundle"),
        reason=f"written because {len(failed)} checks failed: {', '.join(failed)}",
    )
