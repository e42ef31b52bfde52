"""A Kubernetes object declared whole, as a builder rendered it, under the type token
pulumi-kubernetes accepts for its kind. Every component that declares rendered objects uses it,
custom resources included, so every kind gets the replacement its CRD's immutable fields call
for (model/immutable_fields.py)."""

from __future__ import annotations

from typing import Any

import pulumi

from model.immutable_fields import replace_paths

# Kinds whose replacement would take what they hold: Rook keeps a CephCluster while any other
# Rook resource (the CephFilesystem) refers to it ("user data protection when deleting Rook-Ceph
# Custom Resources", rook/rook PendingReleaseNotes v1.7; design/ceph/resource-dependencies.md),
# and a new cluster on another `dataDirHostPath` would not own the old OSDs. A change to its
# immutable fields stays the API server's refusal, which the plan diff names.
NEVER_REPLACED = frozenset({"kubernetes:ceph.rook.io/v1:CephCluster"})


def type_token(api_version: str, kind: str) -> str:
    """pulumi-kubernetes' type of a kind. The provider splits the token's middle into group and
    version and refuses it without both; the core group, unnamed in `apiVersion: v1`, is spelt
    `core` (`kubernetes:core/v1:Service`)."""
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{kind}"


def object_resource_name(env: str, obj: dict[str, Any]) -> str:
    """The Pulumi name of a rendered object: `<env>-<kind>-<name>`."""
    return f"{env}-{obj['kind'].lower()}-{obj['metadata']['name']}"


def replacement_options(obj: dict[str, Any]) -> pulumi.ResourceOptions:
    """`replace_on_changes` on every immutable path of the kind that the object sets, so that
    `pulumi up` replaces it where the API server would refuse the update. pulumi-kubernetes
    replaces custom resources only on name and namespace (provider/pkg/provider/diff.go), so
    without this a changed Topology's levels plan as an update the API server refuses.
    The name stays, so the old object must go first: created first, the new object would be
    applied onto the old (server-side apply) and then deleted with it
    (pulumi/pulumi-kubernetes#4522), hence `delete_before_replace`."""
    token = type_token(obj["apiVersion"], obj["kind"])
    paths = [] if token in NEVER_REPLACED else replace_paths(token, obj)
    if not paths:
        return pulumi.ResourceOptions()
    return pulumi.ResourceOptions(replace_on_changes=paths, delete_before_replace=True)


class KubernetesObject(pulumi.CustomResource):
    """An object declared whole, as a builder rendered it: for kinds whose fields sit beside
    `metadata` rather than under `spec` (WorkloadPriorityClass), which
    apiextensions.CustomResource cannot say, for the rendered Job and its Service, and for every
    custom resource (the replacement options above)."""

    def __init__(self, name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions):
        opts = pulumi.ResourceOptions.merge(opts, replacement_options(obj))
        super().__init__(type_token(obj["apiVersion"], obj["kind"]), name, dict(obj), opts)
