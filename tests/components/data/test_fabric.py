"""The on-prem fabric: the Network Operator release, `nic-cluster-policy`, the nv-ipam pools and
the RDMA network, checked against the operator's 26.4.1 release and refused when unusable."""

from __future__ import annotations

import json

import pytest

from components.data.fabric import (
    network_operator_values,
    nic_cluster_policy_spec,
    rdma_network_config,
)
from model.config import parse_config
from tests.conftest import STACKS, planned
from tests.helpers import crds
from tests.helpers.bad_stacks import NS, assert_refused, aws, case, existing
from tests.helpers.shared_data import RWX_STORAGE

POOL = {
    "name": "a100",
    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
    "gpu_model": "A100",
    "gpu_memory_gib": 80,
    "gpus_per_node": 8,
    "nodes": 4,
    "fabric": "roce",
}
NETWORK = {"interface": "ens1f0np0", "cidr": "192.168.110.0/24"}
CEPH = {"nodes": [{"name": "s1", "devices": ["nvme1n1"]}], "replication": 1}
PUBLIC = {"interface": "ens1f0np0", "cidr": "192.168.100.0/25", "host_range": "192.168.100.128/25"}
ROCE = {"gid_index": 3, "network": NETWORK}


def onprem(settings: dict, **pool) -> object:
    raw = {
        "provider": "existing",
        "existing": {"name": "lab", "kubeconfig_path": "kc", "gpu_pools": [{**POOL, **pool}]},
        "fabric": settings,
        "storage": RWX_STORAGE,
    }
    return parse_config(raw, "t")


def policy(spec: dict) -> dict:
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": spec,
    }


def objects(stack: str, kind: str) -> dict[str, dict]:
    return {
        o["metadata"]["name"]: o for o in planned(stack).kubernetes_objects() if o["kind"] == kind
    }


def test_only_the_gpu_operator_runs_node_feature_discovery():
    # FACTS.md: only one operator runs NFD. network-operator 26.4.1 values.yaml: `nfd.enabled`
    # deploys its NFD, `nfd.deployNodeFeatureRules` its rules (both default true).
    assert network_operator_values()["nfd"] == {"enabled": False, "deployNodeFeatureRules": False}


def test_onprem_policy_deploys_the_26_4_1_images_and_the_configured_nics():
    # network-operator v26.4.1 hack/release.yaml: every component from nvcr.io/nvidia/mellanox,
    # tagged network-operator-v26.4.1.
    (spec,) = [o["spec"] for o in objects("onprem", "NicClusterPolicy").values()]
    assert spec["secondaryNetwork"] == {
        "multus": {
            "repository": "nvcr.io/nvidia/mellanox",
            "image": "multus-cni",
            "version": "network-operator-v26.4.1",
        },
        "cniPlugins": {
            "repository": "nvcr.io/nvidia/mellanox",
            "image": "plugins",
            "version": "network-operator-v26.4.1",
        },
    }
    assert spec["nvIpam"]["image"] == "nvidia-k8s-ipam"
    plugin = spec["rdmaSharedDevicePlugin"]
    assert (plugin["image"], plugin["version"]) == (
        "k8s-rdma-shared-dev-plugin",
        "network-operator-v26.4.1",
    )
    # Pulumi.onprem.yaml: ConnectX-6 (15b3:101b) on both ports, 63 pods a NIC.
    assert json.loads(plugin["config"]) == {
        "configList": [
            {
                "resourceName": "rdma_shared_device",
                "rdmaHcaMax": 63,
                "selectors": {
                    "vendors": ["15b3"],
                    "deviceIDs": ["101b"],
                    "ifNames": ["ens1f0np0", "ens1f1np1"],
                },
            }
        ]
    }
    # The onprem hosts run DOCA-OFED already: the operator must not replace their driver.
    assert "ofedDriver" not in spec


def test_rdma_daemonsets_run_on_tainted_gpu_nodes():
    # The taint GPU nodes carry, as the GPU Operator's daemonsets.tolerations default has it
    # (shared/PINS.md): the RDMA device plugin must run beside the GPUs it serves.
    spec = nic_cluster_policy_spec(onprem(ROCE))
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        # and before the node's test, which checks the fabric (docs/selftest.md).
        {
            "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
            "operator": "Exists",
            "effect": "NoSchedule",
        },
        # and on a pool's canary node, measured with the GPU stack it would roll out
        # (docs/operations.md, "Rolling a GPU-stack change").
        {"key": "gpu-platform/canary", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_the_operator_deploys_the_doca_driver_only_where_hosts_lack_it():
    spec = nic_cluster_policy_spec(onprem({**ROCE, "mofed_preinstalled": False}))
    # network-operator v26.4.1 hack/release.yaml, Mofed.
    assert spec["ofedDriver"] == {
        "repository": "nvcr.io/nvidia/mellanox",
        "image": "doca-driver",
        "version": "doca3.4.1-26.04-1.1.0.0-1",
    }
    assert crds.errors(policy(spec)) == []


def test_sriov_mode_replaces_the_shared_device_plugin():
    spec = nic_cluster_policy_spec(onprem({**ROCE, "rdma_mode": "sriov"}))
    assert "rdmaSharedDevicePlugin" not in spec
    plugin = spec["sriovDevicePlugin"]
    assert plugin["image"] == "sriov-network-device-plugin"
    (resource,) = json.loads(plugin["config"])["resourceList"]
    # sriov-network-device-plugin selectors: `devices` (not deviceIDs) and `pfNames`.
    assert resource["selectors"] == {"vendors": ["15b3"], "isRdma": True}
    with_nics = onprem(
        {**ROCE, "rdma_mode": "sriov", "nic_selector": {"device_ids": ["101e"], "if_names": ["p0"]}}
    )
    (resource,) = json.loads(nic_cluster_policy_spec(with_nics)["sriovDevicePlugin"]["config"])[
        "resourceList"
    ]
    assert resource == {
        "resourceName": "rdma_shared_device",
        "resourcePrefix": "nvidia.com",
        "selectors": {"vendors": ["15b3"], "devices": ["101e"], "pfNames": ["p0"], "isRdma": True},
    }
    assert crds.errors(policy(spec)) == []


def test_infiniband_runs_ipoib_and_roce_macvlan():
    ib = onprem({"network": NETWORK}, fabric="infiniband")
    assert nic_cluster_policy_spec(ib)["secondaryNetwork"]["ipoib"]["image"] == "ipoib-cni"
    assert json.loads(rdma_network_config(ib))["type"] == "ipoib"
    roce = json.loads(rdma_network_config(onprem(ROCE)))
    assert (roce["type"], roce["mode"], roce["master"]) == ("macvlan", "bridge", "ens1f0np0")
    assert roce["ipam"] == {"type": "nv-ipam", "poolName": "rdma"}


def test_the_rdma_pool_hands_addresses_only_to_the_rdma_pools_nodes():
    pool = objects("onprem", "IPPool")["rdma"]
    assert pool["metadata"]["namespace"] == "nvidia-network-operator"
    assert pool["spec"] == {
        "subnet": "192.168.110.0/24",
        "perNodeBlockSize": 16,
        "nodeSelector": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "nvidia.com/gpu.product",
                            "operator": "In",
                            "values": ["NVIDIA-A100-SXM4-80GB"],
                        }
                    ]
                }
            ]
        },
    }
    # The RDMA network in every namespace onprem's jobs run in: training, team research
    # (stacks/Pulumi.onprem.yaml) and the self-test's; Multus reads a pod's networks from its
    # own namespace.
    nads = [
        o
        for o in planned("onprem").kubernetes_objects()
        if o["kind"] == "NetworkAttachmentDefinition" and o["metadata"]["name"] == "rdma"
    ]
    assert sorted(n["metadata"]["namespace"] for n in nads) == [
        "gpu-platform-selftest",
        "research",
        "training",
    ]
    assert nads[0]["spec"] == nads[1]["spec"]
    # k8s-rdma-shared-dev-plugin advertises rdma/<resourceName>: what training pods request.
    assert planned("onprem").outputs["fabric_rdma_resource"] == "rdma/rdma_shared_device"


@pytest.mark.parametrize("stack", STACKS)
def test_one_cluster_one_ipam_and_one_policy(stack):
    plan = planned(stack)
    configs = [
        json.loads(o["spec"]["config"])
        for o in plan.kubernetes_objects()
        if o["kind"] == "NetworkAttachmentDefinition"
    ]
    # The operator dropped whereabouts in v25.10.0 (shared/PINS.md): every network uses nv-ipam.
    assert all(c["ipam"]["type"] == "nv-ipam" for c in configs)
    pools = set(objects(stack, "IPPool"))
    assert {c["ipam"]["poolName"] for c in configs} <= pools
    policies = objects(stack, "NicClusterPolicy")
    assert list(policies) == (["nic-cluster-policy"] if configs else [])


BAD = [
    case(existing(existing={"name": "lab", "kubeconfig_path": "kc", "gpu_pools": [POOL]},
                  fabric={"network": NETWORK}),
         f"{NS}:fabric.gid_index", "roce", "NCCL_IB_GID_INDEX", "roce-without-gid-index"),
    case(existing(existing={"name": "lab", "kubeconfig_path": "kc", "gpu_pools": [POOL]}),
         f"{NS}:existing.gpu_pools[0].fabric", "roce", "add a fabric section",
         "rdma-pool-without-fabric"),
    case(existing(existing={"name": "lab", "kubeconfig_path": "kc", "gpu_pools": [POOL]},
                  fabric={"gid_index": 3}),
         f"{NS}:fabric.network", "uses roce", "give fabric.network.interface",
         "rdma-pool-without-network"),
    case(existing(fabric={"nic_selector": {"vendors": []}}),
         f"{NS}:fabric.nic_selector.vendors", "all empty", "vendors: [15b3]",
         "selector-selects-nothing"),
    case(existing(fabric=ROCE), f"{NS}:fabric", "no pool", "set a pool's fabric",
         "fabric-nothing-uses"),
    case(aws(fabric={"gid_index": 3}), f"{NS}:fabric", "", "only valid with provider existing",
         "fabric-on-aws"),
    case(existing(fabric={"network": {**NETWORK, "gateway": "10.0.0.1"}}),
         f"{NS}:fabric.network.gateway", "10.0.0.1", "not in cidr 192.168.110.0/24",
         "gateway-outside-subnet"),
    case(existing(existing={"name": "lab", "kubeconfig_path": "kc",
                            "gpu_pools": [POOL, {**POOL, "name": "ib", "fabric": "infiniband",
                                                    "node_selector": {"rack": "ib"}}]},
                  fabric=ROCE),
         f"{NS}:existing.gpu_pools", "infiniband and roce", "one fabric section",
         "mixed-fabrics"),
    case(existing(fabric={"network": {**NETWORK, "cidr": "192.168.100.0/24"}},
                  storage={"ceph": {**CEPH, "network": {"provider": "multus", "public": PUBLIC}}}),
         f"{NS}:storage.ceph.network.public.cidr", "192.168.100.0/24",
         "overlaps fabric.network.cidr", "rdma-network-overlaps-ceph"),
    case(existing(storage={"ceph": {**CEPH, "network": {
            "provider": "multus", "public": {**PUBLIC, "host_range": "10.0.0.0/24"}}}}),
         f"{NS}:storage.ceph.network.public.host_range", "10.0.0.0/24",
         "parts of the one subnet", "ceph-hosts-far-from-pods"),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_unusable_fabric_config_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
