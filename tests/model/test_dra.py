"""model/dra.py: the DeviceClass -> quota table the driver's release, Kueue and the job builder
share, and the DRA API each Kubernetes minor serves.

Literals: ../shared/PINS.md ("Kubernetes versions and the DRA API": v1 from 1.34, v1beta2 opted
in on 1.33; "DeviceClasses, drivers and what the chart renders": `gpu.nvidia.com`,
`compute-domain-default-channel.nvidia.com`); MIG profiles of the A100 40GB (1g.5gb, 2g.10gb,
3g.20gb) and H100 80GB (1g.10gb, 2g.20gb, 3g.40gb) from the NVIDIA MIG User Guide."""

from __future__ import annotations

import dataclasses

import pytest

from model.config import GpuSharingSettings
from model.config.pools import GpuPool
from model.dra import device_class_quota, kueue_device_class_mappings, resource_api_version


def pool(name: str, model: str, memory: int, allocation: str, mode: str = "none", strategy="mixed"):
    return GpuPool(
        name=name,
        node_selector={"pool": name},
        gpu_model=model,
        gpu_memory_gib=memory,
        gpus_per_node=8,
        max_nodes=1,
        fabric="tcp",
        efa_interfaces=0,
        sharing=GpuSharingSettings(mode=mode),
        mig_strategy=strategy,
        memory_gib_per_gpu=100,
        gpu_allocation=allocation,
    )


@pytest.mark.parametrize(
    ("minor", "api"),
    [
        ("1.33", "resource.k8s.io/v1beta2"),
        ("1.34", "resource.k8s.io/v1"),
        ("1.35", "resource.k8s.io/v1"),
        ("1.36", "resource.k8s.io/v1"),
    ],
)
def test_the_device_class_api_follows_the_clusters_minor(minor, api):
    assert resource_api_version(minor) == api


def test_no_dra_pool_no_table():
    assert device_class_quota([pool("a", "H100", 80, "device_plugin", "mig")]) == {}


def test_mig_profiles_of_every_dra_pool_by_strategy_and_the_channel_of_an_nvlink_pool():
    pools = [
        pool("h100", "H100", 80, "dra", "mig"),
        pool("a100", "A100", 40, "dra", "mig", strategy="single"),
        pool("dp", "H100", 80, "device_plugin", "mig"),
    ]
    assert device_class_quota(pools) == {
        "gpu.nvidia.com": "nvidia.com/gpu",
        "mig-1g.10gb.gpu-platform": "nvidia.com/mig-1g.10gb",
        "mig-1g.5gb.gpu-platform": "nvidia.com/mig-1g.5gb",
        "mig-2g.20gb.gpu-platform": "nvidia.com/mig-2g.20gb",
        "mig-3g.40gb.gpu-platform": "nvidia.com/mig-3g.40gb",
    }
    # A GB200 pool keeps its GPUs on the device plugin: only its channel is mapped.
    nvl = dataclasses.replace(pools[2], nvlink_domain_nodes=18, sharing=GpuSharingSettings())
    assert device_class_quota([nvl]) == {
        "compute-domain-default-channel.nvidia.com": "nvidia.com/imex-channel"
    }


def test_classes_of_one_quota_name_share_one_mapping():
    table = {"a.example.com": "example.com/gpu", "b.example.com": "example.com/gpu"}
    assert kueue_device_class_mappings(table) == [
        {"name": "example.com/gpu", "deviceClassNames": ["a.example.com", "b.example.com"]}
    ]
