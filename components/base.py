"""The skeleton every platform component shares."""

from __future__ import annotations

from typing import Any

import pulumi

# Every Kubernetes object the platform declares says so, and which plane it belongs to.
PLATFORM_LABELS = {"app.kubernetes.io/part-of": "gpu-platform"}


def plane_labels(plane: str) -> dict[str, str]:
    return {**PLATFORM_LABELS, "gpu-platform/plane": plane}


class PlatformComponent(pulumi.ComponentResource):
    """A component whose type token names its plane: `gpu-platform:<plane>:<Kind>`.

    Children are declared with `self.child()` so each is parented here, and inherits the
    providers the caller passed, without copying the caller's other options onto it.
    """

    PLANE: str = ""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.type_token(), name, None, opts)
        # The stack outputs it exports, computed from what it was given: infra/composition.py
        # only merges them.
        self.outputs: dict[str, pulumi.Input] = {}

    @classmethod
    def type_token(cls) -> str:
        return f"gpu-platform:{cls.PLANE}:{cls.__name__}"

    def child(self, **options: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, **options)
