"""docs/gpu-nodes.md, "In the Dallas Local Zone": the facts it gives of the zone are the table's
(model/config/regions.LOCAL_ZONES), and the command it gives to name the Local Zone's parent
zone in a reader's account asks EC2 for that parent's zone ID, the one thing stable across
accounts (EC2 API Reference, DescribeAvailabilityZones: `ZoneIds`, which the AWS CLI spells
`--zone-ids`)."""

from __future__ import annotations

import re

from model.config.regions import LOCAL_ZONES
from model.stacks import ROOT

DALLAS = "us-east-1-dfw-2a"


def section() -> str:
    page = (ROOT / "docs" / "gpu-nodes.md").read_text(encoding="utf-8")
    (found,) = re.findall(r"^#### In the Dallas Local Zone\n(.*?)(?=^###)", page, re.S | re.M)
    return found


def test_the_section_gives_the_zone_as_the_table_has_it():
    zone, text = LOCAL_ZONES[DALLAS], section()
    for fact in (DALLAS, zone.zone_id, zone.group, zone.parent_zone_id, zone.parent_region):
        assert f"`{fact}`" in text or fact in text, fact


def test_its_command_asks_for_the_parent_zone_by_its_id():
    (command,) = re.findall(r"`(aws ec2 describe-availability-zones[^`]*)`", section())
    assert command.split() == [
        "aws",
        "ec2",
        "describe-availability-zones",
        "--zone-ids",
        LOCAL_ZONES[DALLAS].parent_zone_id,
    ]
