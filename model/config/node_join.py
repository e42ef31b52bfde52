"""The node-join check (components/selftest/node_join.py): every new GPU node joins with a
startup taint (contract/node_join.py) and takes no job until the self-test's node set has passed
on it. Left unset, `enabled` follows the image, as the scheduled runs do: there is nothing to
run, and so nothing that would ever remove the taint, without one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from model.config.base import DnsLabel, FieldProblem, Int, Settings
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


def check_node_join(cfg: PlatformConfig) -> None:
    if cfg.selftest.node_join.enabled and cfg.selftest.image is None:
        raise FieldProblem(
            "selftest.node_join.enabled",
            "true, but selftest.image is not set: nothing would test a new node or remove its "
            "taint, so no GPU node would ever take a job; give the image's digest "
            "(docs/selftest.md) or remove enabled",
        )
