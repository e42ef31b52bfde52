"""Inventory: the GPUs this node shows are the ones requested and the catalog promises, with
their model, memory and driver / CUDA / NCCL versions; the fabric's devices are there; and which
GPUs share a NUMA node with this process (a data loader on the far socket halves host bandwidth);
and, on a fabric, that this process may lock as much memory as verbs registration needs; and
the pod's QoS class and the CPUs it runs on (Guaranteed, on CPUs of its own).

Fabric devices are counted from /sys/class/infiniband: the kernel lists every RDMA device there —
EFA (`rdmap*`) and Mellanox HCAs (`mlx5_*`) alike — without needing libfabric's fi_info."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import torch

from contract.env import (
    CPU_LIMIT_MILLICORES,
    CPU_REQUEST_MILLICORES,
    MEMORY_LIMIT_MIB,
    MEMORY_REQUEST_MIB,
)
from selftest import placement
from selftest.context import SelfTestContext
from selftest.result import CheckResult
from selftest.tools import run_tool

SYS = Path("/sys")


def parse_cpulist(text: str) -> set[int]:
    """A kernel cpulist ('0-3,8,10-11') as a set of CPU numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def numa_local_gpus(
    gpu_numa: dict[int, int], node_cpus: dict[int, set[int]], process_cpus: set[int]
) -> list[int]:
    """GPUs whose NUMA node holds at least one CPU this process may run on."""
    mine = {node for node, cpus in node_cpus.items() if cpus & process_cpus}
    return sorted(gpu for gpu, node in gpu_numa.items() if node in mine)


def gpu_count_check(visible: int, ctx: SelfTestContext) -> CheckResult:
    """visible = requested (ctx.expected_gpus) = catalog (ctx.catalog_gpus, when known)."""
    expected = ctx.expected_gpus
    parts = [f"{visible} visible", f"{expected} requested"]
    problems = []
    if visible != expected:
        problems.append(f"{expected} GPUs requested, {visible} visible")
    if ctx.catalog_gpus is not None:
        parts.append(f"{ctx.catalog_gpus} in the catalog for {ctx.instance_type}")
        if expected != ctx.catalog_gpus:
            problems.append(f"the catalog's {ctx.instance_type} has {ctx.catalog_gpus}")
    return CheckResult(
        "inventory.gpu_count", "FAIL" if problems else "PASS", visible, "GPUs", expected,
        "requested by the Job (nvidia.com/gpu) = instance catalog", "; ".join(problems),
        details={"summary": ", ".join(parts)},
    )  # fmt: skip


def fabric_devices(sys_root: Path = SYS) -> list[str]:
    """RDMA devices the kernel shows (EFA and InfiniBand / RoCE HCAs)."""
    ib = sys_root / "class" / "infiniband"
    return sorted(p.name for p in ib.iterdir()) if ib.is_dir() else []


def fabric_check(ctx: SelfTestContext, sys_root: Path = SYS) -> CheckResult:
    devices = fabric_devices(sys_root)
    expected = ctx.expected_fabric_devices
    name = "inventory.fabric_devices"
    if expected == 0 and ctx.fabric == "tcp":
        return CheckResult(name, "SKIP", len(devices), "devices", 0, reason="no RDMA fabric here")
    ok = len(devices) == expected
    reason = "" if ok else f"{expected} {ctx.fabric} devices advertised, {len(devices)} present"
    return CheckResult(
        name, "PASS" if ok else "FAIL", len(devices), "devices", expected,
        "node group resources (vpc.amazonaws.com/efa or the RDMA resource)", reason,
        details={"devices": devices},
    )  # fmt: skip


# Fabrics whose transport registers memory through the verbs API (libfabric's EFA provider,
# NCCL's InfiniBand / RoCE transport): the pages it pins are charged against RLIMIT_MEMLOCK.
VERBS_FABRICS = ("efa", "infiniband", "roce")
# No documented minimum fits every job: what NCCL registers grows with its channels and peers.
# The RDMA stacks' own advice is no limit: Red Hat's RHEL 7 Networking Guide, "Relaxing memlock
# restrictions for users" (rdma.conf: memlock unlimited), and the Open MPI FAQ (OpenFabrics,
# "How can a system administrator (or user) change locked memory limits?").
MEMLOCK_SOURCE = (
    "getrlimit(RLIMIT_MEMLOCK): verbs registration pins against it; RDMA stacks ask unlimited"
)
MEMLOCK_FIX = (
    "Kubernetes sets no rlimit per pod, and CAP_IPC_LOCK does nothing for a non-root process: "
    "run the node's containerd with LimitMEMLOCK=infinity (docs/fabric.md, Locked memory)"
)


def _limit(value: int) -> int | str:
    """A limit as `ulimit -l` shows it: KiB, or "unlimited"."""
    return "unlimited" if value == resource.RLIM_INFINITY else value // 1024


def memlock_check(fabric: str, limits: tuple[int, int] | None = None) -> CheckResult:
    """The locked-memory limit this process runs with (soft, hard; getrlimit's by default):
    unlimited on a verbs fabric, else a FAIL naming it; reported and not judged without one."""
    soft, hard = limits if limits is not None else resource.getrlimit(resource.RLIMIT_MEMLOCK)
    name, value = "inventory.memlock", _limit(soft)
    unit = "" if value == "unlimited" else "KiB"
    details = {"soft": _limit(soft), "hard": _limit(hard)}
    if fabric not in VERBS_FABRICS:
        return CheckResult(
            name, "SKIP", value, unit, "unlimited", MEMLOCK_SOURCE,
            f"no verbs fabric here ({fabric}): nothing registers memory", details=details,
        )  # fmt: skip
    if soft == hard == resource.RLIM_INFINITY:
        return CheckResult(name, "PASS", value, unit, "unlimited", MEMLOCK_SOURCE, details=details)
    reason = (
        f"RLIMIT_MEMLOCK soft {details['soft']}, hard {details['hard']} (KiB) on a {fabric} pool: "
        f"verbs memory registration fails once the pinned buffers pass it. {MEMLOCK_FIX}"
    )
    return CheckResult(
        name, "FAIL", value, unit, "unlimited", MEMLOCK_SOURCE, reason, details=details
    )  # fmt: skip


# cgroup v2 first, v1's cpuset hierarchy second: the CPUs the container may run on.
CPUSET_FILES = (
    Path("/sys/fs/cgroup/cpuset.cpus.effective"),
    Path("/sys/fs/cgroup/cpuset/cpuset.cpus"),
)
QOS_SOURCE = (
    "Kubernetes: Guaranteed = CPU and memory requests equal limits; the static CPU manager "
    "gives such a container with an integer CPU request that many CPUs of its own"
)


def qos_class(env: dict[str, str]) -> str:
    """The QoS class of a one-container pod from the container's requests and limits, as
    Kubernetes assigns it (pkg/apis/core/v1/helper/qos/qos.go `GetPodQOS`). The downward API
    reports an unset limit as the node's allocatable and an unset request as 0; a request left
    out beside a limit defaults to the limit, so equal values mean Guaranteed either way."""
    cpu, memory = int(env[CPU_REQUEST_MILLICORES]), int(env[MEMORY_REQUEST_MIB])
    if cpu == memory == 0:
        return "BestEffort"
    limits = (CPU_LIMIT_MILLICORES, MEMORY_LIMIT_MIB)
    if cpu and memory and (cpu, memory) == tuple(int(env[k]) for k in limits):
        return "Guaranteed"
    return "Burstable"


def read_cpuset(files: tuple[Path, ...] = CPUSET_FILES) -> set[int] | None:
    for path in files:
        if path.is_file():
            return parse_cpulist(path.read_text())
    return None


def cpu_pinning_check(
    env: dict[str, str], cpuset: set[int] | None, affinity: set[int], node_cpus: int
) -> CheckResult:
    """Guaranteed with integer CPUs on exactly that many CPUs of its own: PASS. Guaranteed with
    a fractional CPU (a pod on shared GPUs) runs on the shared CPUs by design: PASS. Anything
    else WARNs: training still runs, but beside every other pod's threads on the node's shared
    CPUs (and, Burstable, evicted first under memory pressure). Not a FAIL, which blocks `up`:
    the cause is the node's kubelet (an existing cluster's static CPU manager) or a pool that
    gives no `cpus_per_gpu`, not a faulty node. Outside a pod there is nothing to judge: SKIP."""
    name = "inventory.cpu_pinning"
    if CPU_REQUEST_MILLICORES not in env:
        return CheckResult(name, "SKIP", reason="not in a Job's pod: no requests passed")
    qos = qos_class(env)
    cpus = cpuset if cpuset is not None else affinity
    limit = int(env[CPU_LIMIT_MILLICORES])
    details = {"qos_class": qos, "cpuset": sorted(cpus), "affinity": sorted(affinity),
               "cpu_limit_millicores": limit, "node_cpus": node_cpus}  # fmt: skip
    value = f"{qos}, {len(cpus)} CPUs"
    if qos != "Guaranteed":
        reason = (
            f"the pod is {qos}: it runs on the node's shared CPUs, and is evicted before "
            "Guaranteed pods; give the pool cpus_per_gpu (docs/training.md, CPUs and QoS)"
        )
        return CheckResult(name, "WARN", value, "", "Guaranteed", QOS_SOURCE, reason,
                           details=details)  # fmt: skip
    if limit % 1000:
        return CheckResult(name, "PASS", value, "", "Guaranteed", QOS_SOURCE,
                           details=details)  # fmt: skip
    wanted = limit // 1000
    threshold = f"Guaranteed, {wanted} exclusive CPUs"
    if len(cpus) == wanted and len(cpus) < node_cpus and affinity <= cpus:
        return CheckResult(name, "PASS", value, "", threshold, QOS_SOURCE, details=details)
    reason = (
        f"Guaranteed with {wanted} CPUs, but it may run on {len(cpus)} of the node's "
        f"{node_cpus}: the kubelet does not pin it (cpuManagerPolicy static on the node?)"
    )
    return CheckResult(name, "WARN", value, "", threshold, QOS_SOURCE, reason,
                       details=details)  # fmt: skip


def _smi(*args: str) -> str:
    """nvidia-smi's output, or '' where it is not installed or fails."""
    done = run_tool(["nvidia-smi", *args])
    return done.text if done.ok else ""


def gpu_checks(ctx: SelfTestContext) -> list[CheckResult]:
    """Model, memory and versions per node, then topology and NUMA locality."""
    props = [torch.cuda.get_device_properties(i) for i in range(torch.cuda.device_count())]
    models = sorted({p.name for p in props})
    memory_gb = min(p.total_memory for p in props) / 1e9
    driver = _smi("--query-gpu=driver_version", "--format=csv,noheader").split("\n")[0].strip()
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    versions = f"driver {driver or '?'}, CUDA {torch.version.cuda}, NCCL {nccl}"
    results = [
        CheckResult(
            "inventory.gpu_model", "PASS" if len(models) == 1 else "FAIL", ", ".join(models),
            threshold="one model per node",
            reason="" if len(models) == 1 else "mixed GPU models on one node",
        ),
        CheckResult("inventory.gpu_memory", "INFO", round(memory_gb, 1), "GB"),
        CheckResult("inventory.versions", "PASS" if driver else "WARN", versions,
                    threshold="driver version readable",
                    reason="" if driver else "nvidia-smi not found: driver version unknown"),
    ]  # fmt: skip
    results.append(topology_check())
    return results


def pci_numa(smi_csv: str, sys_root: Path = SYS) -> dict[int, int]:
    """GPU index -> NUMA node, from `nvidia-smi --query-gpu=index,pci.bus_id` and sysfs."""
    gpu_numa = {}
    for line in smi_csv.strip().splitlines():
        index, _, bus = (part.strip() for part in line.partition(","))
        # nvidia-smi prints an 8-digit PCI domain ("00000000:18:00.0"); sysfs uses 4 ("0000:…").
        node_file = sys_root / "bus" / "pci" / "devices" / bus.lower()[-12:] / "numa_node"
        if node_file.exists():
            gpu_numa[int(index)] = max(int(node_file.read_text()), 0)
    return gpu_numa


def topology_check() -> CheckResult:
    """`nvidia-smi topo -m` kept for the report; NUMA locality from sysfs per GPU's PCI address."""
    topo = _smi("topo", "-m")
    gpu_numa = pci_numa(_smi("--query-gpu=index,pci.bus_id", "--format=csv,noheader"))
    node_cpus = {
        int(d.name[4:]): parse_cpulist((d / "cpulist").read_text())
        for d in (SYS / "devices" / "system" / "node").glob("node[0-9]*")
    }
    local = numa_local_gpus(gpu_numa, node_cpus, os.sched_getaffinity(0))
    status = "PASS" if topo and local else "WARN"
    reason = "" if status == "PASS" else "topology or NUMA nodes unreadable (nvidia-smi / sysfs)"
    return CheckResult(
        "inventory.topology", status, f"GPUs {local} share a NUMA node with this process",
        threshold="topology and NUMA nodes readable", reason=reason,
        details={"topo": topo, "gpu_numa": gpu_numa},
    )  # fmt: skip


def run(ctx: SelfTestContext) -> list[CheckResult]:
    started = time.perf_counter()
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    pinning = cpu_pinning_check(
        dict(os.environ), read_cpuset(), os.sched_getaffinity(0), os.cpu_count() or 0
    )
    results = [gpu_count_check(visible, ctx), fabric_check(ctx), memlock_check(ctx.fabric), pinning]
    if visible:
        results += gpu_checks(ctx)
    else:
        for name in ("gpu_model", "gpu_memory", "versions", "topology"):
            results.append(CheckResult(f"inventory.{name}", "SKIP", reason="no GPU visible"))
    results.append(placement.domain_check(ctx, os.environ))
    for result in results:
        result.duration_s = result.duration_s or time.perf_counter() - started
    return results
