"""Namespaces the platform's add-ons and training jobs live in."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.base import PlatformComponent
from infra.config import NamespaceSettings

PART_OF = {"app.kubernetes.io/part-of": "gpu-platform"}


def namespace_labels(purpose: str) -> dict[str, str]:
    return {**PART_OF, "gpu-platform/purpose": purpose}


@dataclass(frozen=True)
class NamespacesArgs:
    namespaces: NamespaceSettings


class Namespaces(PlatformComponent):
    """One namespace per purpose; other components take the names from here."""

    PLANE = "control"

    def __init__(self, name: str, args: NamespacesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        self.by_purpose: dict[str, k8s.core.v1.Namespace] = {}
        for purpose, ns in sorted(args.namespaces.model_dump().items()):
            self.by_purpose[purpose] = k8s.core.v1.Namespace(
                f"ns-{ns}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels=namespace_labels(purpose)),
                opts=self.child(),
            )
        self.register_outputs({p: n.metadata.name for p, n in self.by_purpose.items()})
