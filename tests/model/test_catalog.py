"""The instance catalog, row by row, against the documented facts. Every value below is a literal
copied from its source, never from model/catalog.py; a new catalog row needs a row here too.
The facts per type, with their sources, are in tests/helpers/instance_facts.py.

Sources of the tables below:
- On-demand price, us-east-1, and the day of its list: AWS price list of 2026-07-20 (the rows
  before g6/g4dn/p3dn), of 2026-09-25 for g6 and g4dn (AmbientWare/lazycloud
  `internal/compute/catalog.go`, in micro-dollars), instances.vantage.sh of 2026-01-21 for p3dn
  (tsaol/aws-gpu `data/p3dn_instances.js`).
- Regions: EC2 DescribeInstanceTypeOfferings per region as getmoto/moto records it
  (`moto/ec2/resources/instance_type_offerings/region/<region>.json`, commit c6bd43ff2d09,
  2026-08-01), among the 26 non-GovCloud regions of model/config/regions.py; zones from the same
  commit's `availability-zone-id/<region>.json`.
- On-demand prices outside us-east-1: instances.vantage.sh data of 2026-01-21 (tsaol/aws-gpu
  `data/<family>_instances.js`, commit 77fcd9fe1d06); for the system types (m7i, m6i), the same
  data of 2026-05-13 (jpetrucciani/awl `data/ec2_instance_types.json`, commit faac1318a02d).
"""

from __future__ import annotations

import pytest

from model.catalog import CATALOG, OnDemandRate, on_demand_rate
from model.catalog_offerings import OFFERINGS_READ
from model.catalog_prices import regional_on_demand
from tests.helpers.instance_facts import FACTS, Facts


def test_every_catalog_row_has_documented_facts():
    assert sorted(CATALOG) == sorted(FACTS)


@pytest.mark.parametrize("name", sorted(FACTS))
def test_catalog_row_matches_the_documented_facts(name):
    row = CATALOG[name]
    assert Facts(*(getattr(row, field) for field in Facts._fields)) == FACTS[name]


@pytest.mark.parametrize(
    "name",
    [
        "g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g6e.xlarge",
        "g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge",
    ],
)  # fmt: skip
def test_small_g_types_have_no_efa(name):
    # shared/FACTS.md: g5.4xlarge and smaller offer no EFA; EC2 User Guide, EFA "Supported
    # instance types": g6 and g4dn from 8xlarge up.
    assert not CATALOG[name].supports_efa


# VPC CNI max pods without prefix delegation, ENIs × (IPv4 per ENI − 1) + 2, as listed in
# awslabs/amazon-eks-ami `templates/shared/runtime/eni-max-pods.txt`.
@pytest.mark.parametrize(
    ("name", "pods"),
    [
        ("p4d.24xlarge", 737), ("p5.48xlarge", 100), ("p5en.48xlarge", 198), ("g5.xlarge", 58),
        ("g6.xlarge", 58), ("g6.12xlarge", 234), ("g6.48xlarge", 737),
        ("g4dn.xlarge", 29), ("g4dn.8xlarge", 58), ("g4dn.12xlarge", 234), ("g4dn.metal", 737),
        ("p3dn.24xlarge", 737),
    ],
)  # fmt: skip
def test_max_pods_follow_the_vpc_cni_formula(name, pods):
    assert CATALOG[name].max_pods == pods


@pytest.mark.parametrize(
    ("name", "profiles"),
    [
        # NVIDIA MIG user guide, "Supported MIG Profiles": A100-40GB, H100-80GB, H200-141GB.
        ("p4d.24xlarge", ("1g.5gb", "2g.10gb", "3g.20gb")),
        ("p5.48xlarge", ("1g.10gb", "2g.20gb", "3g.40gb")),
        ("p5en.48xlarge", ("1g.18gb", "2g.35gb", "3g.71gb")),
        # A10G and L40S have no MIG; nor have L4, T4 and V100 (MIG user guide, "Supported
        # GPUs": A100, A30, H100 and later data-centre parts).
        ("g5.48xlarge", None),
        ("g6e.48xlarge", None),
        ("g6.48xlarge", None),
        ("g4dn.metal", None),
        ("p3dn.24xlarge", None),
    ],
)
def test_mig_profiles_per_gpu(name, profiles):
    assert CATALOG[name].mig_profiles == profiles


# EKS User Guide, "Use P6e-GB200 UltraServers with Amazon EKS": the AL2023 ARM NVIDIA AMI (Grace
# is arm64), UltraServers of 9 and 18 instances, AMI v20251103 or later; an IMEX domain holds at
# most 18 nodes (dra-driver-nvidia-gpu v0.4.1 cmd/compute-domain-controller/main.go
# defaultMaxNodesPerIMEXDomain). Every other type: x86_64, NVLink inside the node, sold per
# instance.
GB200_NODE_FACTS = {
    "p6e-gb200.36xlarge": ("arm64", "AL2023_ARM_64_NVIDIA", 18, (9, 18), "20251103"),
}


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_architecture_nvlink_domain_and_ultraserver_columns(name):
    row = CATALOG[name]
    got = (
        row.cpu_architecture,
        row.ami_type,
        row.nvlink_domain_nodes,
        row.ultraserver_nodes,
        row.min_ami_release,
    )
    assert got == GB200_NODE_FACTS.get(name, ("x86_64", "AL2023_x86_64_NVIDIA", None, (), None))


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_nvlink_across_nodes_is_the_datasheet_figure_where_a_domain_spans_nodes(name):
    # NVIDIA GB200 NVL72 datasheet, "Fifth-Generation NVLink": 1.8 TB/s GPU-to-GPU, 130 TB/s for
    # the rack's 72 GPUs. Every other type's NVLink ends at the node.
    wanted = {"p6e-gb200.36xlarge": 1800}.get(name)
    assert CATALOG[name].nvlink_gbps_per_gpu == wanted


def test_gb200_is_unpriced_and_has_no_mig():
    # Sold only as UltraServer Capacity Blocks, no on-demand rate; driver 580's CDMM turns off
    # MIG (EKS UltraServer page).
    row = CATALOG["p6e-gb200.36xlarge"]
    assert (row.on_demand_hourly_usd, row.mig_profiles) == (None, None)


def test_every_row_is_consistent():
    for name, row in CATALOG.items():
        assert row.name == name
        assert (row.gpus == 0) == (row.gpu_model is None)
        assert row.on_demand_hourly_usd is None or row.on_demand_hourly_usd > 0


# fmt: off
# type: us-east-1 on-demand USD per hour, the day its price list was published.
PRICES = {
    "g6.xlarge": (0.8048, "2026-09-25"), "g6.2xlarge": (0.9776, "2026-09-25"),
    "g6.4xlarge": (1.3232, "2026-09-25"), "g6.8xlarge": (2.0144, "2026-09-25"),
    "g6.12xlarge": (4.6016, "2026-09-25"), "g6.16xlarge": (3.3968, "2026-09-25"),
    "g6.24xlarge": (6.6752, "2026-09-25"), "g6.48xlarge": (13.3504, "2026-09-25"),
    "g4dn.xlarge": (0.526, "2026-09-25"), "g4dn.2xlarge": (0.752, "2026-09-25"),
    "g4dn.4xlarge": (1.204, "2026-09-25"), "g4dn.8xlarge": (2.176, "2026-09-25"),
    "g4dn.12xlarge": (3.912, "2026-09-25"), "g4dn.16xlarge": (4.352, "2026-09-25"),
    "g4dn.metal": (7.824, "2026-09-25"),
    "p3dn.24xlarge": (31.212, "2026-01-21"),
    # The rows read from the 2026-07-20 list keep its date.
    "g5.xlarge": (1.006, "2026-07-20"), "p5.48xlarge": (55.04, "2026-07-20"),
}
# fmt: on


@pytest.mark.parametrize("name", sorted(PRICES))
def test_on_demand_price_and_its_date(name):
    row = CATALOG[name]
    assert (row.on_demand_hourly_usd, row.price_as_of) == PRICES[name]


# fmt: off
# Regions that offer each family, among the 26 read (every non-GovCloud region the config knows).
REGIONS = {family: tuple(regions.split()) for family, regions in {
    "p4d": "ap-northeast-1 ap-northeast-2 ap-south-1 ap-southeast-2 ca-central-1 eu-central-1 "
           "eu-north-1 eu-west-1 eu-west-2 sa-east-1 us-east-1 us-east-2 us-west-2",
    "p4de": "ap-northeast-1 ap-southeast-1 eu-central-1 il-central-1 us-east-1 us-west-2",
    "p5": "ap-northeast-1 ap-northeast-2 ap-south-1 ap-southeast-2 ap-southeast-3 ca-central-1 "
          "eu-north-1 eu-west-2 sa-east-1 us-east-1 us-east-2 us-west-1 us-west-2",
    "p5e": "ap-southeast-2 ap-southeast-3 eu-north-1 eu-west-2 sa-east-1 us-east-2 us-west-2",
    "p5en": "ap-northeast-1 ap-northeast-2 ap-south-1 ap-southeast-3 eu-north-1 eu-south-2 "
            "me-central-1 us-east-1 us-east-2 us-west-1 us-west-2",
    "p6-b200": "ap-south-1 us-east-1 us-east-2 us-west-2",
    # Only in the Dallas Local Zone of us-east-1 (EC2 User Guide, "Launch instances using
    # Capacity Blocks"), which no regional reading holds.
    "p6e-gb200": "",
    "p3dn": "ap-northeast-1 eu-west-1 us-east-1 us-west-2",
    "g5": "ap-northeast-1 ap-northeast-2 ap-south-1 ap-southeast-2 ap-southeast-3 ca-central-1 "
          "eu-central-1 eu-north-1 eu-south-2 eu-west-1 eu-west-2 eu-west-3 il-central-1 "
          "me-central-1 sa-east-1 us-east-1 us-east-2 us-west-2",
    "g6": "ap-northeast-1 ap-northeast-2 ap-south-1 ap-southeast-2 ca-central-1 eu-central-1 "
          "eu-central-2 eu-north-1 eu-south-2 eu-west-2 eu-west-3 me-central-1 sa-east-1 "
          "us-east-1 us-east-2 us-west-2",
    "g6e": "ap-northeast-1 ap-northeast-2 ap-northeast-3 ap-south-1 ap-south-2 eu-central-1 "
           "eu-north-1 eu-south-2 me-central-1 us-east-1 us-east-2 us-west-2",
    "g4dn": "af-south-1 ap-northeast-1 ap-northeast-2 ap-northeast-3 ap-south-1 ap-southeast-1 "
            "ap-southeast-2 ca-central-1 eu-central-1 eu-north-1 eu-south-1 eu-west-1 "
            "eu-west-2 eu-west-3 sa-east-1 us-east-1 us-east-2 us-west-1 us-west-2",
    "m7i": "af-south-1 ap-northeast-1 ap-northeast-2 ap-northeast-3 ap-south-1 ap-south-2 "
           "ap-southeast-1 ap-southeast-2 ap-southeast-3 ap-southeast-4 ca-central-1 "
           "eu-central-1 eu-central-2 eu-north-1 eu-south-1 eu-south-2 eu-west-1 eu-west-2 "
           "eu-west-3 il-central-1 me-central-1 sa-east-1 us-east-1 us-east-2 us-west-1 "
           "us-west-2",
    "m6i": "af-south-1 ap-northeast-1 ap-northeast-2 ap-northeast-3 ap-south-1 ap-south-2 "
           "ap-southeast-1 ap-southeast-2 ap-southeast-3 ca-central-1 eu-central-1 "
           "eu-central-2 eu-north-1 eu-south-1 eu-west-1 eu-west-2 eu-west-3 il-central-1 "
           "me-central-1 sa-east-1 us-east-1 us-east-2 us-west-1 us-west-2",
}.items()}
# fmt: on


@pytest.mark.parametrize("name", sorted(FACTS))
def test_regions_that_offer_each_type(name):
    assert CATALOG[name].regions == REGIONS[name.split(".")[0]]


def test_zones_that_offer_a_type_are_zone_ids_of_its_region():
    """moto `availability-zone-id/<region>.json` at c6bd43ff2d09: p5.48xlarge in us-west-1's
    usw1-az1 and usw1-az3 only, in all three of eu-west-2's zones."""
    zones = CATALOG["p5.48xlarge"].zones
    assert zones["us-west-1"] == ("usw1-az1", "usw1-az3")
    assert zones["eu-west-2"] == ("euw2-az1", "euw2-az2", "euw2-az3")
    assert "eu-west-1" not in zones


# On-demand USD per hour outside us-east-1: instances.vantage.sh data of 2026-01-21 as
# tsaol/aws-gpu `data/<family>_instances.js` carries it (commit 77fcd9fe1d06), `onDemand`.
REGIONAL_PRICES = {
    ("p5.48xlarge", "ap-northeast-1"): 68.8,
    ("p5.48xlarge", "eu-west-2"): 71.552,
    ("p5.48xlarge", "sa-east-1"): 92.4672,
    ("p4d.24xlarge", "eu-west-1"): 23.71569,
    ("p3dn.24xlarge", "eu-west-1"): 33.711,
    ("g5.xlarge", "eu-west-1"): 1.123,
    ("g6.xlarge", "eu-central-1"): 1.0064,
    ("g6.xlarge", "eu-west-2"): 1.0216,
}


@pytest.mark.parametrize(("name", "region"), sorted(REGIONAL_PRICES))
def test_on_demand_price_in_another_region(name, region):
    assert on_demand_rate(name, region) == OnDemandRate(
        REGIONAL_PRICES[name, region], region, "2026-01-21", True
    )


# The system types in eu-central-1: instances.vantage.sh data of 2026-05-13 as
# jpetrucciani/awl `data/ec2_instance_types.json` carries it (commit faac1318a02d),
# `linux_on_demand`.
SYSTEM_PRICES = {
    ("m7i.xlarge", "eu-central-1"): 0.2415,
    ("m7i.2xlarge", "eu-central-1"): 0.483,
    ("m6i.xlarge", "eu-central-1"): 0.23,
}


@pytest.mark.parametrize(("name", "region"), sorted(SYSTEM_PRICES))
def test_a_system_type_is_priced_in_frankfurt_from_its_own_dated_source(name, region):
    assert on_demand_rate(name, region) == OnDemandRate(
        SYSTEM_PRICES[name, region], region, "2026-05-13", True
    )


@pytest.mark.parametrize(
    ("name", "region"),
    [
        ("m7i.xlarge", "eu-west-1"),  # system types: eu-central-1's rate only is recorded
        ("g5.xlarge", "eu-west-3"),  # offered there, no price in the data
        ("g6e.xlarge", "me-central-1"),
    ],
)
def test_a_type_without_a_regional_price_stands_at_its_us_east_1_rate_marked(name, region):
    row = CATALOG[name]
    assert on_demand_rate(name, region) == OnDemandRate(
        row.on_demand_hourly_usd, "us-east-1", row.price_as_of, False
    )


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_a_regional_price_is_only_where_the_type_is_offered(name):
    for region in OFFERINGS_READ:
        price = regional_on_demand(name, region)
        if price is not None:
            assert region != "us-east-1" and CATALOG[name].offered_in(region), region
            assert price.usd > 0


@pytest.mark.parametrize(
    ("name", "region", "offered"),
    [
        ("p5e.48xlarge", "us-east-1", False),  # Capacity Blocks in us-east-2 and us-west-2
        ("p3dn.24xlarge", "eu-central-1", False),
        ("g4dn.xlarge", "af-south-1", True),
        # GovCloud: no reading, so the catalog does not know.
        ("p3dn.24xlarge", "us-gov-west-1", None),
    ],
)
def test_offered_in_says_unknown_where_no_region_was_read(name, region, offered):
    assert CATALOG[name].offered_in(region) is offered
