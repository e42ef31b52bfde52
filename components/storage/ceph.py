"""Ceph through Rook on an existing cluster: the operator, the CephFS CSI driver, a CephCluster
on the admin's storage hosts, a replicated CephFilesystem, its StorageClass and the `shared-data`
claim."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base import PlatformComponent
from components.context import StackContext
from components.helm import pinned_release, privileged_namespace
from components.kubernetes_object import KubernetesObject
from components.registry_mirror import mirrored
from components.storage.volumes import PART_OF, SharedData, declare_claim, shared_data_claim
from components.vocabulary import MULTUS_API
from model.config import CephNetworkAttachmentSettings, CephSettings
from model.versions import CEPH_IMAGE

CEPH_API = "ceph.rook.io/v1"
STORAGE_CLASS = "cephfs"
# Rook names a CephFS data pool `<filesystem>-<pool>`; the StorageClass names that pool.
DATA_POOL = "replicated"
# Rook writes the CSI credentials of a cluster into these secrets, in the cluster's namespace.
PROVISIONER_SECRET = "rook-csi-cephfs-provisioner"
NODE_SECRET = "rook-csi-cephfs-node"

# --------------------------------------------------------------------------- pure builders


def cephfs_driver_name(namespace: str) -> str:
    """The CSI driver (and provisioner) name Rook expects: `<operator namespace>.cephfs...`."""
    return f"{namespace}.cephfs.csi.ceph.com"


def rook_operator_values() -> dict[str, Any]:
    """rook-ceph chart values: CRDs from the chart, and the ceph-csi-operator subchart that
    runs the CSI drivers (Rook v1.20 configures CSI only through the operator's resources)."""
    return {"crds": {"enabled": True}, "csi": {"installCsiOperator": True}}


def ceph_csi_drivers_values(namespace: str) -> dict[str, Any]:
    """ceph-csi-drivers chart values, as Rook's recommended values file for the chart sets them
    (deploy/charts/ceph-csi-drivers/values.yaml at v1.20.6), for `namespace`: only the CephFS
    driver, since the platform declares no block pool or NFS, and a node plugin that tolerates
    every taint."""
    return {
        "operatorConfig": {
            "namespace": namespace,
            "driverSpecDefaults": {
                "imageSet": {"name": "rook-csi-operator-image-set-configmap"},
                # Mounts happen on GPU nodes, which carry taints: the node plugin must run
                # there, as the FSx CSI node plugin does by default.
                "nodePlugin": {
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists"}],
                },
                "controllerPlugin": {"priorityClassName": "system-cluster-critical"},
            },
        },
        "drivers": {
            "cephfs": {"enabled": True, "name": cephfs_driver_name(namespace)},
            "rbd": {"enabled": False, "name": f"{namespace}.rbd.csi.ceph.com"},
            "nfs": {"enabled": False, "name": f"{namespace}.nfs.csi.ceph.com"},
            "nvmeof": {"enabled": False, "name": f"{namespace}.nvmeof.csi.ceph.com"},
        },
    }


def network_attachment_name(role: str) -> str:
    return f"ceph-{role}"


def network_attachment_config(role: str, network: CephNetworkAttachmentSettings) -> str:
    """CNI config of a Ceph Multus network, as Rook's Multus guide recommends: macvlan on the
    host NIC (bridge mode), addresses unique across the cluster from the nv-ipam pool of the
    same name (components/data/fabric.py: its subnet puts the hosts' shims on-link, so daemons
    answer host clients over this network)."""
    return json.dumps(
        {
            "cniVersion": "0.3.1",
            "name": network_attachment_name(role),
            "type": "macvlan",
            "master": network.interface,
            "mode": "bridge",
            "ipam": {"type": "nv-ipam", "poolName": network_attachment_name(role)},
        },
        sort_keys=True,
    )


def multus_networks(ceph: CephSettings) -> dict[str, CephNetworkAttachmentSettings]:
    """Ceph network role (public, cluster) -> its Multus network, for those configured."""
    net = ceph.network
    if net.provider != "multus":
        return {}
    return {r: a for r, a in (("public", net.public), ("cluster", net.cluster)) if a is not None}


def ceph_network_spec(ceph: CephSettings) -> dict[str, Any]:
    provider = ceph.network.provider
    if provider == "host":
        return {"provider": "host"}
    if provider == "pod":
        return {}
    networks = multus_networks(ceph)
    return {
        "provider": "multus",
        "selectors": {
            role: f"{ceph.namespace}/{network_attachment_name(role)}" for role in networks
        },
        # Given, not detected: Rook's detection takes a fresh lease on every reconcile.
        "addressRanges": {role: [str(a.cidr)] for role, a in networks.items()},
    }


def ceph_cluster_spec(ceph: CephSettings, image: str = CEPH_IMAGE) -> dict[str, Any]:
    """The CephCluster: OSDs only on the listed hosts, on their listed disks or the filter's."""
    storage: dict[str, Any] = {
        "useAllNodes": False,
        "useAllDevices": False,
        "nodes": [
            {"name": n.name, **({"devices": [{"name": d} for d in n.devices]} if n.devices else {})}
            for n in ceph.nodes
        ],
    }
    if ceph.device_filter is not None:
        storage["deviceFilter"] = ceph.device_filter
    spec: dict[str, Any] = {
        "cephVersion": {"image": image},
        "dataDirHostPath": "/var/lib/rook",
        "mon": {"count": ceph.mon_count, "allowMultiplePerNode": False},
        "mgr": {"count": ceph.mgr_count, "allowMultiplePerNode": False},
        "dashboard": {"enabled": True, "ssl": True},
        "storage": storage,
        "priorityClassNames": {
            "mon": "system-node-critical",
            "osd": "system-node-critical",
            "mgr": "system-cluster-critical",
        },
        "disruptionManagement": {"managePodBudgets": True},
    }
    network = ceph_network_spec(ceph)
    if network:
        spec["network"] = network
    return spec


def ceph_filesystem_spec(ceph: CephSettings) -> dict[str, Any]:
    """A CephFS with metadata and data replicated `replication` times across hosts; kept when
    the resource is deleted, since it holds the training data."""
    replicated = {"size": ceph.replication, "requireSafeReplicaSize": ceph.replication > 1}
    return {
        "metadataPool": {"failureDomain": "host", "replicated": replicated},
        "dataPools": [{"name": DATA_POOL, "failureDomain": "host", "replicated": replicated}],
        "preserveFilesystemOnDelete": True,
        "metadataServer": {
            "activeCount": 1,
            "activeStandby": True,
            "priorityClassName": "system-cluster-critical",
        },
    }


def ceph_filesystem_annotations(ceph: CephSettings) -> dict[str, str]:
    """pulumi up waits for the filesystem to be Ready, which Rook reports once the cluster is
    up and the pools, filesystem and MDS exist. pulumi-kubernetes awaits the claim declared
    after it for a fixed 5 minutes, too short for a cold cluster, but enough from here."""
    return {
        "pulumi.com/waitFor": "jsonpath={.status.phase}=Ready",
        "pulumi.com/timeoutSeconds": str(ceph.ready_timeout_minutes * 60),
    }


def cephfs_storage_class_parameters(ceph: CephSettings) -> dict[str, str]:
    """What the CephFS provisioner needs: the cluster (its namespace), the filesystem and data
    pool, and the secrets Rook creates for the CSI driver."""
    ns = ceph.namespace
    params = {
        "clusterID": ns,
        "fsName": ceph.filesystem_name,
        "pool": f"{ceph.filesystem_name}-{DATA_POOL}",
    }
    for stage, secret in (
        ("provisioner", PROVISIONER_SECRET),
        ("controller-expand", PROVISIONER_SECRET),
        ("controller-publish", PROVISIONER_SECRET),
        ("node-stage", NODE_SECRET),
    ):
        params[f"csi.storage.k8s.io/{stage}-secret-name"] = secret
        params[f"csi.storage.k8s.io/{stage}-secret-namespace"] = ns
    return params


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class SecondaryNetworks:
    """What an object on a Multus network waits for, beyond the Network Operator's namespace
    (components/data/fabric.py hands it over once it has declared them)."""

    # The release: it installs the NetworkAttachmentDefinition CRD.
    release: pulumi.Resource
    # nv-ipam pools by name. Each waits for the NicClusterPolicy, which deploys Multus and
    # nv-ipam: a pod that joins a network before its pool is served gets no address.
    ip_pools: dict[str, pulumi.Resource]


@dataclass(frozen=True)
class RookCephArgs:
    context: StackContext
    ceph: CephSettings
    # Every namespace jobs run in, the training namespace first: each gets its `shared-data`.
    claim_namespaces: Sequence[str]
    # Declared first: the claims' namespaces.
    after: Sequence[pulumi.Resource] = ()
    # With Multus networks: the Network Operator's CRD, Multus and nv-ipam pools they need.
    networks: SecondaryNetworks | None = None


class RookCeph(PlatformComponent):
    """Rook-Ceph operator and CephFS CSI driver (pinned charts), Multus networks when used, the
    CephCluster and CephFilesystem, the `cephfs` StorageClass and the `shared-data` claim."""

    PLANE = "storage"

    def __init__(self, name: str, args: RookCephArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        env, ceph, ns = args.context.env, args.ceph, args.ceph.namespace

        # OSDs and CSI node plugins run privileged.
        namespace = privileged_namespace(f"{env}-ns-{ns}", ns, PART_OF, self)
        operator = pinned_release(
            f"{env}-rook-ceph",
            "rook-ceph",
            ns,
            rook_operator_values(),
            self.child(depends_on=[namespace]),
            context=args.context,
        )
        drivers = pinned_release(
            f"{env}-ceph-csi-drivers",
            "ceph-csi-drivers",
            ns,
            ceph_csi_drivers_values(ns),
            self.child(depends_on=[operator]),
            context=args.context,
        )

        multus = multus_networks(ceph)
        if multus and args.networks is None:
            raise ValueError("Ceph Multus networks need the Network Operator's networks")
        attachments = [
            KubernetesObject(
                f"{env}-ceph-{role}-net",
                {
                    "apiVersion": MULTUS_API,
                    "kind": "NetworkAttachmentDefinition",
                    "metadata": {
                        "name": network_attachment_name(role),
                        "namespace": ns,
                        "labels": PART_OF,
                    },
                    "spec": {"config": network_attachment_config(role, network)},
                },
                self.child(depends_on=[namespace, args.networks.release]),
            )
            for role, network in multus.items()
        ]
        # Its mons and OSDs join the networks at start: their addresses must be served by then.
        pools = [args.networks.ip_pools[network_attachment_name(role)] for role in multus]
        cluster = KubernetesObject(
            f"{env}-ceph-cluster",
            {
                "apiVersion": CEPH_API,
                "kind": "CephCluster",
                "metadata": {"name": ns, "namespace": ns, "labels": PART_OF},
                "spec": ceph_cluster_spec(ceph, mirrored(CEPH_IMAGE, args.context.image_route)),
            },
            self.child(protect=args.context.protect, depends_on=[operator, *attachments, *pools]),
        )
        filesystem = KubernetesObject(
            f"{env}-cephfs",
            {
                "apiVersion": CEPH_API,
                "kind": "CephFilesystem",
                "metadata": {
                    "name": ceph.filesystem_name,
                    "namespace": ns,
                    "labels": PART_OF,
                    "annotations": ceph_filesystem_annotations(ceph),
                },
                "spec": ceph_filesystem_spec(ceph),
            },
            self.child(protect=args.context.protect, depends_on=[cluster]),
        )
        storage_class = k8s.storage.v1.StorageClass(
            f"{env}-cephfs",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=STORAGE_CLASS, labels=PART_OF),
            provisioner=cephfs_driver_name(ns),
            parameters=cephfs_storage_class_parameters(ceph),
            # Shared training data outlives a deleted claim.
            reclaim_policy="Retain",
            allow_volume_expansion=True,
            volume_binding_mode="Immediate",
            opts=self.child(depends_on=[drivers]),
        )
        # A claim of the class is a CephFS subvolume of its own: each namespace's `shared-data`
        # holds that namespace's data (the training namespace's keeps its resource name).
        claims = [
            declare_claim(
                self,
                f"{env}-shared-data" + ("" if i == 0 else f"-in-{ns}"),
                shared_data_claim(ns, ceph.claim_size_gib, STORAGE_CLASS),
                after=[storage_class, filesystem, *args.after],
                protect=args.context.protect,
            )
            for i, ns in enumerate(args.claim_namespaces)
        ]
        claim = claims[0]
        # What any claim of the class (the monitoring volumes' too, where the stack names it)
        # binds through: the CSI provisioner answers only once Rook has made the filesystem.
        self.classes = {STORAGE_CLASS: [storage_class, filesystem]}
        self.shared = SharedData(claim, ceph.expected_throughput_mbps)
        self.outputs = self.shared.outputs()
        self.register_outputs({"filesystem": ceph.filesystem_name, **self.outputs})
