"""The storage contract training pods rely on, the same on every provider.

Every training pod template mounts two volumes:

- `shared-data`: the PersistentVolumeClaim `shared-data` in every namespace jobs run in (the
  training namespace and each team's), ReadWriteMany, backed by FSx for Lustre on AWS
  (components/fsx.py) and by CephFS on an existing cluster (components/ceph.py).
- `nvme-cache`: node-local scratch. On instance types with NVMe instance storage, nodeadm
  (`localStorage.strategy: RAID0`) builds one RAID0 array and mounts it at /mnt/k8s-disks/0; the
  cache is a directory on that array, as a hostPath, so it outlives a pod and a rerun on the same
  node finds its data. On types without instance storage an emptyDir stands in, size-limited on
  the root volume, and the plan says so.

The builders here are pure: pod-template fragments as plain Kubernetes dicts, and the claim as
typed pulumi-kubernetes arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s

from components.base import PlatformComponent, plane_labels
from infra.catalog import InstanceType
from infra.config import NvmeCacheSettings, PlatformConfig

SHARED_DATA = "shared-data"
NVME_CACHE = "nvme-cache"
# Where training containers see the two volumes.
SHARED_DATA_MOUNT_PATH = "/mnt/shared-data"
NVME_CACHE_MOUNT_PATH = "/mnt/nvme-cache"
PART_OF = plane_labels("storage")

# --------------------------------------------------------------------------- pure builders


@dataclass(frozen=True)
class NvmeCache:
    """What backs `nvme-cache` on a set of nodes."""

    source: Literal["hostPath", "emptyDir"]
    volume: dict[str, Any]
    # Local NVMe behind the cache (the smallest array among the types); None where unknown.
    size_gb: int | None

    def report(self) -> dict[str, Any]:
        """The plan's summary of it (no nulls)."""
        where = self.volume.get("hostPath", {}).get("path") or (
            f"emptyDir on the root volume, sizeLimit {self.volume['emptyDir']['sizeLimit']}"
        )
        out: dict[str, Any] = {"source": self.source, "backing": where}
        if self.size_gb is not None:
            out["nvme_gb"] = self.size_gb
        return out


def nvme_cache(instances: Sequence[InstanceType], settings: NvmeCacheSettings) -> NvmeCache:
    """`nvme-cache` for nodes of these types: the RAID0 array when every type has instance
    storage (one pod template runs on any of them), else a size-limited emptyDir."""
    if instances and all(row.has_instance_storage for row in instances):
        return _on_host(settings, size_gb=min(row.nvme_total_gb for row in instances))
    return NvmeCache(
        source="emptyDir",
        volume={"name": NVME_CACHE, "emptyDir": {"sizeLimit": f"{settings.fallback_size_gib}Gi"}},
        size_gb=None,
    )


def _on_host(settings: NvmeCacheSettings, size_gb: int | None) -> NvmeCache:
    return NvmeCache(
        source="hostPath",
        volume={
            "name": NVME_CACHE,
            "hostPath": {"path": settings.host_path, "type": "DirectoryOrCreate"},
        },
        size_gb=size_gb,
    )


def nvme_cache_report(cfg: PlatformConfig) -> dict[str, dict[str, Any]]:
    """Per GPU group (AWS) or for all nodes (existing cluster): what backs nvme-cache."""
    settings = cfg.storage.nvme_cache
    if cfg.provider == "existing":
        # On an existing cluster the admin mounts local NVMe at host_path on every GPU node.
        return {"all-nodes": _on_host(settings, size_gb=None).report()}
    return {g.name: nvme_cache(g.instances, settings).report() for g in cfg.gpu_node_groups}


def shared_data_volume() -> dict[str, Any]:
    return {"name": SHARED_DATA, "persistentVolumeClaim": {"claimName": SHARED_DATA}}


def training_volumes(cache: NvmeCache) -> list[dict[str, Any]]:
    """The `volumes` every training pod template lists."""
    return [shared_data_volume(), cache.volume]


def training_volume_mounts() -> list[dict[str, Any]]:
    """The `volumeMounts` of a training container."""
    return [
        {"name": SHARED_DATA, "mountPath": SHARED_DATA_MOUNT_PATH},
        {"name": NVME_CACHE, "mountPath": NVME_CACHE_MOUNT_PATH},
    ]


@dataclass(frozen=True)
class ClaimArgs:
    metadata: k8s.meta.v1.ObjectMetaArgs
    spec: k8s.core.v1.PersistentVolumeClaimSpecArgs


def shared_data_claim(
    namespace: str, size_gib: int, storage_class: str, volume_name: str | None = None
) -> ClaimArgs:
    """The `shared-data` claim: ReadWriteMany, from `storage_class` ("" for a static volume,
    bound by `volume_name`)."""
    return ClaimArgs(
        metadata=k8s.meta.v1.ObjectMetaArgs(name=SHARED_DATA, namespace=namespace, labels=PART_OF),
        spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
            access_modes=["ReadWriteMany"],
            storage_class_name=storage_class,
            volume_name=volume_name,
            volume_mode="Filesystem",
            resources=k8s.core.v1.VolumeResourceRequirementsArgs(
                requests={"storage": f"{size_gib}Gi"}
            ),
        ),
    )


# ------------------------------------------------------------------------------ handle


@dataclass
class SharedData:
    """What the storage plane hands the platform: the claim and the figure the self-test checks."""

    claim: k8s.core.v1.PersistentVolumeClaim
    # Expected aggregate throughput in MB/s; None where the platform cannot know it.
    expected_throughput_mbps: int | None


def declare_claim(
    owner: PlatformComponent,
    name: str,
    args: ClaimArgs,
    after: Sequence[pulumi.Resource],
    protect: bool = False,
) -> k8s.core.v1.PersistentVolumeClaim:
    return k8s.core.v1.PersistentVolumeClaim(
        name,
        metadata=args.metadata,
        spec=args.spec,
        opts=owner.child(protect=protect, depends_on=list(after)),
    )
