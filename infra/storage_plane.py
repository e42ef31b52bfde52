"""The storage plane of a Platform: `shared-data` (FSx for Lustre on AWS, CephFS through Rook
on an existing cluster) and `nvme-cache`. Split from infra/composition.py, which wires the planes
and calls it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi

from components.ceph import RookCeph, RookCephArgs
from components.control_plane import ClusterHandle
from components.fsx import FsxLustre, FsxLustreArgs
from components.namespaces import Namespaces, platform_job_namespaces
from components.storage import SharedData, nvme_cache_report
from infra.config import PlatformConfig, default_fsx_zone

if TYPE_CHECKING:
    from infra.composition import Platform


def declare_storage(
    platform: Platform,
    env: str,
    cfg: PlatformConfig,
    cluster: ClusterHandle,
    namespaces: Namespaces,
) -> None:
    """Storage plane: `shared-data` (FSx for Lustre or CephFS) and `nvme-cache`, under the
    same names on every provider."""
    platform.outputs["storage_nvme_cache"] = nvme_cache_report(cfg)
    job_namespaces = [namespaces.by_purpose[p] for p in ("training", "selftest")]
    shared: SharedData | None = None
    if cfg.storage.fsx is not None:
        fsx, zone = cfg.storage.fsx, cfg.storage.fsx.zone or default_fsx_zone(cfg)
        component = FsxLustre(
            f"{env}-fsx",
            FsxLustreArgs(
                env=env,
                fsx=fsx,
                zone=zone,
                region=cfg.aws.region,
                cluster_name=cluster.name,
                vpc_id=platform.network.vpc_id,
                subnet_id=platform.network.private_subnet_ids_by_zone[zone],
                node_security_group_id=cluster.security_group_id,
                claim_namespaces=platform_job_namespaces(cfg),
                protect=cfg.protect_stateful,
                after=[*cluster.schedulable, *job_namespaces],
                registry_mirror=cfg.images.registry_mirror,
            ),
            platform.child(providers=[platform.aws_provider, cluster.kubernetes]),
        )
        shared = component.shared
        platform.tested.append(component)
        platform.outputs.update(
            storage_fsx_id=component.file_system.id,
            storage_fsx_zone=zone,
            storage_fsx_dns_name=component.file_system.dns_name,
        )
    elif cfg.storage.ceph is not None:
        ceph = RookCeph(
            f"{env}-ceph",
            RookCephArgs(
                env,
                cfg.storage.ceph,
                platform_job_namespaces(cfg),
                after=job_namespaces,
                protect=cfg.protect_stateful,
                networks=platform.networks,
                registry_mirror=cfg.images.registry_mirror,
            ),
            platform.child(providers=[cluster.kubernetes]),
        )
        shared = ceph.shared
        platform.tested.append(ceph)
    if shared is not None:
        platform.outputs["storage_shared_data_claim"] = pulumi.Output.concat(
            shared.claim.metadata.namespace, "/", shared.claim.metadata.name
        )
        if shared.expected_throughput_mbps is not None:
            platform.outputs["storage_expected_throughput_mbps"] = shared.expected_throughput_mbps
