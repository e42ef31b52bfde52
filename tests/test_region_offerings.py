"""A stack that names an instance type its region does not offer is refused at plan time, where
the catalog read that region's offerings: the key path, the stack file, the type, the region and
the regions that offer it, and nothing declared.

Regions offering each type: EC2 DescribeInstanceTypeOfferings as getmoto/moto records it
(`moto/ec2/resources/instance_type_offerings/region/<region>.json`, commit c6bd43ff2d09,
2026-08-01). The literals below are copied from there, not from infra/catalog_rows.py."""

from __future__ import annotations

import pytest

from infra.catalog import CATALOG
from infra.config import parse_config
from tests.bad_stacks import ADMIN, NS, assert_refused, aws, case
from tests.conftest import AWS_STACKS, stack_config

EU_CENTRAL = {"region": "eu-central-1", "zones": ["eu-central-1a", "eu-central-1b"]}
EU_SOUTH_2 = {"region": "eu-south-2", "zones": ["eu-south-2a", "eu-south-2b"]}

NOT_OFFERED = [
    # moto: p3dn.24xlarge is offered in ap-northeast-1, eu-west-1, us-east-1 and us-west-2 only.
    case(
        aws(
            aws=EU_CENTRAL, gpu_node_groups=[{"name": "v100", "instance_types": ["p3dn.24xlarge"]}]
        ),
        f"{NS}:gpu_node_groups[0].instance_types[0]",
        "p3dn.24xlarge is not offered in region eu-central-1",
        "the regions that offer it: ap-northeast-1, eu-west-1, us-east-1, us-west-2",
        "p3dn-eu-central-1",
    ),
    # moto: p5e.48xlarge has no us-east-1 offering (Capacity Blocks in us-east-2, us-west-2...).
    case(
        aws(
            gpu_node_groups=[
                {"name": "l4", "instance_types": ["g6.xlarge"]},
                {"name": "h200", "instance_types": ["p5en.48xlarge", "p5e.48xlarge"]},
            ]
        ),
        f"{NS}:gpu_node_groups[1].instance_types[1]",
        "p5e.48xlarge is not offered in region us-east-1",
        "ap-southeast-2, ap-southeast-3, eu-north-1, eu-west-2, sa-east-1, us-east-2, us-west-2",
        "p5e-us-east-1",
    ),
    # moto: eu-south-2 offers m7i but not m6i.
    case(
        aws(aws=EU_SOUTH_2, system_nodes={"instance_types": ["m7i.xlarge", "m6i.xlarge"]}),
        f"{NS}:system_nodes.instance_types[1]",
        "m6i.xlarge is not offered in region eu-south-2",
        "if AWS offers it there now, list its zones under aws.zone_offerings.m6i.xlarge",
        "m6i-eu-south-2",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), NOT_OFFERED)
def test_a_type_its_region_does_not_offer_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def config(aws_section: dict, groups: list[dict]):
    return parse_config(
        {
            "aws": aws_section,
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": groups,
        },
        "stacks/Pulumi.t.yaml",
    )


def test_zone_offerings_of_the_account_overrule_the_catalogs_regions():
    # An account that sees p3dn in eu-central-1 (newer than the catalog's reading) says so.
    section = {**EU_CENTRAL, "zone_offerings": {"p3dn.24xlarge": ["eu-central-1a"]}}
    group = {"name": "v100", "instance_types": ["p3dn.24xlarge"], "zone": "eu-central-1a"}
    assert config(section, [group]).gpu_node_groups[0].instance_types == ["p3dn.24xlarge"]


def test_a_region_the_catalog_did_not_read_is_not_checked():
    # moto has no GovCloud file, so the catalog cannot tell whether us-gov-west-1 offers g6e.
    section = {"region": "us-gov-west-1", "zones": ["us-gov-west-1a", "us-gov-west-1b"]}
    group = {"name": "l40s", "instance_types": ["g6e.xlarge"]}
    assert config(section, [group]).aws.region == "us-gov-west-1"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_shipped_stack_names_types_its_region_offers(stack):
    cfg = stack_config(stack)
    names = {*cfg.system_nodes.instance_types}
    names.update(t for g in cfg.gpu_node_groups for t in g.instance_types)
    assert [n for n in sorted(names) if CATALOG[n].offered_in(cfg.aws.region) is not True] == []
