"""AWS regions and the zone letters each offers, so a zone that does not exist in its region
fails here rather than at `pulumi up`.

Source: AWS "Regions and Zones" (docs.aws.amazon.com/global-infrastructure/latest/regions/
aws-availability-zones.html) and `aws ec2 describe-availability-zones --all-availability-zones`,
read 2026-11-30. Zone letters map to physical zones per account, and older accounts see letters
newer ones do not (us-east-1f, us-west-1a/b, ap-northeast-1b); the table lists every letter
some account can see. A region missing here is refused with its name: add a row, with its
letters, when a stack needs it. Local Zones, which are named, not lettered, have a table of
their own (LOCAL_ZONES).
"""

from __future__ import annotations

from dataclasses import dataclass

REGION_ZONES: dict[str, str] = {
    "us-east-1": "abcdef",
    "us-east-2": "abc",
    "us-west-1": "abc",
    "us-west-2": "abcd",
    "ca-central-1": "abd",
    "eu-west-1": "abc",
    "eu-west-2": "abc",
    "eu-west-3": "abc",
    "eu-central-1": "abc",
    "eu-central-2": "abc",
    "eu-north-1": "abc",
    "eu-south-1": "abc",
    "eu-south-2": "abc",
    "ap-northeast-1": "abcd",
    "ap-northeast-2": "abcd",
    "ap-northeast-3": "abc",
    "ap-south-1": "abc",
    "ap-south-2": "abc",
    "ap-southeast-1": "abc",
    "ap-southeast-2": "abc",
    "ap-southeast-3": "abc",
    "ap-southeast-4": "abc",
    "sa-east-1": "abc",
    "me-central-1": "abc",
    "il-central-1": "abc",
    "af-south-1": "abc",
    "us-gov-west-1": "abc",
    "us-gov-east-1": "abc",
}


@dataclass(frozen=True)
class LocalZone:
    """A Local Zone as AWS lists it: a zone of its own (a subnet's availability zone), in a zone
    group one opts in to, extending a parent Region from one of the Region's zones."""

    zone_id: str
    group: str  # the zone group (EC2 AvailabilityZone.groupName), what opting in names
    parent_region: str
    parent_zone_id: str  # an ID, not a name: zone names map to zones per account
    source: str


_AVAILABLE_LOCAL_ZONES = (
    'AWS Local Zones User Guide, "Available Local Zones" (docs.aws.amazon.com/local-zones/'
    "latest/ug/available-local-zones.html), North America table"
)

# Local Zones a stack may use, by zone name. Add a row, from the same table, when a stack needs
# another: a Local Zone missing here is refused with its name.
LOCAL_ZONES: dict[str, LocalZone] = {
    # "US East (Dallas) 2", Texas: where AWS sells P6e-GB200 UltraServer Capacity Blocks (EC2
    # User Guide, "Launch instances using Capacity Blocks").
    "us-east-1-dfw-2a": LocalZone(
        "use1-dfw2-az1", "us-east-1-dfw-2", "us-east-1", "use1-az4", _AVAILABLE_LOCAL_ZONES
    ),
    # "US East (Atlanta) 2", Georgia.
    "us-east-1-atl-2a": LocalZone(
        "use1-atl2-az1", "us-east-1-atl-2", "us-east-1", "use1-az5", _AVAILABLE_LOCAL_ZONES
    ),
}

# The partition of a region, by its name: botocore 1.43.11 data/partitions.json, each
# partition's regionRegex (aws-cn ^cn-, aws-us-gov ^us-gov-, aws-iso ^us-iso-, aws-iso-b
# ^us-isob-, aws-iso-e ^eu-isoe-, aws-iso-f ^us-isof-, aws-eusc ^eusc-); every other region is
# in `aws`. The partition is the second field of every ARN (arn:<partition>:...).
PARTITION_PREFIXES: dict[str, str] = {
    "cn-": "aws-cn",
    "us-gov-": "aws-us-gov",
    "us-iso-": "aws-iso",
    "us-isob-": "aws-iso-b",
    "eu-isoe-": "aws-iso-e",
    "us-isof-": "aws-iso-f",
    "eusc-": "aws-eusc",
}
# The one partition the program builds ARNs for (arn:aws:...: managed policies, EKS access
# policies, key policies, the deploy policy).
SUPPORTED_PARTITION = "aws"


def partition(region: str) -> str:
    return next((p for prefix, p in PARTITION_PREFIXES.items() if region.startswith(prefix)), "aws")
