"""What every plane of a stack shares by default: where add-ons run, the cluster's name and the
tags on every AWS resource. Split from infra/composition.py, which wires the planes."""

from __future__ import annotations

from components.system_node_group import SYSTEM_LABELS
from infra.config import NAMESPACE, PlatformConfig


def add_on_nodes(cfg: PlatformConfig) -> dict[str, str]:
    """Where add-ons run: the system nodes the platform declares on AWS; on an existing
    cluster, wherever its scheduler puts them."""
    return dict(SYSTEM_LABELS) if cfg.provider == "aws" else {}


def cluster_name(env: str) -> str:
    return f"{NAMESPACE}-{env}"


def default_tags(env: str, cfg: PlatformConfig) -> dict[str, str]:
    return {"gpu-platform:stack": env, "managed-by": "pulumi", **cfg.aws.tags}
