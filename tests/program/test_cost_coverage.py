"""The cost estimate of every AWS plan, walked line by line and resource by resource (issue 38
§6): every priced line is at the rate of the stack's own region, and every resource the plan
declares that AWS bills has a line (priced, or not priced with what is missing) or is listed
as billed by use. A Frankfurt stack once showed NAT gateways, FSx and system nodes at us-east-1
rates and left its root volumes out.

The stack's region is read from the plan (its subnets' zones), not from the report. Which
resource types AWS bills, and which it does not, is written here from each service's pricing
page, so that a type the platform starts to declare fails until it is classified.

Rates, written as literals (model/catalog_prices.py records them with their dates):
- EBS gp3 (AmazonEC2 usage types EBS:VolumeUsage.gp3, EBS:VolumeP-Throughput.gp3): us-east-1
  $0.08 per GB-month (AWS Price List API, 2026-08-20) and $0.04 per MB/s-month above 125 MB/s
  (EBS pricing page, N. Virginia); eu-central-1 $0.0952 (AWS Price List API queried for
  eu-central-1, 2026-08-26) and $0.0476 (its EUC1-EBS:VolumeP-Throughput.gp3, read 2026-12-04).
- NAT gateway hour: eu-central-1 $0.052 (AmazonEC2 EUC1-NatGateway-Hours, 2026-09-22).
- Interface endpoint per zone-hour: eu-central-1 $0.012 (AmazonVPC EUC1-VpcEndpoint-Hours).
- Public IPv4 address: $0.005 an hour in every region (AWS Public IPv4 Address Charge, 2024).
- g6.2xlarge on demand in eu-central-1: $1.22249/h (instances.vantage.sh data of 2026-01-21).
- m7i.xlarge on demand in eu-central-1: $0.2415/h (instances.vantage.sh data of 2026-05-13, as
  jpetrucciani/awl `data/ec2_instance_types.json` carries it at commit faac1318a02d).
"""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest

from model.cost import cost_report
from plan.cost_change import format_cost_change
from plan.model import Plan
from tests.conftest import stack_config
from tests.helpers.leaves import walk_dicts
from tests.helpers.varied_stacks import every_aws_plan, frankfurt_plan

# What AWS bills for a resource type the platform declares (the service's pricing page), and
# the estimate's key for it: the key of its line, or the prefix of the lines of its kind.
BILLED_AS_LINE = {
    "aws:eks/cluster:Cluster": "cluster",  # Amazon EKS pricing: per cluster-hour
    "aws:ec2/natGateway:NatGateway": "network.nat_gateways",  # Amazon VPC pricing
    "aws:ec2/eip:Eip": "network.public_ipv4",  # public IPv4 address charge, per hour
    "aws:fsx/lustreFileSystem:LustreFileSystem": "storage.fsx",  # FSx pricing, per GB-month
}
# Billed by use (GB stored or ingested, requests), or at a rate not recorded (a Transit Gateway
# attachment's hours): the estimate lists them as not priced.
BILLED_BY_USE = {
    "aws:ec2transitgateway/vpcAttachment:VpcAttachment",
    "aws:cloudwatch/logGroup:LogGroup",
    "aws:ec2/flowLog:FlowLog",
    "aws:s3/bucket:Bucket",
    "aws:ecr/repository:Repository",
    "aws:kms/key:Key",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
}
# Checked on their own below: node groups (instances), launch templates (their root volumes),
# VPC endpoints (interface ones are billed per zone-hour, the S3 gateway one is free).
BILLED_OWN_TEST = {
    "aws:eks/nodeGroup:NodeGroup",
    "aws:ec2/launchTemplate:LaunchTemplate",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
}
# No charge of their own (Amazon VPC pricing: VPCs, subnets, route tables, gateways' attachment,
# security groups; IAM; EKS access entries, add-on objects and Pod Identity; KMS aliases; S3
# bucket settings; Auto Scaling tags; placement groups).
NOT_BILLED = {
    "aws:autoscaling/tag:Tag",
    # Opting in to a Local Zone group runs nothing: what then runs there has its own line.
    "aws:ec2/availabilityZoneGroup:AvailabilityZoneGroup",
    "aws:ec2/route:Route",
    "aws:ec2/vpnGatewayAttachment:VpnGatewayAttachment",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/placementGroup:PlacementGroup",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/vpc:Vpc",
    "aws:eks/accessEntry:AccessEntry",
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
    "aws:eks/addon:Addon",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation",
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
    "aws:iam/role:Role",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:kms/alias:Alias",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketVersioning:BucketVersioning",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
}
# gp3 by region: storage per GB-month, throughput per MB/s-month above gp3's free 125 MB/s.
GP3 = {"us-east-1": (0.08, 0.04), "eu-central-1": (0.0952, 0.0476)}
PLANS = every_aws_plan()
IDS = [name for name, _ in PLANS]


def region_of(plan: Plan) -> str:
    """The stack's region, as its AWS provider is given it (a stack in an existing VPC declares
    no subnet whose zone would say it)."""
    (region,) = {p.inputs["region"] for p in plan.of_type("pulumi:providers:aws")}
    return region


def lines_of(plan: Plan) -> dict[str, dict]:
    cost = plan.outputs["cost"]
    unpriced = {x["key"]: {**x, "region": cost["region"]} for x in cost["unpriced"]}
    return {**{x["key"]: x for x in cost["lines"]}, **unpriced}


@pytest.mark.parametrize(("stack", "plan"), PLANS, ids=IDS)
def test_every_priced_line_is_at_the_stack_regions_rate(stack, plan):
    region = region_of(plan)
    cost = plan.outputs["cost"]
    assert cost["region"] == region
    for line in cost["lines"]:
        # The basis names the region the rate is from: the stack's, or one rate everywhere,
        # or the stack's own configured Capacity Block rate; and the line's region key agrees.
        said = (f", {region}, ", ", all regions, ", "cost.capacity_block_hourly_usd")
        assert any(x in line["basis"] for x in said), (stack, line["basis"])
        assert "us-east-1" not in line["basis"] or region == "us-east-1", (stack, line["basis"])
        assert line.get("region") == region, (stack, line["key"], line["basis"])
    for line in cost["unpriced"]:
        reasons = (f"no {region} rate of", f"no published {region} Capacity Block rate")
        assert any(x in line["why"] for x in reasons) or "not sold on demand" in line["why"]


@pytest.mark.parametrize(("stack", "plan"), PLANS, ids=IDS)
def test_every_billed_resource_the_plan_declares_has_a_line_or_a_reason(stack, plan):
    declared = {r.type for r in plan.resources if r.type.startswith("aws:")}
    known = set(BILLED_AS_LINE) | BILLED_BY_USE | BILLED_OWN_TEST | NOT_BILLED
    assert declared <= known, f"classify, billed or not: {sorted(declared - known)}"
    lines = lines_of(plan)
    for kind in declared & set(BILLED_AS_LINE):
        assert BILLED_AS_LINE[kind] in lines, (stack, kind)
    listed = {x["resource_type"] for x in plan.outputs["cost"]["not_priced"]}
    for kind in declared & BILLED_BY_USE:
        assert kind in listed, (stack, kind)
    # An interface endpoint is billed in each zone it is in (AWS PrivateLink pricing).
    interface = [
        r
        for r in plan.of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
        if r.inputs["vpcEndpointType"] == "Interface"
    ]
    if interface:
        zones = sum(len(r.inputs["subnetIds"]) for r in interface)
        assert f"x {zones // len(interface)} zones" in lines["network.vpc_endpoints"]["item"]
    # Load balancers bill by the hour: none is declared, by a Service or a chart's values.
    for resource in plan.resources:
        for found in walk_dicts(resource.inputs):
            assert found.get("type") != "LoadBalancer", (stack, resource.name)


@pytest.mark.parametrize(("stack", "plan"), PLANS, ids=IDS)
def test_every_node_group_has_its_instances_and_root_volumes_priced_per_volume(stack, plan):
    region = region_of(plan)
    per_gb, per_mbps = GP3.get(region, (None, None))
    lines = lines_of(plan)
    env = plan.stack
    templates = {t.name: t for t in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")}
    for group in plan.of_type("aws:eks/nodeGroup:NodeGroup"):
        name = group.name.removeprefix(f"{env}-")
        if name.endswith("-canary"):
            # A canary group runs a node only while a GPU-stack change rolls (model/cost.py
            # canary_line): nothing a month at any size, its node priced per
            # roll in the basis (its root volume lives as long as that node: cents a roll).
            canary = lines[f"gpu_node_groups.{name.removesuffix('-canary')}.canary"]
            assert canary["monthly_max"] == 0 and "per roll" in canary["basis"], (stack, name)
            continue
        key = "system_nodes" if name == "system" else f"gpu_node_groups.{name}"
        assert key in lines, (stack, key)
        volume = lines[f"{key}.root_volumes"]
        (mapping,) = templates[group.name].inputs["blockDeviceMappings"]
        ebs = mapping["ebs"]
        assert ebs["volumeType"] == "gp3" and ebs["iops"] == 3000  # gp3's free IOPS baseline
        assert f"({ebs['volumeSize']} GiB gp3 each)" in volume["item"]
        if per_gb is None:
            assert volume.get("monthly_max") is None
            continue
        size = group.inputs["scalingConfig"]["maxSize"]
        monthly = ebs["volumeSize"] * per_gb + (ebs["throughput"] - 125) * per_mbps
        assert volume["monthly_max"] == pytest.approx(size * monthly, abs=0.01), (stack, key)


def gp3_claims(plan: Plan) -> list[int]:
    """The GiB of every volume a chart's values claim on the `gp3` StorageClass."""
    found = []
    for release in plan.of_type("kubernetes:helm.sh/v3:Release"):
        for spec in walk_dicts(release.inputs.get("values", {})):
            if spec.get("storageClassName") == "gp3":
                found.append(spec["resources"]["requests"]["storage"])
            elif spec.get("storageClass") == "gp3":
                found.append(spec["size"])
    return [int(size.removesuffix("Gi")) for size in found]


@pytest.mark.parametrize(("stack", "plan"), PLANS, ids=IDS)
def test_every_ebs_volume_a_chart_claims_is_priced(stack, plan):
    claims = gp3_claims(plan)
    assert claims, stack  # Prometheus and the Pushgateway claim one each on every AWS stack
    volumes = {k: x for k, x in lines_of(plan).items() if k.startswith("volumes.")}
    assert len(volumes) == len(claims), (stack, claims, sorted(volumes))
    per_gb, _ = GP3[region_of(plan)]
    # Baseline gp3 (the StorageClass sets no IOPS or throughput): storage only.
    assert sum(x["monthly_max"] for x in volumes.values()) == pytest.approx(
        sum(claims) * per_gb, abs=0.01 * len(claims)
    )


# ------------------------------------------------------------------ Frankfurt, by hand


def test_frankfurt_is_priced_at_frankfurt_rates_and_names_what_it_has_no_rate_of():
    """The issue's case, worked by hand from the eu-central-1 rates above (730 h a month)."""
    cost = frankfurt_plan().outputs["cost"]
    lines = {x["key"]: x for x in cost["lines"]}
    # 2 NAT gateways (per_zone, 2 zones) x $0.052 x 730 = 75.92; their 2 addresses x $0.005.
    assert lines["network.nat_gateways"]["monthly_max"] == 75.92
    assert lines["network.public_ipv4"]["monthly_max"] == 7.30
    # 3 interface endpoints (ecr.api, ecr.dkr, sts) x 2 zones x $0.012 x 730 = 52.56.
    assert lines["network.vpc_endpoints"]["monthly_max"] == 52.56
    # g6.2xlarge spot at the default 60% off: 4 x 1.22249 x 0.4 = 1.955984/h.
    assert lines["gpu_node_groups.l4"]["hourly_max"] == 1.956
    # Root volumes: 100 GiB x 0.0952 + 125 MB/s x 0.0476 = 9.52 + 5.95 = 15.47 a node; 4 nodes.
    assert lines["gpu_node_groups.l4.root_volumes"]["monthly_max"] == 61.88
    # System nodes' 50 GiB: 4.76 + 5.95 = 10.71 a node; 2 to 4 nodes.
    root = lines["system_nodes.root_volumes"]
    assert (root["monthly_min"], root["monthly_max"]) == (21.42, 42.84)
    # System nodes, m7i.xlarge at $0.2415: 2 x 0.2415 x 730 = 352.59 .. 4 nodes 705.18.
    system = lines["system_nodes"]
    assert (system["monthly_min"], system["monthly_max"]) == (352.59, 705.18)
    assert "on-demand $0.2415/h, eu-central-1, 2026-05-13" in system["basis"]
    # No eu-central-1 rate of FSx for Lustre is recorded: not priced, named, and out of the
    # totals, never at a us-east-1 rate.
    unpriced = {x["key"]: x["why"] for x in cost["unpriced"]}
    assert sorted(unpriced) == ["storage.fsx"]
    assert "no eu-central-1 rate of FSx for Lustre SCRATCH_2 at 200" in unpriced["storage.fsx"]
    assert cost["region"] == "eu-central-1"


# -------------------------------------------------------------- the cost of a change

PRICED_ON = date(2026, 11, 30)


def test_a_root_volume_change_is_in_the_cost_of_the_change():
    """Shipped prod's on-demand group (8 x p5.48xlarge at max) from 200 to 300 GiB root
    volumes: 8 x 100 GiB x $0.08 = +$64.00 a month at max size, none at min or desired (0)."""
    before = stack_config("prod")
    groups = [g.model_copy(update={"root_volume_gib": 300}) for g in before.gpu_node_groups]
    after = before.model_copy(update={"gpu_node_groups": groups})
    text = "\n".join(
        format_cost_change(cost_report(before, PRICED_ON), cost_report(after, PRICED_ON))
    )
    assert (
        "  root volumes of GPU node group h100-ondemand (300 GiB gp3 each): "
        "$0.00 / $0.00 / $168.00 -> $0.00 / $0.00 / $232.00\n"
        "      +$64.00/month at max size"
    ) in text
    # The block group runs 4 nodes from day one: 4 x 100 x 0.08 = +$32.00 at desired and max.
    assert "+$32.00/month at desired size; +$32.00/month at max size" in text
    counted = Counter(line.split(":")[0] for line in text.splitlines() if "root volumes" in line)
    assert len(counted) == 2
