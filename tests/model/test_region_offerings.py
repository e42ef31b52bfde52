"""A stack that names an instance type its region does not offer is refused at plan time, where
the catalog read that region's offerings: the key path, the stack file, the type, the region and
the regions that offer it, and nothing declared.

Regions offering each type: EC2 DescribeInstanceTypeOfferings as getmoto/moto records it
(`moto/ec2/resources/instance_type_offerings/region/<region>.json`, commit c6bd43ff2d09,
2026-08-01). The literals below are copied from there, not from model/catalog_offerings.py."""

from __future__ import annotations

import pytest

from model.catalog import CATALOG
from model.catalog_offerings import OFFERINGS_READ, ZONE_ID_PREFIX
from model.config import parse_config
from tests.conftest import AWS_STACKS, stack_config
from tests.helpers.bad_stacks import ADMIN, NS, assert_refused, aws, case, plan_bad
from tools.offers import main as offers_main

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


def test_a_region_the_catalog_did_not_read_is_not_checked(monkeypatch):
    # Every region the model accepts was read; one read after a type's launch there is not.
    monkeypatch.setattr(
        "model.catalog.OFFERINGS_READ", tuple(r for r in OFFERINGS_READ if r != "eu-central-1")
    )
    group = {"name": "v100", "instance_types": ["p3dn.24xlarge"]}
    assert config(EU_CENTRAL, [group]).gpu_node_groups[0].instance_types == ["p3dn.24xlarge"]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_shipped_stack_names_types_its_region_offers(stack):
    cfg = stack_config(stack)
    names = {*cfg.system_nodes.instance_types}
    names.update(t for g in cfg.gpu_node_groups for t in g.instance_types)
    assert [n for n in sorted(names) if CATALOG[n].offered_in(cfg.aws.region) is not True] == []


EU_WEST_1 = {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]}
# moto's region/eu-west-1.json at c6bd43ff2d09 lists g5.xlarge, p4d.24xlarge and m7i.xlarge, and
# none of g6.xlarge, g6e.xlarge, p5.48xlarge.
EU_WEST_1_UNOFFERED = {
    f"{NS}:gpu_node_groups[0].instance_types[0]": "g6.xlarge",
    f"{NS}:gpu_node_groups[1].instance_types[0]": "g6e.xlarge",
    f"{NS}:gpu_node_groups[2].instance_types[1]": "p5.48xlarge",
}


def test_every_type_the_region_lacks_is_reported_in_one_run(tmp_path, monkeypatch, capsys):
    """Issue 26: moving a stack to eu-west-1 took four runs, one per unoffered type. One run
    names each of them at its own key, and nothing the region offers."""
    stack = aws(
        aws=EU_WEST_1,
        gpu_node_groups=[
            {"name": "l4", "instance_types": ["g6.xlarge"]},
            {"name": "l40s", "instance_types": ["g6e.xlarge", "g5.xlarge"]},
            {"name": "train", "instance_types": ["p4d.24xlarge", "p5.48xlarge"]},
        ],
    )
    code, output = plan_bad(tmp_path, monkeypatch, capsys, stack)
    assert code == 2, output
    problems = [line for line in output.splitlines() if line.startswith("  - ")]
    # Issue 38: the rules after this one run in the same run (these 1-GPU types leave a pod
    # too little memory), so count the region's problems alone.
    assert len([line for line in problems if "is not offered in region" in line]) == 3, output
    for path, name in EU_WEST_1_UNOFFERED.items():
        said = f"{name} is not offered in region eu-west-1"
        assert any(line.startswith(f"  - {path}: ") and said in line for line in problems), output
    for offered in ("g5.xlarge", "p4d.24xlarge", "m7i.xlarge"):
        assert f"{offered} is not offered" not in output


# ------------------------------------------------------------------ python -m tools.offers


def offers_output(capsys, region: str) -> tuple[int, list[str], str]:
    code = offers_main([region])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_offers_lists_a_regions_types_with_their_zones_and_prices(capsys):
    """moto's availability-zone-id/eu-west-1.json (c6bd43ff2d09): p4d.24xlarge in euw1-az2,
    p3dn.24xlarge in euw1-az1 and euw1-az2; eu-west-1 on-demand $23.71569/h and $33.711/h
    (instances.vantage.sh data, 2026-01-21). m7i has no eu-west-1 price recorded."""
    code, lines, _ = offers_output(capsys, "eu-west-1")
    assert code == 0
    row = {line.split()[0]: line for line in lines if line.startswith("  ")}
    assert row["p4d.24xlarge"].split()[4:6] == ["euw1-az2", "$23.71569/h"]
    assert row["p3dn.24xlarge"].split()[4:7] == ["euw1-az1", "euw1-az2", "$33.711/h"]
    assert "(eu-west-1, 2026-01-21)" in row["p4d.24xlarge"]
    assert "NOT REGIONAL: no eu-west-1 price recorded" in row["m7i.xlarge"]
    assert "(us-east-1, 2026-07-20)" in row["m7i.xlarge"]
    assert "g6.xlarge" not in row and "p5.48xlarge" not in row
    (lacking,) = [line for line in lines if line.startswith("Not offered in eu-west-1: ")]
    assert {"g6.xlarge", "g6e.xlarge", "p5.48xlarge"} <= set(lacking.split(": ")[1].split(", "))


@pytest.mark.parametrize("region", OFFERINGS_READ)
def test_offers_names_every_catalog_type_once_in_every_region_read(capsys, region):
    code, lines, _ = offers_output(capsys, region)
    assert code == 0
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    (lacking,) = [line for line in lines if line.startswith(f"Not offered in {region}: ")]
    lacking_names = [n for n in lacking.split(": ")[1].split(", ") if n != "none"]
    assert sorted(listed + lacking_names) == sorted(CATALOG)
    assert all(CATALOG[name].offered_in(region) for name in listed)
    assert all(line.split()[4].startswith(ZONE_ID_PREFIX[region] + "-az") for line in lines[1:-2])


@pytest.mark.parametrize(
    ("region", "said"),
    [("eu-west-9", "not an AWS region this project knows"), ("us-gov-west-1", "no reading")],
)
def test_offers_refuses_a_region_it_cannot_answer_for(capsys, region, said):
    code, lines, err = offers_output(capsys, region)
    assert code == 2 and lines == []
    assert said in err
