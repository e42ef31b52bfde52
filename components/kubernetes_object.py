"""A Kubernetes object declared whole, as a builder rendered it, under the type token
pulumi-kubernetes accepts for its kind. Every component that declares rendered objects uses it."""

from __future__ import annotations

from typing import Any

import pulumi


def type_token(api_version: str, kind: str) -> str:
    """pulumi-kubernetes' type of a kind. The provider splits the token's middle into group and
    version and refuses it without both; the core group, unnamed in `apiVersion: v1`, is spelt
    `core` (`kubernetes:core/v1:Service`)."""
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{kind}"


class KubernetesObject(pulumi.CustomResource):
    """An object declared whole, as a builder rendered it: for kinds whose fields sit beside
    `metadata` rather than under `spec` (WorkloadPriorityClass), which
    apiextensions.CustomResource cannot say, and for the rendered Job and its Service."""

    def __init__(self, name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions):
        super().__init__(type_token(obj["apiVersion"], obj["kind"]), name, dict(obj), opts)
