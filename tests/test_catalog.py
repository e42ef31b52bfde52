"""The instance catalog agrees with the facts the platform depends on (shared/FACTS.md)."""

from __future__ import annotations

import pytest

from infra.catalog import CATALOG

# (type, GPUs, GPU model, GPU memory GiB, EFA interfaces): shared/FACTS.md, AWS GPU instances.
FACTS = [
    ("p4d.24xlarge", 8, "A100", 40, 4),
    ("p4de.24xlarge", 8, "A100", 80, 4),
    ("p5.48xlarge", 8, "H100", 80, 32),
    ("p5e.48xlarge", 8, "H200", 141, 32),
    ("p5en.48xlarge", 8, "H200", 141, 16),
    ("p6-b200.48xlarge", 8, "B200", 180, 8),
    ("g5.8xlarge", 1, "A10G", 24, 1),
    ("g5.48xlarge", 8, "A10G", 24, 1),
    ("g6e.24xlarge", 4, "L40S", 48, 2),
    ("g6e.48xlarge", 8, "L40S", 48, 4),
]


@pytest.mark.parametrize(("name", "gpus", "model", "memory", "efa"), FACTS)
def test_gpu_and_efa_facts(name, gpus, model, memory, efa):
    row = CATALOG[name]
    assert (row.gpus, row.gpu_model, row.gpu_memory_gib, row.efa_interfaces) == (
        gpus,
        model,
        memory,
        efa,
    )


@pytest.mark.parametrize("name", ["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g6e.xlarge"])
def test_small_g_types_have_no_efa(name):
    assert not CATALOG[name].supports_efa


def test_p4d_local_nvme_is_eight_terabyte_disks():
    row = CATALOG["p4d.24xlarge"]
    assert (row.nvme_disks, row.nvme_disk_gb) == (8, 1000)


@pytest.mark.parametrize(("name", "pods"), [("p5.48xlarge", 100), ("p5en.48xlarge", 198)])
def test_max_pods_follow_the_vpc_cni_formula(name, pods):
    assert CATALOG[name].max_pods == pods


def test_every_row_is_complete_and_consistent():
    for name, row in CATALOG.items():
        assert row.name == name
        assert row.vcpus > 0 and row.memory_gib > 0
        assert row.efa_interfaces <= max(row.network_cards, 1) or row.efa_interfaces == 1
        assert (row.gpus == 0) == (row.gpu_model is None)
        assert row.on_demand_hourly_usd is None or row.on_demand_hourly_usd > 0
        if row.network_cards > 1:
            assert row.efa_interfaces > 0, f"{name}: several cards only matter for EFA"
