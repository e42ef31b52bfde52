"""Rook-Ceph on an existing cluster (components/storage/ceph.py): its Multus networks, the CSI
drivers' values, and the CephCluster, filesystem and storage class the on-prem stack declares."""

from __future__ import annotations

import json

from components.storage.ceph import (
    ceph_csi_drivers_values,
    ceph_network_spec,
    cephfs_driver_name,
    network_attachment_config,
)
from model.config import CephSettings, parse_config
from model.versions import CHARTS
from tests.conftest import find, planned
from tests.helpers.shared_data import claim_of, claims_of, stack_config

RELEASE = "kubernetes:helm.sh/v3:Release"


def test_ceph_multus_networks_become_selectors_and_address_ranges():
    ceph = CephSettings(
        nodes=[{"name": "a", "devices": ["nvme1n1"]}],
        replication=1,
        namespace="storage",
        network={
            "provider": "multus",
            "cluster": {"interface": "ens2", "cidr": "10.9.0.0/24"},
        },
    )
    assert ceph_network_spec(ceph) == {
        "provider": "multus",
        "selectors": {"cluster": "storage/ceph-cluster"},
        "addressRanges": {"cluster": ["10.9.0.0/24"]},
    }
    config = json.loads(network_attachment_config("cluster", ceph.network.cluster))
    # nv-ipam's CNI config names a pool, nothing more (network-operator 26.4.1,
    # example/crs/mellanox.com_v1alpha1_macvlannetwork_cr-nvidia-ipam.yaml).
    assert (config["master"], config["ipam"]) == (
        "ens2",
        {"type": "nv-ipam", "poolName": "ceph-cluster"},
    )


def test_onprem_public_network_keeps_hosts_out_of_the_pod_range_and_reaches_them():
    # Rook's Multus guide: macvlan in bridge mode, a pod range that holds no host address, and
    # pods that reach the hosts' shims. nv-ipam (the operator's IPAM since whereabouts left in
    # v25.10.0) returns routes only through a gateway, so the pool's subnet spans both halves
    # of the stack's /24, with the hosts' half excluded: the hosts are on-link.
    objects = {
        (r.inputs["kind"], r.inputs["metadata"]["name"]): r.inputs
        for r in planned("onprem").resources
        if r.inputs.get("kind") in ("NetworkAttachmentDefinition", "IPPool")
    }
    nad = objects[("NetworkAttachmentDefinition", "ceph-public")]
    assert json.loads(nad["spec"]["config"]) == {
        "cniVersion": "0.3.1",
        "name": "ceph-public",
        "type": "macvlan",
        "master": "ens1f0np0",
        "mode": "bridge",
        "ipam": {"type": "nv-ipam", "poolName": "ceph-public"},
    }
    assert objects[("IPPool", "ceph-public")]["spec"] == {
        "subnet": "192.168.100.0/24",
        "perNodeBlockSize": 8,
        "exclusions": [{"startIP": "192.168.100.128", "endIP": "192.168.100.255"}],
    }
    # No host range on the cluster network: the pool is the pods' range itself.
    assert objects[("IPPool", "ceph-cluster")]["spec"] == {
        "subnet": "192.168.101.0/24",
        "perNodeBlockSize": 8,
    }


def test_csi_drivers_follow_the_rook_namespace():
    values = ceph_csi_drivers_values("storage")
    assert values["operatorConfig"]["namespace"] == "storage"
    assert values["drivers"]["cephfs"] == {"enabled": True, "name": "storage.cephfs.csi.ceph.com"}


def ceph_objects(plan) -> dict[str, dict]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in plan.kubernetes_objects()}


def test_shipped_onprem_ceph_cluster_follows_the_config():
    plan = planned("onprem")
    cfg = parse_config(stack_config("onprem"), "onprem")
    ceph = cfg.storage.ceph
    objects = ceph_objects(plan)
    cluster = objects[f"CephCluster/{ceph.namespace}"]["spec"]
    assert cluster["mon"]["count"] == 3
    assert cluster["storage"]["deviceFilter"] == ceph.device_filter
    assert [n["name"] for n in cluster["storage"]["nodes"]] == [n.name for n in ceph.nodes]
    assert cluster["storage"]["useAllNodes"] is False
    # Each selected Multus network is declared, in the namespace the selector names.
    for role, selector in cluster["network"]["selectors"].items():
        namespace, name = selector.split("/")
        nad = objects[f"NetworkAttachmentDefinition/{name}"]
        assert nad["metadata"]["namespace"] == namespace == ceph.namespace
        assert json.loads(nad["spec"]["config"])["master"] == getattr(ceph.network, role).interface
    assert set(cluster["network"]["selectors"]) == {"public", "cluster"}
    fs = objects[f"CephFilesystem/{ceph.filesystem_name}"]["spec"]
    assert fs["metadataPool"]["replicated"]["size"] == ceph.replication
    assert all(p["replicated"]["size"] == ceph.replication for p in fs["dataPools"])


def test_shipped_onprem_storage_class_points_at_the_filesystem_and_the_driver():
    plan = planned("onprem")
    objects = ceph_objects(plan)
    fs = next(o for o in objects.values() if o["kind"] == "CephFilesystem")
    claim = claim_of(plan)
    sc = objects[f"StorageClass/{claim['spec']['storageClassName']}"]
    namespace = fs["metadata"]["namespace"]
    assert sc["provisioner"] == cephfs_driver_name(namespace)
    assert sc["parameters"]["clusterID"] == namespace
    assert sc["parameters"]["fsName"] == fs["metadata"]["name"]
    assert (
        sc["parameters"]["pool"] == f"{fs['metadata']['name']}-{fs['spec']['dataPools'][0]['name']}"
    )
    drivers = find(plan, RELEASE, "onprem-ceph-csi-drivers").inputs
    assert drivers["values"]["drivers"]["cephfs"]["name"] == sc["provisioner"]
    operator = find(plan, RELEASE, "onprem-rook-ceph")
    for key, release in (("rook-ceph", operator.inputs), ("ceph-csi-drivers", drivers)):
        chart = CHARTS[key]
        assert (release["chart"], release["version"], release["repositoryOpts"]["repo"]) == (
            chart.name,
            chart.version,
            chart.repository,
        )
        assert release["namespace"] == namespace
    # The drivers chart needs the operator's CRDs and CSI operator: it comes after.
    assert operator.urn in find(plan, RELEASE, "onprem-ceph-csi-drivers").dependencies
    # Every namespace jobs run in gets a claim of its own from the same class: training, team
    # research (stacks/Pulumi.onprem.yaml) and the self-test's, each a subvolume of the same
    # filesystem.
    claims = claims_of(plan)
    assert sorted(claims) == ["gpu-platform-selftest", "research", "training"]
    assert {c["spec"]["storageClassName"] for c in claims.values()} == {sc["metadata"]["name"]}
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
