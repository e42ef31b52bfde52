"""The node-join check (components/selftest/node_join.py): every new GPU node joins with a
startup taint (contract/node_join.py) and takes no job until the self-test's node set has passed
on it. Left unset, `enabled` follows the image, as the scheduled runs do: there is nothing to
run, and so nothing that would ever remove the taint, without one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from contract.dcgm import DIAG_TIMEOUT_S
from model.config.base import DnsLabel, FieldProblem, Int, Settings
from model.config.pools import always_up_pools, windowed_keys
from model.config.references import GPU_POOL, refers

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.pools import GpuPool


class NodeJoinSettings(Settings):
    """The self-test on every new GPU node before it takes a job (docs/selftest.md, "When a
    node joins")."""

    enabled: bool | None = Field(
        None,
        description="Taint every new GPU node (the platform's node groups on AWS; the admin's "
        "nodes on an existing cluster, docs/selftest.md) until the self-test's node set has "
        "passed on it. Default: on once selftest.image is set.",
    )
    timeout_minutes: Int = Field(
        30,
        ge=5,
        le=240,
        description="How long the check may take on one node (5-240); a node still tainted "
        "after it alerts (NodeJoinStuck).",
    )

    pool_timeout_minutes: dict[
        Annotated[DnsLabel, refers(GPU_POOL)], Annotated[Int, Field(ge=5, le=240)]
    ] = Field(
        default_factory=dict,
        description="A pool's own limit where it differs from timeout_minutes (5-240): a pool "
        "of more GPUs, or whose NVMe array is larger, takes longer.",
    )
    max_failed_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="The circuit breaker, as a fraction (0-1]: the share of a pool's nodes that "
        "may be held for a failed check. A FAIL that would pass it releases the node "
        "untested instead of quarantining it (label gpu-platform/node-join=released): when "
        "most new nodes fail, the check (its image, a floor) is the likelier fault, and "
        "holding every node would take the pool out.",
    )
    canary: bool | None = Field(
        None,
        description="Roll a GPU-stack change (launch template, AMI, Kubernetes version) through "
        "one canary node per tested pool first: a canary node group of at most one node runs "
        "the node-join check set against the pool's stored baseline, and only a pass lets the "
        'pool\'s own node group update (docs/operations.md, "Rolling a GPU-stack change"). '
        "Default: on wherever new nodes are tested on AWS, except a pool with a "
        "reservation_window (nothing launches outside its window; its warm-up tests each new "
        "node on join before the flavor opens); an existing cluster has no node groups to "
        "declare it on.",
    )
    canary_tolerance: float = Field(
        0.1,
        gt=0,
        le=0.5,
        description="How far below the pool's baseline (its nodes' last passing figures) the "
        "canary may measure, as a fraction (0-0.5]: the canary passes where its GEMM, HBM and "
        "collective figures are each at least (1 - canary_tolerance) x the baseline.",
    )

    # DCGM's diagnostic on a new node (contract/dcgm.py: levels and the tool's limit at each).
    dcgm_level: Int = Field(
        2,
        ge=1,
        le=3,
        description="dcgmi diag's run level on a new node (1-3): 1 deployment checks (seconds), "
        "2 adds the PCIe and GPU memory tests (about two minutes), 3 the long hardware "
        "diagnostics (about 15 minutes; the pool's limit must then exceed 30 minutes). A node "
        "is tested once, before its first job, so the medium validation is the default.",
    )
    pool_dcgm_level: dict[
        Annotated[DnsLabel, refers(GPU_POOL)], Annotated[Int, Field(ge=1, le=3)]
    ] = Field(
        default_factory=dict,
        description="A pool's own level where it differs from dcgm_level (1-3).",
    )


def joins_tested(cfg: PlatformConfig) -> bool:
    """New GPU nodes join tainted and are tested: asked for, or left unset with an image."""
    settings = cfg.selftest.node_join
    if settings.enabled is not None:
        return settings.enabled and bool(cfg.gpu_pools)
    return cfg.selftest.image is not None and bool(cfg.gpu_pools)


def pools_tested_on_join(cfg: PlatformConfig) -> list[GpuPool]:
    """The pools whose new nodes are tested: every pool without MIG, as the scheduled runs (the
    self-test measures whole GPUs). A MIG pool's nodes join untainted."""
    if not joins_tested(cfg):
        return []
    return [p for p in cfg.gpu_pools if p.sharing.mode != "mig"]


def join_timeout_minutes(cfg: PlatformConfig, pool: str) -> int:
    """The check's limit on one node of `pool`."""
    settings = cfg.selftest.node_join
    return settings.pool_timeout_minutes.get(pool, settings.timeout_minutes)


def canary_pools(cfg: PlatformConfig) -> list[GpuPool]:
    """The pools whose GPU-stack changes roll through a canary node first: the pools tested on
    join, on AWS (where the platform declares the node groups), unless turned off. Not a
    windowed pool: its reservation launches nothing outside its window (EC2 User Guide,
    "Capacity Blocks for ML"), so `pulumi up` would wait on its canary for days, and each
    window starts every node afresh from the current launch template, each tested on join in
    the warm-up before the flavor opens: the warm-up is its canary."""
    if cfg.provider != "aws" or cfg.selftest.node_join.canary is False:
        return []
    up = {p.name for p in always_up_pools(cfg)}
    return [p for p in pools_tested_on_join(cfg) if p.name in up]


def check_node_join(cfg: PlatformConfig) -> None:
    if cfg.selftest.node_join.enabled and cfg.selftest.image is None:
        raise FieldProblem(
            "selftest.node_join.enabled",
            "true, but selftest.image is not set: nothing would test a new node or remove its "
            "taint, so no GPU node would ever take a job; give the image's digest "
            "(docs/selftest.md) or remove enabled",
        )
    if cfg.selftest.node_join.canary:
        if cfg.provider != "aws":
            raise FieldProblem(
                "selftest.node_join.canary",
                f"true, but provider is {cfg.provider}: the platform declares no node group "
                "there to roll a canary through; where the GPU Operator installs the driver, "
                'docs/operations.md ("Rolling a GPU-stack change") says how to hold the rest '
                "while one node is tested. Valid: false, or unset",
            )
        if not pools_tested_on_join(cfg):
            raise FieldProblem(
                "selftest.node_join.canary",
                "true, but no pool's new nodes are tested on join (node_join needs "
                "selftest.image, not enabled: false, and a pool without MIG): the canary runs "
                "the node-join check, so nothing would test it. Valid: false, or unset, or "
                "turn the node-join check on",
            )
        if not canary_pools(cfg):
            raise FieldProblem(
                "selftest.node_join.canary",
                "true, but every pool tested on join has a reservation window "
                f"({', '.join(windowed_keys(cfg))}): its reservation launches nothing outside "
                "the window, and the warm-up tests each of its new nodes on join before the "
                "flavor opens, which is its canary. Valid: false, or unset",
            )


def join_dcgm_level(cfg: PlatformConfig, pool: str) -> int:
    """dcgmi diag's run level on a new node of `pool`."""
    settings = cfg.selftest.node_join
    return settings.pool_dcgm_level.get(pool, settings.dcgm_level)


def check_join_dcgm_level(cfg: PlatformConfig) -> None:
    """A pool's limit must outlast the diagnostic's own (contract/dcgm.py), or the container's
    timeout would stop every run mid-diagnostic and no node of the pool would ever pass."""
    settings = cfg.selftest.node_join
    for pool in pools_tested_on_join(cfg):
        level = join_dcgm_level(cfg, pool.name)
        minutes = join_timeout_minutes(cfg, pool.name)
        needs = DIAG_TIMEOUT_S[level] // 60
        if minutes > needs:
            continue
        field = (
            f"pool_dcgm_level.{pool.name}" if pool.name in settings.pool_dcgm_level
            else "dcgm_level"
        )  # fmt: skip
        limit = (
            f"pool_timeout_minutes.{pool.name}" if pool.name in settings.pool_timeout_minutes
            else "timeout_minutes"
        )  # fmt: skip
        raise FieldProblem(
            f"selftest.node_join.{field}",
            f"level {level} on pool {pool.name}: dcgmi diag may take up to {needs} minutes "
            f"there, and the node's whole check only {minutes} (selftest.node_join.{limit}); "
            f"give selftest.node_join.{limit} more than {needs} minutes or a lower level",
        )
