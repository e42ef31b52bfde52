"""Stacks of the network a new user brings (issue 38): a Frankfurt stack whose private API
endpoint the office reaches through a Transit Gateway, and the staging stack moved into an
existing VPC. Each planned once per test process."""

from __future__ import annotations

import functools

from plan.model import Plan
from tests.conftest import project_plan, stack_file_config
from tests.helpers.bad_stacks import ADMIN, NS

# The new user's stack: eu-central-1, a private endpoint, the office network 198.18.0.0/15
# routed to the VPC through the organisation's Transit Gateway; a NAT gateway per zone, FSx, a
# spot GPU group and the default system nodes. Every shipped AWS stack is in us-east-1, so a rate
# read from us-east-1 wherever the stack is passes all of them; it fails on this one.
OFFICE = "198.18.0.0/15"
TGW = "tgw-0123456789abcdef0"
FRANKFURT_STACK = "frankfurt"
FRANKFURT_CONFIG = {
    f"{NS}:aws": {"region": "eu-central-1", "zones": ["eu-central-1a", "eu-central-1b"]},
    f"{NS}:network": {
        "vpc_cidr": "10.40.0.0/16",
        "nat_gateways": "per_zone",
        "transit_gateway": {"id": TGW, "cidrs": [OFFICE]},
    },
    f"{NS}:cluster": {
        "endpoint_private_only": True,
        "admin_principal_arns": [ADMIN],
        "api_access_cidrs": [OFFICE],
    },
    f"{NS}:storage": {"fsx": {"storage_capacity_gib": 1200}},
    f"{NS}:gpu_node_groups": [
        {
            "name": "l4",
            "instance_types": ["g6.2xlarge"],
            "capacity": "spot",
            "root_volume_gib": 100,
            "scaling": {"min_size": 1, "max_size": 4},
        },
    ],
}


def frankfurt_without(key: str) -> dict:
    """The Frankfurt stack with one key of its network section left out."""
    config = {**FRANKFURT_CONFIG, f"{NS}:network": dict(FRANKFURT_CONFIG[f"{NS}:network"])}
    del config[f"{NS}:network"][key]
    return config


@functools.cache
def frankfurt_plan() -> Plan:
    return project_plan(FRANKFURT_STACK, {FRANKFURT_STACK: FRANKFURT_CONFIG})


# Staging (three zones, EFA group and Lustre in us-east-1c, flow logs, a private endpoint)
# in a VPC another team runs: its id and private subnets as `aws ec2 describe-subnets` shows
# them.
EXISTING_VPC = "vpc-0fedcba9876543210"
EXISTING_SUBNETS = {
    "us-east-1a": ("subnet-0aaaaaaaaaaaaaaa1", "10.60.0.0/18"),
    "us-east-1b": ("subnet-0bbbbbbbbbbbbbbb2", "10.60.64.0/18"),
    "us-east-1c": ("subnet-0ccccccccccccccc3", "10.60.128.0/18"),
}
# The VPC extends to the Atlanta Local Zone too (AWS Local Zones User Guide, "Available Local
# Zones"), where no group of the stack runs: its subnet must reach neither the cluster nor the
# system nodes.
EXISTING_LOCAL_ZONE = "us-east-1-atl-2a"
EXISTING_LOCAL_SUBNET = ("subnet-0ddddddddddddddd4", "10.60.192.0/20")
EXISTING_VPC_STACK = "byovpc"


def existing_vpc_config() -> dict:
    config = stack_file_config("staging")
    config[f"{NS}:aws"] = {**config[f"{NS}:aws"], "local_zones": [EXISTING_LOCAL_ZONE]}
    subnets = {**EXISTING_SUBNETS, EXISTING_LOCAL_ZONE: EXISTING_LOCAL_SUBNET}
    config[f"{NS}:network"] = {
        "flow_logs": True,
        "existing_vpc": {
            "id": EXISTING_VPC,
            "private_subnets": [
                {"id": subnet, "zone": zone, "cidr": cidr}
                for zone, (subnet, cidr) in subnets.items()
            ],
        },
    }
    return config


@functools.cache
def existing_vpc_plan() -> Plan:
    return project_plan(EXISTING_VPC_STACK, {EXISTING_VPC_STACK: existing_vpc_config()})
