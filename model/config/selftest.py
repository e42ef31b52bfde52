"""The post-deploy self-test (components/selftest/job.py): where it runs, how `pulumi up` waits for
it, and the floors it holds the platform to.

`mode` decides what a failing self-test does to `pulumi up`: `block` awaits the Job, so a FAIL
fails the update; `warn` runs it without waiting (the plan warns that nobody waits); `off`
declares nothing. Left unset it is `off` until the stack names an image (the Job has nothing to
run without one), then `block` on a production stack and `warn` elsewhere.

Floors default to the figures in shared/FACTS.md ("Self-test numbers"), one table in
contract/floors.py that the image reads too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from contract.floors import (
    INTER_NODE_BUSBW_GBPS,
    INTRA_NODE_BUSBW_GBPS,
    NVLINK_SOURCE,
    SOURCE,
    nvlink_busbw_floor,
)
from model.catalog import CATALOG
from model.config.base import DnsLabel, FieldProblem, Int, Settings, shaped
from model.config.bounds import MAX_CLUSTER_NODES
from model.config.node_join import NodeJoinSettings, check_join_dcgm_level, check_node_join
from model.config.pools import always_up_pools, windowed_keys
from model.config.references import GPU_POOL, LOCAL_QUEUE, PRIORITY_CLASS, refers
from model.config.selftest_schedule import ScheduleSettings, check_schedule, scheduled
from model.dra import nvlink_problem

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.pools import GpuPool

Mode = Literal["block", "warn", "off"]

# An image pinned by content: `<registry>/<repository>[:<tag>]@sha256:<64 hex digits>` (OCI
# distribution spec, "Pulling manifests": a digest is `<algorithm>:<encoded>`, sha256 encodes 64
# lowercase hex digits). A tag alone can be moved under the same name; a digest cannot.
DIGEST_WORDS = (
    "an image pinned by digest: <registry>/<repository>[:<tag>]@sha256:<64 lowercase hex "
    "digits>, e.g. 111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest@sha256:…"
)
PinnedImage = Annotated[str, shaped(r"[a-z0-9][^\s@]*/[^\s@]+@sha256:[0-9a-f]{64}", DIGEST_WORDS)]

# The NVMe cache's small-file latency floor: the source documents ask for under 200 µs.
NVME_P99_LATENCY_US = 200.0


def runs(cfg: PlatformConfig) -> bool:
    return cfg.selftest.resolved_mode(cfg.production) != "off"


def queued(cfg: PlatformConfig) -> bool:
    """The self-test Job or CronJob goes through Kueue: it runs, and Kueue is on."""
    return (runs(cfg) or scheduled(cfg)) and cfg.scheduling.enabled


def _fraction(default: float, what: str) -> float:
    return Field(default, gt=0, le=1, description=f"{what}, as a fraction (0-1].")


class SelfTestSettings(Settings):
    """The bootstrap self-test Job that runs after every deploy (docs/selftest.md)."""

    mode: Mode | None = Field(
        None,
        description="`block`: pulumi up waits for the Job and fails when the self-test "
        "fails. `warn`: runs it without waiting. `off`: no self-test. Default: off without "
        "an image; with one, block on production stacks, warn elsewhere.",
    )
    image: PinnedImage | None = Field(
        None,
        description="The bootstrap image (bootstrap/Dockerfile), pinned by digest; on AWS "
        "push it to the platform's ECR repository (output `selftest_repository_url`). "
        "Required unless mode is off.",
    )
    pool: Annotated[DnsLabel, refers(GPU_POOL, when=runs)] | None = Field(
        None,
        description="The GPU pool it runs on, not one with a reservation_window (its flavor is "
        "closed outside the window, so the Job would never be admitted; the node-join check "
        "tests its nodes in the warm-up). Default: the stack's first pool without one.",
    )
    nodes: Int = Field(
        1, ge=1, le=MAX_CLUSTER_NODES, description="Nodes it spans (1 or more, at most the pool's)."
    )
    gpus_per_node: Int | None = Field(
        None,
        ge=1,
        le=16,
        description="GPUs per node. Default: every GPU of one of the pool's nodes.",
    )
    timeout_minutes: Int = Field(
        30,
        ge=5,
        le=1440,
        description="How long the Job may run once admitted (activeDeadlineSeconds; its clock "
        "restarts when Kueue resumes it) (5-1440).",
    )
    provisioning_minutes: Int = Field(
        30,
        ge=0,
        le=1440,
        description="With block, how much longer than timeout_minutes pulumi up waits for the "
        "Job: its wait starts at creation, so Kueue queueing and GPU node provisioning come "
        "out of it before the run does (0-1440).",
    )
    queue: Annotated[DnsLabel, refers(LOCAL_QUEUE, when=queued)] = Field(
        "default",
        description="The Kueue LocalQueue it submits to: the one the platform declares in the "
        "self-test's namespace (namespaces.selftest), on the training namespace's ClusterQueue; "
        "scheduled runs too, except where the platform's autoscaler sizes the pools and "
        "selftest.schedule.provision_nodes is false: they wait in selftest-idle-nodes.",
    )
    priority_class: Annotated[DnsLabel, refers(PRIORITY_CLASS, when=queued)] = Field(
        "research",
        description="PriorityClass and Kueue WorkloadPriorityClass: `research` preempts only "
        "preemptible work, never a production training run.",
    )
    intra_node_busbw_gbps: float | None = Field(
        None,
        gt=0,
        le=100000,
        description="All-reduce busbw floor within a node, GB/s. Default: the FACTS.md figure "
        "for the pool's GPU (A100 228, H100 460, H200 431), else none (WARN only).",
    )
    inter_node_busbw_gbps: float | None = Field(
        None,
        gt=0,
        le=100000,
        description="All-reduce busbw floor across nodes, GB/s. Default: the FACTS.md figure "
        "for the pool's instance type (2 x p4de 78, 2 x p5 444).",
    )
    gemm_fraction: float = _fraction(0.75, "Dense bf16 GEMM floor: share of the GPU's peak")
    memory_bandwidth_fraction: float = _fraction(
        0.80, "Device-memory bandwidth floor: share of the GPU's HBM peak"
    )
    storage_fraction: float = _fraction(
        0.5,
        "shared-data sequential throughput floor: share of the plan's expected throughput "
        "(capacity x tier), per node",
    )
    nvme_p99_latency_us: float = Field(
        NVME_P99_LATENCY_US,
        gt=0,
        le=10**7,
        description="nvme-cache small-file p99 latency ceiling, µs.",
    )
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    node_join: NodeJoinSettings = Field(default_factory=NodeJoinSettings)
    cordon_on_fail: bool = Field(
        False,
        description="Quarantine: a node that fails a hardware check in any run (post-deploy "
        "or scheduled) is cordoned, labelled and tainted "
        "gpu-platform/selftest-failed=<check>:NoSchedule, so that no GPU pod lands there again, "
        "through a ClusterRole that grants only get and patch on nodes. A job's preflight "
        "quarantines its failing node whatever this says, through the platform's quarantine "
        "watcher. docs/monitoring.md says how to return a node.",
    )

    @property
    def up_wait_minutes(self) -> int:
        """How long pulumi up waits for the Job: admission and nodes first, then the run."""
        return self.provisioning_minutes + self.timeout_minutes

    def resolved_mode(self, production: bool) -> Mode:
        if self.mode is not None:
            return self.mode
        if self.image is None:
            return "off"
        return "block" if production else "warn"


def selftest_pool(cfg: PlatformConfig) -> GpuPool:
    """The pool the self-test runs on (checked by check_selftest)."""
    name = cfg.selftest.pool or always_up_pools(cfg)[0].name
    return next(p for p in cfg.gpu_pools if p.name == name)


def floors(
    cfg: PlatformConfig, pool: GpuPool | None = None, nodes: int | None = None
) -> dict[str, tuple[float, str]]:
    """Every threshold the self-test holds the stack to: name -> (value, where it comes from),
    for a run on `nodes` nodes of `pool` (default: the post-deploy run's)."""
    settings = cfg.selftest
    pool = pool or selftest_pool(cfg)
    nodes = nodes or settings.nodes
    out: dict[str, tuple[float, str]] = {
        "gemm_fraction": (settings.gemm_fraction, "selftest.gemm_fraction"),
        "memory_bandwidth_fraction": (
            settings.memory_bandwidth_fraction,
            "selftest.memory_bandwidth_fraction",
        ),
        # Keyed by the names bootstrap/selftest looks them up by.
        "nvme-cache.small_file_p99_us": (
            settings.nvme_p99_latency_us,
            "selftest.nvme_p99_latency_us",
        ),
    }
    intra = settings.intra_node_busbw_gbps
    if intra is not None:
        out["intra_node_busbw_gbps"] = (intra, "selftest.intra_node_busbw_gbps")
    elif pool.gpu_model in INTRA_NODE_BUSBW_GBPS:
        out["intra_node_busbw_gbps"] = (INTRA_NODE_BUSBW_GBPS[pool.gpu_model], SOURCE)
    inter = settings.inter_node_busbw_gbps
    nvlink = [
        (CATALOG[t].nvlink_gbps_per_gpu, t)
        for t in pool.instance_types
        if CATALOG[t].nvlink_gbps_per_gpu is not None
    ]
    if inter is not None:
        out["inter_node_busbw_gbps"] = (inter, "selftest.inter_node_busbw_gbps")
    elif nvlink:
        # Across nodes of one NVLink domain (the run's ComputeDomain), NVLink, not EFA, carries
        # the all-reduce: its floor, not the fabric's.
        gbps, name = min(nvlink)
        source = f"{NVLINK_SOURCE} ({name}: {gbps} GB/s, model/catalog_rows.py)"
        out["inter_node_busbw_gbps"] = (nvlink_busbw_floor(gbps), source)
    else:
        known = [
            INTER_NODE_BUSBW_GBPS[t] for t in pool.instance_types if t in INTER_NODE_BUSBW_GBPS
        ]
        if known:
            out["inter_node_busbw_gbps"] = (min(known), SOURCE)
    expected = cfg.storage.fsx.expected_throughput_mbps if cfg.storage.fsx else None
    if expected is None and cfg.storage.ceph is not None:
        expected = cfg.storage.ceph.expected_throughput_mbps
    if expected is not None:
        shared = (
            round(expected * settings.storage_fraction / nodes, 1),
            "plan: storage expected throughput x selftest.storage_fraction / nodes",
        )
        out["shared-data.write_mb_s"] = out["shared-data.read_mb_s"] = shared
    return out


def check_selftest(cfg: PlatformConfig) -> None:
    """The self-test's rules that need the pools: each run must fit the pools it names."""
    _check_post_deploy(cfg)
    check_schedule(cfg)
    check_node_join(cfg)
    check_join_dcgm_level(cfg)


def _check_post_deploy(cfg: PlatformConfig) -> None:
    settings = cfg.selftest
    if settings.resolved_mode(cfg.production) == "off":
        return
    if settings.image is None:
        raise FieldProblem(
            "selftest.image",
            f"required with mode {settings.mode}: build bootstrap/Dockerfile, push it and give "
            "its digest (docs/selftest.md), or set selftest.mode: off",
        )
    pools = cfg.gpu_pools
    if not pools:
        raise FieldProblem("selftest.mode", "the stack has no GPU pool to test; set mode: off")
    up = sorted(p.name for p in always_up_pools(cfg))
    if not up:
        raise FieldProblem(
            "selftest.mode",
            f"{settings.resolved_mode(cfg.production)}, but every GPU pool has a reservation "
            f"window ({', '.join(windowed_keys(cfg))}): outside it the pool's flavor is closed "
            "and the Job pulumi up runs would never be admitted (the node-join check tests the "
            "pool's nodes in the warm-up); set selftest.mode: off, or add a pool without one",
        )
    # A pool the stack lacks is the reference check's to name (model/config/references.py).
    if settings.pool in {p.name for p in pools} - set(up):
        raise FieldProblem(
            "selftest.pool",
            f"{settings.pool!r} has a reservation_window: its flavor is closed outside the "
            "window, so the Job pulumi up runs would never be admitted (the node-join check "
            f"tests its nodes in the warm-up); valid: a pool without one ({', '.join(up)}), or "
            "set selftest.mode: off",
        )
    pool = selftest_pool(cfg)
    if settings.nodes > pool.max_nodes:
        raise FieldProblem(
            "selftest.nodes",
            f"{settings.nodes} nodes, but pool {pool.name!r} has at most {pool.max_nodes}",
        )
    if settings.gpus_per_node is not None and settings.gpus_per_node > pool.gpus_per_node:
        raise FieldProblem(
            "selftest.gpus_per_node",
            f"{settings.gpus_per_node} GPUs, but a node of pool {pool.name!r} has "
            f"{pool.gpus_per_node}",
        )
    nvlink = nvlink_problem(pool, settings.nodes, settings.gpus_per_node)
    if nvlink is not None:
        raise FieldProblem(f"selftest.{nvlink[0]}", nvlink[1])
    if pool.sharing.mode == "mig":
        raise FieldProblem(
            "selftest.pool",
            f"{pool.name!r} cuts its GPUs into MIG slices; the self-test measures whole GPUs, "
            "pick a pool without MIG",
        )
