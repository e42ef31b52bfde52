"""What a reviewer reads: `--detail` (user data decoded, secrets masked) and the exposure
summary every plan ends with, read from what the program declared."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from plan.cli import main
from plan.model import Plan, PlannedResource
from plan.review import decode_user_data, format_detail, format_exposure
from tests.conftest import find, planned
from tests.helpers.network_stacks import existing_vpc_plan, frankfurt_plan

RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def with_resources(plan: Plan, resources) -> Plan:
    return Plan(plan.stack, plan.project, list(resources), plan.outputs)


def test_shipped_prod_exposure():
    # stacks/Pulumi.prod.yaml: endpoint_public_access false, api_access_cidrs [10.8.0.0/24]
    # routed through transit gateway tgw-0a1b2c3d4e5f60718, vpc_cidr 10.30.0.0/16, three zones
    # with a NAT gateway each; the EKS cluster, its secrets key, the file system and its key
    # protected (production).
    assert format_exposure(planned("prod")) == (
        "Exposure:\n"
        "  API endpoint of prod-eks: private only (no public endpoint)\n"
        "    admitted through the cluster security group: 10.8.0.0/24 on tcp 443 "
        "(prod-api-access-0)\n"
        "    `pulumi up` from 10.8.0.0/24: through transit gateway tgw-0a1b2c3d4e5f60718 "
        "(route prod-private-us-east-1a-to-10-8-0-0-24, to 10.8.0.0/24)\n"
        "  Internet gateways: prod-igw\n"
        "  NAT gateways: prod-nat-us-east-1a, prod-nat-us-east-1b, prod-nat-us-east-1c\n"
        "  Subnets tagged for internet-facing load balancers (kubernetes.io/role/elb): "
        "prod-public-us-east-1a, prod-public-us-east-1b, prod-public-us-east-1c\n"
        "  Security-group rules open beyond the VPC (10.30.0.0/16):\n"
        "    in 10.8.0.0/24 on tcp 443 (prod-api-access-0)\n"
        "  Public buckets: none\n"
        "  Protected resources: aws:eks/cluster:Cluster prod-eks, "
        "aws:fsx/lustreFileSystem:LustreFileSystem prod-fsx, aws:kms/key:Key prod-eks-secrets, "
        "aws:kms/key:Key prod-fsx-key"
    )


def test_shipped_dev_exposure_names_the_public_endpoint_and_its_cidr():
    # stacks/Pulumi.dev.yaml: a public endpoint limited to 203.0.113.0/24, one NAT gateway,
    # an S3 data bucket behind a full public access block, nothing protected outside production.
    text = format_exposure(planned("dev"))
    assert "  API endpoint of dev-eks: public to 203.0.113.0/24; private access on\n" in text
    assert "    `pulumi up` reaches it over the internet from 203.0.113.0/24\n" in text
    assert "  NAT gateways: dev-nat-us-east-1a\n" in text
    assert "  Security-group rules open beyond the VPC (10.10.0.0/16): none\n" in text
    assert "  Public buckets: none\n" in text
    assert text.endswith("  Protected resources: none")


def test_shipped_onprem_exposure_has_no_aws_network():
    text = format_exposure(planned("onprem"))
    assert "  API endpoint: none declared here (an existing cluster's own)\n" in text
    assert "  Internet gateways: none\n" in text
    assert "Security-group rules" not in text


def test_the_new_users_frankfurt_stack_says_how_the_office_reaches_the_private_endpoint():
    # tests/helpers/network_stacks.py: a private endpoint, api_access_cidrs [198.18.0.0/15],
    # the office range routed through transit gateway tgw-0123456789abcdef0.
    text = format_exposure(frankfurt_plan())
    assert (
        "  API endpoint of frankfurt-eks: private only (no public endpoint)\n"
        "    admitted through the cluster security group: 198.18.0.0/15 on tcp 443 "
        "(frankfurt-api-access-0)\n"
        "    `pulumi up` from 198.18.0.0/15: through transit gateway tgw-0123456789abcdef0 "
        "(route frankfurt-private-eu-central-1a-to-198-18-0-0-15, to 198.18.0.0/15)\n"
    ) in text


def test_a_private_endpoint_no_route_reaches_is_said_unreachable():
    # The config refuses such a stack (model/config: api_access_cidrs); the summary, read from
    # what is declared, says so too when a route is missing from the plan.
    plan = frankfurt_plan()
    text = format_exposure(
        with_resources(plan, [r for r in plan.resources if r.type != "aws:ec2/route:Route"])
    )
    assert (
        "    `pulumi up` from 198.18.0.0/15: NO ROUTE into the VPC: unreachable from there\n"
    ) in text


def test_an_existing_vpc_plan_says_why_it_cannot_tell_and_what_its_subnets_need():
    text = format_exposure(existing_vpc_plan())
    assert (
        "    `pulumi up` reaches it: cannot tell here. The VPC is an existing one "
        "(network.existing_vpc): its route tables are not declared, so the plan cannot see "
        "whether 10.8.0.0/24 is routed to it."
    ) in text
    # AWS Load Balancer Controller, "Subnet auto discovery": private subnets for internal load
    # balancers carry kubernetes.io/role/internal-elb = 1; the cluster tag is
    # kubernetes.io/cluster/${cluster-name} = owned or shared.
    assert (
        "  Existing subnets of byovpc-eks (not declared here, not checked): "
        "subnet-0aaaaaaaaaaaaaaa1, subnet-0bbbbbbbbbbbbbbb2, subnet-0ccccccccccccccc3. Before "
        "`pulumi up` each needs the tags kubernetes.io/role/internal-elb=1 and "
        "kubernetes.io/cluster/gpu-platform-byovpc=shared"
    ) in text
    assert "egress through a NAT gateway or VPC endpoints for ECR (api, dkr), S3 and STS" in text


def test_an_ingress_rule_open_to_the_internet_is_listed():
    plan = planned("dev")
    rule = find(plan, RULE, "dev-fsx-in-fsx-988")
    inputs = {k: v for k, v in rule.inputs.items() if k != "referencedSecurityGroupId"}
    inputs.update(cidrIpv4="0.0.0.0/0", ipProtocol="tcp", fromPort=22, toPort=22)
    opened = dataclasses.replace(
        rule, name="dev-ssh-anywhere", urn=rule.urn + "-ssh", inputs=inputs
    )
    text = format_exposure(with_resources(plan, [*plan.resources, opened]))
    assert (
        "  Security-group rules open beyond the VPC (10.10.0.0/16):\n"
        "    in 0.0.0.0/0 on tcp 22 (dev-ssh-anywhere)\n"
    ) in text


def test_a_bucket_without_a_full_public_access_block_is_public():
    plan = planned("dev")
    block = find(plan, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "dev-fsx-data")
    without = [r for r in plan.resources if r is not block]
    assert "  Public buckets: dev-fsx-data (no public access block)\n" in format_exposure(
        with_resources(plan, without)
    )
    loose = dataclasses.replace(block, inputs={**block.inputs, "blockPublicPolicy": False})
    text = format_exposure(with_resources(plan, [*without, loose]))
    assert "  Public buckets: dev-fsx-data (blockPublicPolicy not true)\n" in text


def test_an_endpoint_left_to_eks_defaults_is_public_to_everyone():
    # EKS API reference, VpcConfigRequest: endpointPublicAccess defaults to true,
    # endpointPrivateAccess to false, publicAccessCidrs to 0.0.0.0/0.
    plan = planned("prod")
    eks = find(plan, "aws:eks/cluster:Cluster", "prod-eks")
    bare = dataclasses.replace(eks, inputs={**eks.inputs, "vpcConfig": {"subnetIds": []}})
    resources = [bare if r is eks else r for r in plan.resources]
    text = format_exposure(with_resources(plan, resources))
    assert "  API endpoint of prod-eks: public to 0.0.0.0/0; private access off\n" in text


MIME = (
    "MIME-Version: 1.0\n"
    'Content-Type: multipart/mixed; boundary="B"\n'
    "\n"
    "--B\n"
    "Content-Type: application/node.eks.aws\n"
    "\n"
    "kind: NodeConfig\n"
    "--B\n"
    "Content-Type: text/x-shellscript\n"
    "\n"
    "#!/bin/bash\n"
    "echo hi\n"
    "--B--\n"
)


def test_user_data_is_decoded_part_by_part():
    encoded = base64.b64encode(MIME.encode()).decode()
    assert decode_user_data(encoded) == (
        "--- part: application/node.eks.aws\n"
        "kind: NodeConfig\n"
        "--- part: text/x-shellscript\n"
        "#!/bin/bash\n"
        "echo hi"
    )
    assert decode_user_data(base64.b64encode(b"#!/bin/bash\n").decode()) == "#!/bin/bash\n"
    assert decode_user_data("not base64!") == "not base64!"


def test_shipped_prod_detail_shows_the_nodeadm_config_in_clear():
    text = format_detail(planned("prod"))
    assert "aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand\n" in text
    # AL2023 nodeadm reads its NodeConfig from a MIME part of this content type (EKS User Guide,
    # "Amazon EC2 user data" for AL2023 nodes).
    assert "    --- part: application/node.eks.aws\n" in text
    assert "          strategy: RAID0\n" in text
    assert "TUlNRS1WZXJzaW9u" not in text  # base64 of "MIME-Version"


def test_detail_masks_secrets_and_secret_named_keys():
    resource = PlannedResource(
        urn="urn:pulumi:s::p::kubernetes:core/v1:Secret::grafana",
        type="kubernetes:core/v1:Secret",
        name="grafana",
        parent="",
        inputs={"env": {"GF_TOKEN": "t0k3n"}, "n": 1, "stringData": {"admin-user": "(secret)"}},
        dependencies=[],
        protect=False,
        custom=True,
    )
    text = format_detail(Plan("s", "p", [resource], {}))
    assert text.splitlines()[2:] == [
        "kubernetes:core/v1:Secret grafana",
        '  env.GF_TOKEN: "(secret)"',
        "  n: 1",
        '  stringData.admin-user: "(secret)"',
    ]


@pytest.mark.usefixtures("cli_on_session_plans")
def test_every_plan_ends_with_the_exposure_summary_and_detail_on_request(tmp_path, capsys):
    assert main(["dev", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\nExposure:\n  API endpoint of dev-eks: public to 203.0.113.0/24" in out
    assert "userData (decoded)" not in out
    assert main(["dev", "--out", str(tmp_path), "--detail"]) == 0
    assert "  userData (decoded):\n" in capsys.readouterr().out
