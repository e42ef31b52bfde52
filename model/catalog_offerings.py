"""Where EC2 offers each catalog type: the regions and, in each, the zones (by zone ID).

Source: EC2 DescribeInstanceTypeOfferings as getmoto/moto records it per region, read at commit
c6bd43ff2d09 (2026-08-01): `moto/ec2/resources/instance_type_offerings/availability-zone-id/
<region>.json` (`--location-type availability-zone-id`); the regions a type is offered in are
the ones with a zone that offers it, which is also what moto's `region/<region>.json` says for
every catalog type. Read for the regions in `OFFERINGS_READ` (every region of
model/config/regions.py moto has a file for; the two GovCloud regions have none, so a stack
there is not checked). AWS adds regions over time: a type newer in a region than this reading is
refused until its entry here gains the region, or the stack lists the type's zones in
`aws.zone_offerings`.

Zones are given by zone ID (`euw1-az1`), not name (`eu-west-1a`): EC2 maps names to physical
zones per account (Amazon EC2 User Guide, "AZ IDs"), so only the ID means the same zone in every
account; `aws ec2 describe-availability-zones --region <region>` gives an account's name of
each ID.
"""

from __future__ import annotations

OFFERINGS_AS_OF = "2026-08-01"
OFFERINGS_READ: tuple[str, ...] = (
    "af-south-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
    "ca-central-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2",
    "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "sa-east-1",
    "us-east-1", "us-east-2", "us-west-1", "us-west-2",
)  # fmt: skip

# Zone IDs of each region: `<prefix>-az<n>`, the prefix as EC2 names it.
ZONE_ID_PREFIX: dict[str, str] = {
    "af-south-1": "afs1",
    "ap-northeast-1": "apne1",
    "ap-northeast-2": "apne2",
    "ap-northeast-3": "apne3",
    "ap-south-1": "aps1",
    "ap-south-2": "aps2",
    "ap-southeast-1": "apse1",
    "ap-southeast-2": "apse2",
    "ap-southeast-3": "apse3",
    "ap-southeast-4": "apse4",
    "ca-central-1": "cac1",
    "eu-central-1": "euc1",
    "eu-central-2": "euc2",
    "eu-north-1": "eun1",
    "eu-south-1": "eus1",
    "eu-south-2": "eus2",
    "eu-west-1": "euw1",
    "eu-west-2": "euw2",
    "eu-west-3": "euw3",
    "il-central-1": "ilc1",
    "me-central-1": "mec1",
    "sa-east-1": "sae1",
    "us-east-1": "use1",
    "us-east-2": "use2",
    "us-west-1": "usw1",
    "us-west-2": "usw2",
}

# Per instance type: `region:<zone numbers>` for every region of OFFERINGS_READ that offers it.
# fmt: off
_OFFERED: dict[str, str] = {
    "p4d.24xlarge": (
        "ap-northeast-1:14 ap-northeast-2:24 ap-south-1:123 ap-southeast-2:12 ca-central-1:12 "
        "eu-central-1:123 eu-north-1:3 eu-west-1:2 eu-west-2:23 sa-east-1:13 us-east-1:1246 "
        "us-east-2:123 us-west-2:1234"
    ),
    "p4de.24xlarge": (
        "ap-northeast-1:14 ap-southeast-1:23 eu-central-1:12 il-central-1:123 us-east-1:46 "
        "us-west-2:123"
    ),
    "p5.48xlarge": (
        "ap-northeast-1:14 ap-northeast-2:1 ap-south-1:123 ap-southeast-2:123 "
        "ap-southeast-3:1 ca-central-1:4 eu-north-1:123 eu-west-2:123 sa-east-1:3 "
        "us-east-1:123456 us-east-2:123 us-west-1:13 us-west-2:1234"
    ),
    "p5e.48xlarge": (
        "ap-southeast-2:3 ap-southeast-3:13 eu-north-1:1 eu-west-2:2 sa-east-1:23 "
        "us-east-2:123 us-west-2:3"
    ),
    "p5en.48xlarge": (
        "ap-northeast-1:4 ap-northeast-2:1 ap-south-1:13 ap-southeast-3:23 eu-north-1:13 "
        "eu-south-2:12 me-central-1:13 us-east-1:26 us-east-2:123 us-west-1:3 us-west-2:234"
    ),
    "p6-b200.48xlarge": "ap-south-1:2 us-east-1:6 us-east-2:123 us-west-2:124",
    # Only in the Dallas Local Zone of us-east-1, opted in (EC2 User Guide, "Launch instances
    # using Capacity Blocks"): no zone moto read offers it, so a stack lists its zone under
    # aws.zone_offerings.
    "p6e-gb200.36xlarge": "",
    "p3dn.24xlarge": "ap-northeast-1:4 eu-west-1:12 us-east-1:16 us-west-2:13",
    "g5.xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g5.2xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g5.4xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g5.8xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g5.12xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g5.16xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g5.24xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g5.48xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:12 "
        "ap-southeast-3:13 ca-central-1:12 eu-central-1:123 eu-north-1:23 eu-south-2:123 "
        "eu-west-1:123 eu-west-2:23 eu-west-3:123 il-central-1:123 me-central-1:12 "
        "sa-east-1:12 us-east-1:12456 us-east-2:123 us-west-2:123"
    ),
    "g6.xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6.2xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6.4xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6.8xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6.12xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6.16xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6.24xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6.48xlarge": (
        "ap-northeast-1:14 ap-northeast-2:134 ap-south-1:13 ap-southeast-2:123 "
        "ca-central-1:124 eu-central-1:123 eu-central-2:23 eu-north-1:12 eu-south-2:123 "
        "eu-west-2:123 eu-west-3:23 me-central-1:12 sa-east-1:12 us-east-1:12456 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g4dn.xlarge": (
        "af-south-1:23 ap-northeast-1:124 ap-northeast-2:123 ap-northeast-3:12 ap-south-1:123 "
        "ap-southeast-1:123 ap-southeast-2:123 ca-central-1:12 eu-central-1:123 "
        "eu-north-1:123 eu-south-1:23 eu-west-1:123 eu-west-2:123 eu-west-3:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:123"
    ),
    "g4dn.2xlarge": (
        "af-south-1:23 ap-northeast-1:124 ap-northeast-2:123 ap-northeast-3:12 ap-south-1:123 "
        "ap-southeast-1:123 ap-southeast-2:123 ca-central-1:12 eu-central-1:123 "
        "eu-north-1:123 eu-south-1:23 eu-west-1:123 eu-west-2:123 eu-west-3:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:123"
    ),
    "g4dn.4xlarge": (
        "af-south-1:23 ap-northeast-1:124 ap-northeast-2:123 ap-northeast-3:12 ap-south-1:123 "
        "ap-southeast-1:123 ap-southeast-2:123 ca-central-1:12 eu-central-1:123 "
        "eu-north-1:123 eu-south-1:23 eu-west-1:123 eu-west-2:123 eu-west-3:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:123"
    ),
    "g4dn.8xlarge": (
        "af-south-1:23 ap-northeast-1:124 ap-northeast-2:123 ap-northeast-3:12 ap-south-1:123 "
        "ap-southeast-1:123 ap-southeast-2:123 ca-central-1:12 eu-central-1:123 "
        "eu-north-1:123 eu-south-1:23 eu-west-1:123 eu-west-2:123 eu-west-3:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:123"
    ),
    "g4dn.12xlarge": (
        "af-south-1:23 ap-northeast-1:124 ap-northeast-2:123 ap-northeast-3:12 ap-south-1:123 "
        "ap-southeast-1:123 ap-southeast-2:123 ca-central-1:12 eu-central-1:123 "
        "eu-north-1:123 eu-south-1:23 eu-west-1:123 eu-west-2:123 eu-west-3:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:123"
    ),
    "g4dn.16xlarge": (
        "af-south-1:23 ap-northeast-1:124 ap-northeast-2:123 ap-northeast-3:12 ap-south-1:123 "
        "ap-southeast-1:123 ap-southeast-2:123 ca-central-1:12 eu-central-1:123 "
        "eu-north-1:123 eu-south-1:23 eu-west-1:123 eu-west-2:123 eu-west-3:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:123"
    ),
    "g4dn.metal": (
        "af-south-1:23 ap-northeast-1:124 ap-northeast-2:123 ap-northeast-3:12 ap-south-1:123 "
        "ap-southeast-1:123 ap-southeast-2:123 ca-central-1:12 eu-central-1:123 "
        "eu-north-1:123 eu-south-1:23 eu-west-1:123 eu-west-2:123 eu-west-3:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:123"
    ),
    "g6e.xlarge": (
        "ap-northeast-1:14 ap-northeast-2:12 ap-northeast-3:12 ap-south-1:13 ap-south-2:12 "
        "eu-central-1:123 eu-north-1:12 eu-south-2:23 me-central-1:12 us-east-1:1246 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6e.2xlarge": (
        "ap-northeast-1:14 ap-northeast-2:12 ap-northeast-3:12 ap-south-1:13 ap-south-2:12 "
        "eu-central-1:123 eu-north-1:12 eu-south-2:23 me-central-1:12 us-east-1:1246 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6e.12xlarge": (
        "ap-northeast-1:14 ap-northeast-2:12 ap-northeast-3:12 ap-south-1:13 ap-south-2:12 "
        "eu-central-1:123 eu-north-1:12 eu-south-2:23 me-central-1:12 us-east-1:1246 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6e.24xlarge": (
        "ap-northeast-1:14 ap-northeast-2:12 ap-northeast-3:12 ap-south-1:13 ap-south-2:12 "
        "eu-central-1:123 eu-north-1:12 eu-south-2:23 me-central-1:12 us-east-1:1246 "
        "us-east-2:123 us-west-2:1234"
    ),
    "g6e.48xlarge": (
        "ap-northeast-1:14 ap-northeast-2:12 ap-northeast-3:12 ap-south-1:13 ap-south-2:12 "
        "eu-central-1:123 eu-north-1:12 eu-south-2:23 me-central-1:12 us-east-1:1246 "
        "us-east-2:123 us-west-2:1234"
    ),
    "m7i.xlarge": (
        "af-south-1:123 ap-northeast-1:124 ap-northeast-2:1234 ap-northeast-3:123 "
        "ap-south-1:123 ap-south-2:123 ap-southeast-1:123 ap-southeast-2:123 "
        "ap-southeast-3:123 ap-southeast-4:123 ca-central-1:124 eu-central-1:123 "
        "eu-central-2:123 eu-north-1:123 eu-south-1:123 eu-south-2:123 eu-west-1:123 "
        "eu-west-2:123 eu-west-3:123 il-central-1:123 me-central-1:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:1234"
    ),
    "m7i.2xlarge": (
        "af-south-1:123 ap-northeast-1:124 ap-northeast-2:1234 ap-northeast-3:123 "
        "ap-south-1:123 ap-south-2:123 ap-southeast-1:123 ap-southeast-2:123 "
        "ap-southeast-3:123 ap-southeast-4:123 ca-central-1:124 eu-central-1:123 "
        "eu-central-2:123 eu-north-1:123 eu-south-1:123 eu-south-2:123 eu-west-1:123 "
        "eu-west-2:123 eu-west-3:123 il-central-1:123 me-central-1:123 sa-east-1:123 "
        "us-east-1:12456 us-east-2:123 us-west-1:13 us-west-2:1234"
    ),
    "m6i.xlarge": (
        "af-south-1:123 ap-northeast-1:124 ap-northeast-2:1234 ap-northeast-3:123 "
        "ap-south-1:123 ap-south-2:123 ap-southeast-1:123 ap-southeast-2:123 "
        "ap-southeast-3:123 ca-central-1:124 eu-central-1:123 eu-central-2:123 eu-north-1:123 "
        "eu-south-1:123 eu-west-1:123 eu-west-2:123 eu-west-3:123 il-central-1:123 "
        "me-central-1:123 sa-east-1:123 us-east-1:12456 us-east-2:123 us-west-1:13 "
        "us-west-2:1234"
    ),
}
# fmt: on


def offered_zones(name: str) -> dict[str, tuple[str, ...]]:
    """The zone IDs that offer `name`, per region of OFFERINGS_READ that offers it."""
    found = {}
    for entry in _OFFERED[name].split():
        region, numbers = entry.split(":")
        found[region] = tuple(f"{ZONE_ID_PREFIX[region]}-az{n}" for n in numbers)
    return found
