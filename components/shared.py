"""Resources several components declare the same way."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from infra.versions import CHARTS


def pinned_release(
    resource_name: str,
    chart_key: str,
    namespace: str,
    values: dict,
    opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    """A Helm release of an upstream chart at the version pinned in infra/versions.py, named
    after the chart so its objects keep upstream names."""
    chart = CHARTS[chart_key]
    return k8s.helm.v3.Release(
        resource_name,
        k8s.helm.v3.ReleaseArgs(
            name=chart.name,
            chart=chart.name,
            version=chart.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository),
            namespace=namespace,
            values=values,
        ),
        opts,
    )


def rotated_kms_key(
    resource_name: str, description: str, alias: str, parent: pulumi.Resource, protect: bool
) -> aws.kms.Key:
    """A customer-managed key with yearly rotation and an alias, children of `parent`."""
    key = aws.kms.Key(
        resource_name,
        aws.kms.KeyArgs(
            description=description, enable_key_rotation=True, deletion_window_in_days=30
        ),
        pulumi.ResourceOptions(parent=parent, protect=protect),
    )
    aws.kms.Alias(
        resource_name,
        aws.kms.AliasArgs(name=f"alias/{alias}", target_key_id=key.key_id),
        pulumi.ResourceOptions(parent=parent),
    )
    return key
