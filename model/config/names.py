"""The stack's names as one rule checks them (model/config/references.py): the marked fields,
the names no key declares, two pools on the same nodes, and IP pools too small for their nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.config.base import FieldProblem
from model.config.fabric import ip_pool_problems
from model.config.recipes import WEIGHTS_NEEDED
from model.config.references import (
    K8S_NAMESPACE,
    LOCAL_QUEUE,
    PRIORITY_CLASS,
    STAGED_MODEL,
    check_references,
    overlapping_selectors,
)
from model.config.scheduling import LOCAL_QUEUE as LOCAL_QUEUE_NAME
from model.config.scheduling import PRIORITIES

if TYPE_CHECKING:
    from model.config import PlatformConfig

# Every cluster has these (Kubernetes "Namespaces", "Initial namespaces"): the platform may
# deploy into them, never declare one.
KUBERNETES_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


def platform_names(cfg: PlatformConfig) -> dict[str, dict[str, str]]:
    """Names no stack key declares, by kind, with what declares them: Kubernetes' own
    namespaces, the models the recipes read, and where Kueue runs the platform's priority
    classes and each team's LocalQueue."""
    given = {
        K8S_NAMESPACE: dict.fromkeys(KUBERNETES_NAMESPACES, "Kubernetes itself"),
        STAGED_MODEL: {m: "the recipes" for models in WEIGHTS_NEEDED.values() for m in models},
    }
    if cfg.scheduling.enabled:
        given[PRIORITY_CLASS] = {p.name: "the platform" for p in PRIORITIES}
        given[LOCAL_QUEUE] = {LOCAL_QUEUE_NAME: "the platform"}
    return given


def check_names(cfg: PlatformConfig) -> list[FieldProblem]:
    problems = check_references(cfg, platform_names(cfg))
    if cfg.existing is not None:
        problems += overlapping_selectors(
            [
                (f"existing.gpu_pools[{i}]", p.node_selector)
                for i, p in enumerate(cfg.existing.gpu_pools)
            ]
        )
    return problems + ip_pool_problems(cfg)
