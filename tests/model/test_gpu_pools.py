"""GPU pools: one view over AWS node groups and an existing cluster's GPU nodes."""

from __future__ import annotations

import pytest

from model.config import ConfigError, parse_config
from tests.conftest import stack_config
from tests.helpers.bad_stacks import first_round
from tests.helpers.shared_data import RWX_STORAGE

# An infiniband pool needs the Network Operator's settings and the network pods join it by.
EXISTING = {
    "provider": "existing",
    "existing": {"name": "lab", "kubeconfig_path": "kc"},
    "fabric": {"network": {"interface": "ib0", "cidr": "192.168.110.0/24"}},
    "storage": RWX_STORAGE,
}
A100_POOL = {
    "name": "a100",
    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
    "gpu_model": "A100",
    "gpu_memory_gib": 80,
    "gpus_per_node": 8,
    "nodes": 4,
    "fabric": "infiniband",
}


def existing_with(*pools: dict):
    return parse_config(
        {**EXISTING, "existing": {**EXISTING["existing"], "gpu_pools": list(pools)}}, "t"
    )


def test_shipped_prod_pools_are_its_node_groups():
    # AWS EC2 User Guide, accelerated computing: p5.48xlarge has 8 H100 80 GB GPUs and supports
    # 32 EFA interfaces.
    pools = {p.name: p for p in stack_config("prod").gpu_pools}
    assert sorted(pools) == ["h100-block", "h100-ondemand"]
    block = pools["h100-block"]
    assert (block.gpu_model, block.gpus_per_node, block.efa_interfaces) == ("H100", 8, 32)
    assert block.fabric == "efa"
    assert block.node_selector == {"gpu-platform/node-group": "h100-block"}
    assert block.max_gpus == 32  # max_size 4 in Pulumi.prod.yaml


def test_a_mixed_spot_group_promises_the_smallest_gpu_count():
    # g5.2xlarge and g6e.xlarge each have 1 GPU; no EFA on either (FACTS.md).
    (pool,) = stack_config("dev").gpu_pools
    assert (pool.gpus_per_node, pool.fabric, pool.efa_interfaces) == (1, "tcp", 0)


def test_an_existing_clusters_pools_come_from_its_config():
    (pool,) = existing_with(A100_POOL).gpu_pools
    assert pool.node_selector == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert (pool.fabric, pool.max_nodes, pool.max_gpus) == ("infiniband", 4, 32)
    # NVIDIA MIG user guide, A100 80GB profiles: 1g.10gb, 2g.20gb, 3g.40gb.
    assert pool.mig_profiles == ("1g.10gb", "2g.20gb", "3g.40gb")


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"gpu_memory_gib": 48}, "gpu_pools[0].gpu_memory_gib", "sold with 40 or 80 GB"),
        ({"gpu_model": "L40S", "gpu_memory_gib": 48, "gpu_sharing": {"mode": "mig"}},
         "gpu_pools[0].gpu_sharing.mode", "mig needs A100, H100, H200 or B200"),
        ({"node_selector": {}}, "gpu_pools[0].node_selector", "at least 1"),
        ({"fabric": "efa"}, "gpu_pools[0].fabric", "infiniband"),
    ],
)  # fmt: skip
def test_bad_pools_are_refused_at_their_key(change, path, words):
    with pytest.raises(ConfigError) as raised:
        existing_with({**A100_POOL, **change})
    (problem,) = first_round(raised.value.problems)
    assert problem.startswith(f"gpu-platform:existing.{path}:"), problem
    assert words in problem, problem


def test_a_pool_name_is_used_once():
    with pytest.raises(ConfigError) as raised:
        existing_with(A100_POOL, {**A100_POOL, "nodes": 2})
    assert raised.value.problems[0].startswith("gpu-platform:existing.gpu_pools[1].name:")
