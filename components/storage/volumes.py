"""The storage contract training pods rely on, the same on every provider.

Every training pod template mounts two volumes:

- `shared-data`: the PersistentVolumeClaim `shared-data` in every namespace jobs run in (the
  training namespace and each team's), ReadWriteMany, backed by FSx for Lustre on AWS
  (components/storage/fsx.py) and by CephFS on an existing cluster (components/storage/ceph.py),
  or by a class or claim the cluster already has (components/storage/cluster_class.py).
- `nvme-cache`: node-local scratch, an `emptyDir`, which kubelet keeps under its root directory
  (/var/lib/kubelet; Kubernetes docs, "Volumes", emptyDir). On AWS types with NVMe instance
  storage, nodeadm (`localStorage.strategy: RAID0`) builds one RAID0 array and bind-mounts
  /var/lib/kubelet onto it (amazon-eks-ami `setup-local-disks`, which nodeadm's
  `disabledMounts` cannot turn off for the kubelet; ../shared/PINS.md), so the emptyDir lies on
  the array. On types without instance storage it lives on the root volume, size-limited, and
  the plan says so. On an existing cluster the admin puts kubelet's root directory on local
  NVMe, as nodeadm does (docs/storage.md).

  Not a hostPath: a hostPath volume is what Pod Security `baseline` forbids (Kubernetes "Pod
  Security Standards", HostPath Volumes), so a namespace whose pods mount one must enforce
  `privileged`, and anyone who may create a pod there is root on the node, beside every other
  team's data in the one shared directory. An emptyDir passes `restricted`, is the pod's own
  (no team reads another's), and is bounded by kubelet's ephemeral-storage accounting. It
  lasts as long as the pod, as a generic ephemeral volume from local-path-provisioner would:
  a cache that outlives the pod would need a claim per node, which an Indexed Job cannot
  template, and that provisioner enforces no size and needs a privileged namespace of its own.

The builders here are pure: pod-template fragments as plain Kubernetes dicts, and the claim as
typed pulumi-kubernetes arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base import PlatformComponent, plane_labels
from contract.mounts import NVME_CACHE_MOUNT_PATH, SHARED_DATA_MOUNT_PATH
from model.catalog import InstanceType
from model.config import NvmeCacheSettings, PlatformConfig

SHARED_DATA = "shared-data"
NVME_CACHE = "nvme-cache"
PART_OF = plane_labels("storage")

# --------------------------------------------------------------------------- pure builders


@dataclass(frozen=True)
class NvmeCache:
    """What backs `nvme-cache` on a set of nodes: always an emptyDir, on the disk under
    kubelet's root directory."""

    backing: str
    volume: dict[str, Any]
    # Local NVMe behind the cache (the smallest array among the types); None where unknown.
    size_gb: int | None

    def report(self) -> dict[str, Any]:
        """The plan's summary of it (no nulls)."""
        out: dict[str, Any] = {"source": "emptyDir", "backing": self.backing}
        if "sizeLimit" in self.volume["emptyDir"]:
            out["size_limit"] = self.volume["emptyDir"]["sizeLimit"]
        if self.size_gb is not None:
            out["nvme_gb"] = self.size_gb
        return out


def nvme_cache(instances: Sequence[InstanceType], settings: NvmeCacheSettings) -> NvmeCache:
    """`nvme-cache` for nodes of these types: the whole RAID0 array when every type has instance
    storage (one pod template runs on any of them), else a size-limited emptyDir on the root
    volume."""
    if instances and all(row.has_instance_storage for row in instances):
        return NvmeCache(
            backing="RAID0 array of the instance's NVMe (nodeadm mounts kubelet's root on it)",
            volume={"name": NVME_CACHE, "emptyDir": {}},
            size_gb=min(row.nvme_total_gb for row in instances),
        )
    return NvmeCache(
        backing="root volume (no instance storage)",
        volume={"name": NVME_CACHE, "emptyDir": {"sizeLimit": f"{settings.fallback_size_gib}Gi"}},
        size_gb=None,
    )


# On an existing cluster the admin puts kubelet's root directory on local NVMe.
EXISTING_CLUSTER_CACHE = NvmeCache(
    backing="kubelet's root directory, which the admin puts on local NVMe",
    volume={"name": NVME_CACHE, "emptyDir": {}},
    size_gb=None,
)


def pool_cache(cfg: PlatformConfig, pool: str) -> NvmeCache:
    """What backs nvme-cache on a GPU pool's nodes (a node group on AWS)."""
    if cfg.provider == "existing":
        return EXISTING_CLUSTER_CACHE
    group = next(g for g in cfg.gpu_node_groups if g.name == pool)
    return nvme_cache(group.instances, cfg.storage.nvme_cache)


def nvme_cache_report(cfg: PlatformConfig) -> dict[str, dict[str, Any]]:
    """Per GPU pool: what backs nvme-cache."""
    return {p.name: pool_cache(cfg, p.name).report() for p in cfg.gpu_pools}


def shared_data_claim_name(cfg: PlatformConfig) -> str:
    """The claim behind the `shared-data` volume: the admin's where the stack names one
    (storage.shared_data.existing_claim), else the platform's `shared-data`."""
    shared = cfg.storage.shared_data
    if shared is not None and shared.existing_claim is not None:
        return shared.existing_claim
    return SHARED_DATA


def shared_data_volume(claim: str) -> dict[str, Any]:
    return {"name": SHARED_DATA, "persistentVolumeClaim": {"claimName": claim}}


def training_volumes(cache: NvmeCache, claim: str) -> list[dict[str, Any]]:
    """The `volumes` every training pod template lists; `claim` backs `shared-data`."""
    return [shared_data_volume(claim), cache.volume]


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

    def outputs(self) -> dict[str, pulumi.Input]:
        """Stack outputs: the training namespace's claim, and the throughput it should reach."""
        found: dict[str, pulumi.Input] = {
            "storage_shared_data_claim": pulumi.Output.concat(
                self.claim.metadata.namespace, "/", self.claim.metadata.name
            )
        }
        if self.expected_throughput_mbps is not None:
            found["storage_expected_throughput_mbps"] = self.expected_throughput_mbps
        return found


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
