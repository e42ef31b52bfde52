"""The self-test's floors every stack gets (model/config/selftest.py), read from the model and
compared with the documented figures as literals (STYLE.md §14-15): every GPU model and
instance type the floor tables map (the shipped stacks reach only H100, A100 and p5), and the
fractions and latency ceiling no shipped stack sets. docs/config.md prints these too, and is
regenerated from the same code, so it cannot be the guard."""

from __future__ import annotations

import pytest

from model.config import parse_config
from model.config.selftest import floors
from tests.conftest import STACKS, stack_config
from tests.helpers.bad_stacks import ADMIN
from tests.helpers.varied_stacks import gb200_config


def pool_of(instance_type: str):
    # model/catalog_offerings.py: p5e.48xlarge is not offered in us-east-1.
    region = "us-east-2" if instance_type == "p5e.48xlarge" else "us-east-1"
    cfg = parse_config(
        {
            "aws": {"region": region, "zones": [f"{region}a", f"{region}b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [{"name": "g", "instance_types": [instance_type], "efa": True}],
        },
        "stacks/Pulumi.t.yaml",
    )
    return cfg, cfg.gpu_pools[0]


# shared/FACTS.md, "Self-test numbers": all-reduce busbw floor within one 8-GPU node A100 ≈ 228
# GB/s, H100 ≈ 460, H200 ≈ 431; across two nodes 2 × p4de ≈ 78 GB/s and 2 × p5 ≈ 444 at 2 GiB.
# None: FACTS.md gives no two-node figure for the type, so the check only reports.
FLOORS = [
    ("p4de.24xlarge", 228.0, 78.0),  # A100 80GB
    ("p4d.24xlarge", 228.0, None),  # A100 40GB
    ("p5.48xlarge", 460.0, 444.0),  # H100
    ("p5e.48xlarge", 431.0, None),  # H200
    ("p5en.48xlarge", 431.0, None),  # H200
]


@pytest.mark.parametrize(("instance_type", "intra", "inter"), FLOORS)
def test_bus_bandwidth_floors_default_to_the_facts_figure_of_the_pool_s_hardware(
    instance_type, intra, inter
):
    cfg, pool = pool_of(instance_type)
    found = floors(cfg, pool, nodes=2)
    assert found["intra_node_busbw_gbps"][0] == intra
    assert "FACTS.md" in found["intra_node_busbw_gbps"][1]
    assert found.get("inter_node_busbw_gbps", (None,))[0] == inter


def test_across_nodes_of_one_nvlink_domain_the_floor_is_nvlinks_not_efas():
    """GB200 NVL72: 1.8 TB/s NVLink per GPU (NVIDIA GB200 NVL72 datasheet, "Fifth-Generation
    NVLink"), at the share of its datasheet NVLink the H100 floor reaches in one node: 460 of
    900 GB/s (FACTS.md; NVIDIA H100 datasheet): 1800 x 460 / 900 = 920 GB/s, though the pool
    has EFA as the p5 pool, whose floor across nodes is FACTS.md's 444."""
    cfg = gb200_config()
    value, source = floors(cfg, cfg.gpu_pools[0], nodes=2)["inter_node_busbw_gbps"]
    assert value == 920.0
    assert "NVLink" in source and "p6e-gb200.36xlarge: 1800 GB/s" in source
    cfg, pool = pool_of("p5.48xlarge")
    assert floors(cfg, pool, nodes=2)["inter_node_busbw_gbps"] == (
        444.0,
        'shared/FACTS.md, "Self-test numbers"',
    )


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_s_fractions_and_latency_ceiling_are_the_documented_ones(stack):
    settings = stack_config(stack).selftest
    # docs/selftest.md's settings table: 0.75 of the bf16 peak, 0.80 of the HBM peak, half the
    # plan's shared-data throughput per node; the source documents ask the NVMe cache for a
    # small-file p99 under 200 µs.
    assert settings.gemm_fraction == 0.75
    assert settings.memory_bandwidth_fraction == 0.80
    assert settings.storage_fraction == 0.5
    assert settings.nvme_p99_latency_us == 200.0
    # No floor of its own: the FACTS.md tables above apply.
    assert settings.intra_node_busbw_gbps is None
    assert settings.inter_node_busbw_gbps is None
