"""What every plane of a stack shares by default: the cluster's name and the tags on every AWS
resource (where add-ons run: components/system_node_group.add_on_nodes). Split from
infra/composition.py, which wires the planes."""

from __future__ import annotations

from model.config import NAMESPACE, PlatformConfig


def cluster_name(env: str) -> str:
    return f"{NAMESPACE}-{env}"


def default_tags(env: str, cfg: PlatformConfig) -> dict[str, str]:
    return {"gpu-platform:stack": env, "managed-by": "pulumi", **cfg.aws.tags}
