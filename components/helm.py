"""Upstream Helm charts at their pinned versions, and the namespaces operators' releases run in."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s

from components.registry_mirror import mirrored_values

if TYPE_CHECKING:
    from components.context import StackContext


def pinned_release(
    resource_name: str,
    chart_key: str,
    namespace: str,
    values: dict,
    opts: pulumi.ResourceOptions,
    *,
    context: StackContext,
) -> k8s.helm.v3.Release:
    """A Helm release of an upstream chart at the version pinned in model/versions.py, or the
    one the stack takes ahead of it (`charts`), named after the chart so its objects keep
    upstream names; its images from the stack's mirror, where it has one
    (`images.registry_mirror`)."""
    chart = context.chart(chart_key)
    # An OCI chart is named by its full reference, without repository options (Helm has no
    # `repo add` for OCI registries).
    oci = chart.repository.startswith("oci://")
    return k8s.helm.v3.Release(
        resource_name,
        k8s.helm.v3.ReleaseArgs(
            name=chart.name,
            chart=f"{chart.repository}/{chart.name}" if oci else chart.name,
            version=chart.version,
            repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository),
            namespace=namespace,
            values=mirrored_values(chart_key, values, context.image_route),
        ),
        opts,
    )


def privileged_namespace(
    resource_name: str, name: str, labels: dict[str, str], parent: pulumi.Resource
) -> k8s.core.v1.Namespace:
    """A namespace whose pods Pod Security admits privileged: for operators whose DaemonSets
    reach into the host (drivers, device plugins, CNI, storage daemons)."""
    return k8s.core.v1.Namespace(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=name, labels={**labels, "pod-security.kubernetes.io/enforce": "privileged"}
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )
