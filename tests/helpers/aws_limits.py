"""Stack files that break a limit of AWS, EKS or Kubernetes, each with the key path, the value and
the limit in words the plan must name. Each group of cases names its source, so a check loosened
in the config model fails in tests/model/test_bad_aws_stacks.py; tests/model/test_bad_stacks.py
counts them with its own."""

from __future__ import annotations

from tests.helpers.bad_stacks import AWS, GROUP, NS, aws, case, existing, group, tags
from tests.helpers.network_stacks import frankfurt_without

TGW_ID = "tgw-0123456789abcdef0"


def byo_vpc(*subnets: tuple[str, str]) -> dict:
    """A network section naming an existing VPC with these (zone, cidr) private subnets."""
    return {
        "existing_vpc": {
            "id": "vpc-0fedcba9876543210",
            "private_subnets": [
                {"id": f"subnet-0{i:016x}", "zone": zone, "cidr": cidr}
                for i, (zone, cidr) in enumerate(subnets)
            ],
        }
    }


BYO_VPC = byo_vpc(("us-east-1a", "10.60.0.0/18"), ("us-east-1b", "10.60.64.0/18"))
DALLAS = "us-east-1-dfw-2a"


def local_zones(names: list[str]) -> dict:
    """A minimal AWS stack that lists `names` under aws.local_zones."""
    return tags({"local_zones": names})


AWS_LIMITS = [
    # Amazon VPC user guide, "VPC CIDR blocks": a VPC is /16 to /28.
    case(
        aws(network={"vpc_cidr": "10.0.0.0/8"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/8",
        "AWS accepts a VPC from /16 to /28",
        "vpc-too-big",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.0/29"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/29",
        "AWS accepts a VPC from /16 to /28",
        "vpc-too-small",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.0/26"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/26",
        "use a /24 or larger VPC",
        "vpc-too-small-to-carve",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.0/24"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/26",
        "usable addresses",
        "vpc-too-small-for-nodes",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.1/16"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.1/16",
        "no bits set after the prefix",
        "vpc-host-bits",
    ),
    # "Subnet CIDR blocks": a subnet is /16 to /28 too.
    case(
        aws(network={"private_subnet_cidrs": ["10.0.0.0/29", "10.0.1.0/24"]}),
        "gpu-platform:network.private_subnet_cidrs[0]",
        "10.0.0.0/29",
        "AWS accepts subnets from /16 to /28",
        "subnet-too-small",
    ),
    case(
        aws(network={"private_subnet_cidrs": ["10.9.0.0/24", "10.0.1.0/24"]}),
        "gpu-platform:network.private_subnet_cidrs[0]",
        "10.9.0.0/24",
        "outside vpc_cidr 10.0.0.0/16",
        "subnet-outside-vpc",
    ),
    # EKS API reference, KubernetesNetworkConfigRequest: private ranges, /12 to /24, not the VPC.
    case(
        aws(cluster={"service_ipv4_cidr": "100.64.0.0/16"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "100.64.0.0/16",
        "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16",
        "service-not-private",
    ),
    case(
        aws(cluster={"service_ipv4_cidr": "10.0.0.0/8"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "10.0.0.0/8",
        "from /12 to /24",
        "service-too-big",
    ),
    case(
        aws(cluster={"service_ipv4_cidr": "172.20.0.0/25"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "172.20.0.0/25",
        "from /12 to /24",
        "service-too-small",
    ),
    case(
        aws(cluster={"service_ipv4_cidr": "10.0.128.0/20"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "10.0.128.0/20",
        "overlaps network.vpc_cidr 10.0.0.0/16",
        "service-in-vpc",
    ),
    # EKS service quotas: 40 public endpoint CIDR ranges per cluster, not adjustable.
    case(
        aws(cluster={"public_access_cidrs": [f"198.51.100.{i}/32" for i in range(41)]}),
        "gpu-platform:cluster.public_access_cidrs",
        "198.51.100.40/32",
        "at most 40 items",
        "too-many-public-cidrs",
    ),
    # Regions and their zones (AWS "Regions and Zones").
    case(
        {f"{NS}:aws": {"region": "us-est-1", "zones": ["us-est-1a", "us-est-1b"]}},
        "gpu-platform:aws.region",
        "'us-est-1'",
        "known regions: us-east-1",
        "region-typo",
    ),
    case(
        {f"{NS}:aws": {"region": "mars-north-1", "zones": ["mars-north-1a"]}},
        "gpu-platform:aws.region",
        "'mars-north-1'",
        "known regions: us-east-1",
        "region-unknown",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-2", "zones": ["us-east-2a", "us-east-2d"]}},
        "gpu-platform:aws.zones[1]",
        "'us-east-2d'",
        "its zones are us-east-2a, us-east-2b, us-east-2c",
        "zone-letter",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "eu-west-1b"]}},
        "gpu-platform:aws.zones[1]",
        "'eu-west-1b'",
        "its zones are us-east-1a",
        "zone-region",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1a"]}},
        "gpu-platform:aws.zones",
        "us-east-1a",
        "zones repeat",
        "zone-twice",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a"]}},
        "gpu-platform:aws.zones",
        "['us-east-1a']",
        "at least 2 items",
        "one-zone",
    ),
    case(
        {f"{NS}:aws": {**AWS[f"{NS}:aws"], "zone_offerings": {"p5.48xlarge": ["us-west-2a"]}}},
        "gpu-platform:aws.zone_offerings.p5.48xlarge[0]",
        "'us-west-2a'",
        "its zones are us-east-1a",
        "offering-zone-region",
    ),
    # Local Zones (AWS Local Zones User Guide, "Available Local Zones": us-east-1-dfw-2a and
    # us-east-1-atl-2a extend us-east-1). A Local Zone takes no GPU group until the stack lists
    # it, the EKS cluster never takes one (EKS User Guide, "Launch low-latency EKS clusters with
    # AWS Local Zones"), and FSx stays in the region.
    case(
        local_zones(["us-east-1-dfw-9a"]),
        "gpu-platform:aws.local_zones[0]",
        "'us-east-1-dfw-9a' is not a Local Zone",
        "us-east-1-dfw-2a, us-east-1-atl-2a",
        "local-zone-unknown",
    ),
    case(
        aws(
            aws={
                "region": "us-west-2",
                "zones": ["us-west-2a", "us-west-2b"],
                "local_zones": [DALLAS],
            }
        ),
        "gpu-platform:aws.local_zones[0]",
        "'us-east-1-dfw-2a' extends region us-east-1, not aws.region us-west-2",
        "the Local Zones of us-west-2 the table knows",
        "local-zone-of-another-region",
    ),
    case(
        local_zones([DALLAS, DALLAS]),
        "gpu-platform:aws.local_zones",
        "['us-east-1-dfw-2a', 'us-east-1-dfw-2a']",
        "Local Zones repeat",
        "local-zone-twice",
    ),
    case(
        group(zone=DALLAS),
        "gpu-platform:gpu_node_groups[0].zone",
        "us-east-1-dfw-2a",
        "is not one of aws.zones ['us-east-1a', 'us-east-1b']",
        "gpu-group-in-an-unlisted-local-zone",
    ),
    case(
        {
            **local_zones([DALLAS]),
            f"{NS}:gpu_node_groups": [{**GROUP, "zone": DALLAS}],
            f"{NS}:storage": {"fsx": {"storage_capacity_gib": 1200, "zone": DALLAS}},
        },
        "gpu-platform:storage.fsx.zone",
        "us-east-1-dfw-2a is not one of aws.zones",
        "the file system stays in the region's zones",
        "fsx-in-a-local-zone",
    ),
    case(
        {**local_zones([DALLAS]), f"{NS}:network": {"local_zone_subnet_cidrs": []}},
        "gpu-platform:network.local_zone_subnet_cidrs",
        "0 subnets for 1 Local Zones",
        "give exactly one per Local Zone",
        "local-zone-subnet-count",
    ),
    # The default layout carves Local Zone subnets from the block the public subnets come from:
    # three zones leave one piece of it (network.subnet_layout), so two Local Zones need theirs.
    case(
        {
            **local_zones([DALLAS, "us-east-1-atl-2a"]),
            f"{NS}:aws": {
                "region": "us-east-1",
                "zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
                "local_zones": [DALLAS, "us-east-1-atl-2a"],
            },
        },
        "gpu-platform:aws.local_zones",
        "2 Local Zones, but the default layout of 10.0.0.0/16 for 3 zones has room for 1",
        "set network.local_zone_subnet_cidrs",
        "local-zones-beyond-the-default-layout",
    ),
    case(
        {
            **local_zones([DALLAS]),
            f"{NS}:network": {"public_subnet_cidrs": ["10.0.224.0/24", "10.0.225.0/24"]},
        },
        "gpu-platform:network.local_zone_subnet_cidrs",
        "us-east-1-dfw-2a, 10.0.224.0/20, overlaps network.public_subnet_cidrs[0]",
        "set network.local_zone_subnet_cidrs",
        "local-zone-subnet-over-a-public-one",
    ),
    # The Local Zone's subnet holds its nodes at max_size as every private subnet does (Amazon
    # VPC user guide, "Subnet CIDR blocks": a /28 leaves 16 - 5 = 11 addresses).
    case(
        {
            **local_zones([DALLAS]),
            f"{NS}:network": {"local_zone_subnet_cidrs": ["10.0.240.0/28"]},
            f"{NS}:gpu_node_groups": [{**GROUP, "zone": DALLAS}],
        },
        "gpu-platform:network.local_zone_subnet_cidrs[0]",
        "private subnet 10.0.240.0/28 in us-east-1-dfw-2a has 11 usable addresses",
        "give network.local_zone_subnet_cidrs more room",
        "local-zone-subnet-too-small",
    ),
    case(
        {
            **local_zones([DALLAS]),
            f"{NS}:network": {
                **byo_vpc(("us-east-1a", "10.60.0.0/18"), ("us-east-1b", "10.60.64.0/18"))
            },
        },
        "gpu-platform:network.existing_vpc.private_subnets",
        "no subnet in us-east-1-dfw-2a",
        "or aws.local_zones ['us-east-1-dfw-2a']",
        "existing-vpc-without-the-local-zone-subnet",
    ),
    # Tagging AWS resources, "Tag naming limits and requirements".
    case(
        tags({"tags": {"aws:owner": "me"}}),
        "gpu-platform:aws.tags",
        "'aws:owner'",
        "AWS reserves for its own tags",
        "tag-aws-prefix",
    ),
    case(
        tags({"tags": {"k" * 129: "v"}}),
        "gpu-platform:aws.tags",
        "129 characters",
        "AWS allows 1 to 128",
        "tag-key-long",
    ),
    case(
        tags({"tags": {"team": "v" * 257}}),
        "gpu-platform:aws.tags",
        "257 characters",
        "AWS allows at most 256",
        "tag-value-long",
    ),
    case(
        tags({"tags": {"cost#center": "ml"}}),
        "gpu-platform:aws.tags",
        "'cost#center'",
        "only letters, digits, spaces and _ . : / = + - @",
        "tag-key-chars",
    ),
    # Kubernetes "Labels and Selectors"; kubelet --node-labels for kubernetes.io prefixes.
    case(
        group(labels={"-team": "ml"}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'-team'",
        "beginning and ending with a letter or digit",
        "label-name",
    ),
    case(
        group(labels={"node-role.kubernetes.io/gpu": ""}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'node-role.kubernetes.io/gpu'",
        "kubelet.kubernetes.io or node.kubernetes.io",
        "label-reserved-prefix",
    ),
    case(
        group(labels={"team": "x" * 64}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'team'",
        "at most 63 characters",
        "label-value-long",
    ),
    case(
        group(labels={"team": "ml ops"}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'ml ops'",
        "empty or at most 63 characters",
        "label-value-space",
    ),
    case(
        group(labels={"Example.com/team": "ml"}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'Example.com/team'",
        "not a DNS subdomain",
        "label-prefix-case",
    ),
    # Kubernetes quantities, and what the kubelet can reserve.
    case(
        group(kubelet={"system_reserved": {"cpu": "half"}}),
        "gpu-platform:gpu_node_groups[0].kubelet.system_reserved",
        "'half'",
        "e.g. 500m, 1Gi or 2",
        "quantity-word",
    ),
    case(
        group(kubelet={"kube_reserved": {"cpu": "1", "memory": "-1Gi"}}),
        "gpu-platform:gpu_node_groups[0].kubelet.kube_reserved",
        "'-1Gi'",
        "a non-negative number",
        "quantity-negative",
    ),
    case(
        group(kubelet={"kube_reserved": {"nvidia.com/gpu": "1", "cpu": "1"}}),
        "gpu-platform:gpu_node_groups[0].kubelet.kube_reserved",
        "'nvidia.com/gpu'",
        "the kubelet reserves cpu, memory, ephemeral-storage, pid",
        "reserve-unknown",
    ),
    # EKS service quotas: 450 nodes per managed node group by default.
    case(
        group(scaling={"min_size": 0, "max_size": 451}),
        "gpu-platform:gpu_node_groups[0].scaling.max_size",
        "451",
        "less than or equal to 450",
        "group-over-quota",
    ),
    case(
        group(scaling={"min_size": -1, "max_size": 2}),
        "gpu-platform:gpu_node_groups[0].scaling.min_size",
        "-1",
        "greater than or equal to 0",
        "negative-min",
    ),
    # Ids and ARNs in the shapes AWS gives them.
    case(
        group(capacity="reservation", capacity_reservation_id="cr-123"),
        "gpu-platform:gpu_node_groups[0].capacity_reservation_id",
        "'cr-123'",
        "cr- and 17 (or 8) lowercase hexadecimal digits",
        "reservation-id",
    ),
    case(
        group(capacity="reservation", capacity_reservation_group_arn="arn:aws:rg:x"),
        "gpu-platform:gpu_node_groups[0].capacity_reservation_group_arn",
        "'arn:aws:rg:x'",
        "a resource group ARN",
        "reservation-group-arn",
    ),
    case(
        aws(cluster={"admin_principal_arns": ["arn:aws:iam::123456789012:group/admins"]}),
        "gpu-platform:cluster.admin_principal_arns[0]",
        "group/admins",
        "role or user",
        "principal-arn-group",
    ),
    case(
        aws(cluster={"admin_principal_arns": ["arn:aws:iam::1234:role/admins"]}),
        "gpu-platform:cluster.admin_principal_arns[0]",
        "1234",
        "12-digit account id",
        "role-arn-account",
    ),
    case(
        aws(storage={"fsx": {"deployment_type": "PERSISTENT_2", "kms_key_arn": "alias/x"}}),
        "gpu-platform:storage.fsx.kms_key_arn",
        "'alias/x'",
        "a KMS key ARN",
        "kms-arn",
    ),
    # The partition is the second field of every ARN (botocore data/partitions.json: us-gov-*
    # regions are aws-us-gov, cn-* aws-cn). The program writes arn:aws: everywhere, so a region
    # or an ARN of another partition is refused rather than planned with ARNs AWS refuses.
    case(
        aws(aws={"region": "us-gov-west-1", "zones": ["us-gov-west-1a", "us-gov-west-1b"]}),
        "gpu-platform:aws.region",
        "'us-gov-west-1' is in the aws-us-gov partition",
        "Use a region of the aws partition; known regions: us-east-1",
        "govcloud-region",
    ),
    case(
        aws(aws={"region": "cn-north-1", "zones": ["cn-north-1a", "cn-north-1b"]}),
        "gpu-platform:aws.region",
        "'cn-north-1' is in the aws-cn partition",
        "Use a region of the aws partition; known regions: us-east-1",
        "china-region",
    ),
    case(
        aws(cluster={"admin_principal_arns": ["arn:aws-us-gov:iam::123456789012:role/admins"]}),
        "gpu-platform:cluster.admin_principal_arns[0]",
        "arn:aws-us-gov:iam::123456789012:role/admins",
        "arn:aws:iam::<12-digit account id>:role/<name>",
        "principal-arn-partition",
    ),
    case(
        aws(
            storage={
                "fsx": {
                    "deployment_type": "PERSISTENT_2",
                    "kms_key_arn": "arn:aws-cn:kms:cn-north-1:123456789012:key/"
                    "1234abcd-12ab-34cd-56ef-1234567890ab",
                }
            }
        ),
        "gpu-platform:storage.fsx.kms_key_arn",
        "arn:aws-cn:kms:cn-north-1",
        "arn:aws:kms:<region>",
        "kms-arn-partition",
    ),
    case(
        group(
            capacity="reservation",
            capacity_reservation_group_arn="arn:aws-us-gov:resource-groups:us-gov-west-1:"
            "123456789012:group/gpus",
        ),
        "gpu-platform:gpu_node_groups[0].capacity_reservation_group_arn",
        "arn:aws-us-gov:resource-groups",
        "arn:aws:resource-groups:<region>",
        "reservation-group-arn-partition",
    ),
    # Names in words, not regular expressions.
    case(
        group(name="H100"),
        "gpu-platform:gpu_node_groups[0].name",
        "'H100'",
        "at most 32 characters: lowercase letters, digits and hyphens",
        "group-name-case",
    ),
    case(
        group(name="g" * 33),
        "gpu-platform:gpu_node_groups[0].name",
        "'ggg",
        "at most 32 characters",
        "group-name-long",
    ),
    case(
        existing(**{"existing": {"name": "Lab_1", "kubeconfig_path": "k"}}),
        "gpu-platform:existing.name",
        "'Lab_1'",
        "a DNS label: at most 63 characters",
        "existing-name",
    ),
    case(
        aws(
            storage={
                "fsx": {
                    "daily_automatic_backup_start_time": "25:00",
                    "deployment_type": "PERSISTENT_2",
                }
            }
        ),
        "gpu-platform:storage.fsx.daily_automatic_backup_start_time",
        "'25:00'",
        "a time of day HH:MM",
        "backup-time",
    ),
    # Bring-your-own network (issue 38). Existing subnets are taken as the stack describes
    # them: one per zone of aws.zones (EKS user guide, "Subnet requirements and
    # considerations": subnets in at least two zones), each holding every node's pods at
    # max_size, less the five addresses AWS keeps of every subnet (Amazon VPC user guide,
    # "Subnet CIDR blocks": the first four and the last; a /24 leaves 256 - 5 = 251).
    case(
        aws(network={**BYO_VPC, "vpc_cidr": "10.0.0.0/16"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/16 configures a new VPC",
        "remove vpc_cidr, or existing_vpc",
        "existing-vpc-and-vpc-cidr",
    ),
    case(
        aws(network={**BYO_VPC, "transit_gateway": {"id": TGW_ID, "cidrs": ["198.18.0.0/15"]}}),
        "gpu-platform:network.transit_gateway",
        "configures a new VPC",
        "remove transit_gateway",
        "existing-vpc-and-transit-gateway",
    ),
    case(
        aws(network=byo_vpc(("us-east-1a", "10.60.0.0/18"), ("us-east-1c", "10.60.64.0/18"))),
        "gpu-platform:network.existing_vpc.private_subnets[1].zone",
        "'us-east-1c'",
        "not one of aws.zones ['us-east-1a', 'us-east-1b']",
        "existing-subnet-zone-outside-the-stack",
    ),
    case(
        aws(network=byo_vpc(("us-east-1a", "10.60.0.0/18"), ("us-east-1a", "10.60.64.0/18"))),
        "gpu-platform:network.existing_vpc.private_subnets[1].zone",
        "us-east-1a already has private_subnets[0]",
        "give one subnet per zone",
        "existing-subnets-in-one-zone",
    ),
    case(
        aws(
            network=byo_vpc(("us-east-1a", "10.60.0.0/24"), ("us-east-1b", "10.60.64.0/18")),
            gpu_node_groups=[
                {
                    "name": "g5",
                    "instance_types": ["g5.2xlarge"],
                    "scaling": {"min_size": 0, "max_size": 16},
                }
            ],
        ),
        "gpu-platform:network.existing_vpc.private_subnets[0].cidr",
        "private subnet 10.60.0.0/24 in us-east-1a",
        "has 251 usable addresses",
        "existing-subnet-too-small-for-pods",
    ),
    case(
        aws(network=byo_vpc(("us-east-1a", "10.60.0.0/29"), ("us-east-1b", "10.60.64.0/18"))),
        "gpu-platform:network.existing_vpc.private_subnets[0].cidr",
        "10.60.0.0/29",
        "AWS accepts subnets from /16 to /28",
        "existing-subnet-too-small-for-aws",
    ),
    case(
        aws(network={"existing_vpc": {**BYO_VPC["existing_vpc"], "id": "vpc-12"}}),
        "gpu-platform:network.existing_vpc.id",
        "'vpc-12'",
        "a VPC id: vpc- and 17 (or 8) lowercase hexadecimal digits",
        "existing-vpc-id",
    ),
    # A route to a block of the VPC is refused by EC2 (the local route covers it), and so is a
    # second route to one destination in a table (RouteAlreadyExists).
    case(
        aws(network={"transit_gateway": {"id": TGW_ID, "cidrs": ["10.0.128.0/17"]}}),
        "gpu-platform:network.transit_gateway.cidrs[0]",
        "10.0.128.0/17 overlaps vpc_cidr (10.0.0.0/16)",
        "overlaps",
        "routed-inside-the-vpc",
    ),
    case(
        aws(
            network={
                "transit_gateway": {"id": TGW_ID, "cidrs": ["198.18.0.0/15"]},
                "vpn_gateway": {"id": "vgw-0123456789abcdef0", "cidrs": ["198.18.4.0/24"]},
            }
        ),
        "gpu-platform:network.vpn_gateway.cidrs[0]",
        "198.18.4.0/24 overlaps transit_gateway.cidrs[0] (198.18.0.0/15)",
        "overlaps",
        "one-range-two-gateways",
    ),
    # EKS API reference, KubernetesNetworkConfigRequest.serviceIpv4Cidr: "We recommend that you
    # specify a block that does not overlap with resources in other networks that are peered or
    # connected to your VPC" (kube-proxy would take their addresses for Services).
    case(
        aws(network={"vpn_gateway": {"id": "vgw-0123456789abcdef0", "cidrs": ["172.20.0.0/24"]}}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "172.20.0.0/16 overlaps network.vpn_gateway.cidrs[0] 172.20.0.0/24",
        "overlaps",
        "routed-over-the-service-range",
    ),
    case(
        aws(network={"transit_gateway": {"id": "tgw-office", "cidrs": ["198.18.0.0/15"]}}),
        "gpu-platform:network.transit_gateway.id",
        "'tgw-office'",
        "a transit gateway id: tgw- and 17 (or 8) lowercase hexadecimal digits",
        "transit-gateway-id",
    ),
    # A private endpoint is reached only from a network routed into the VPC (EKS user guide,
    # "Cluster API server endpoint": private access only, the endpoint is reached from within
    # the VPC or a connected network): the new user's Frankfurt stack without its Transit
    # Gateway would create the cluster and fail at its first Kubernetes object.
    case(
        frankfurt_without("transit_gateway"),
        "gpu-platform:cluster.api_access_cidrs",
        "198.18.0.0/15: with endpoint_private_only no route from any of them reaches the VPC",
        "route the office or VPN range with network.transit_gateway {id, cidrs} or "
        "network.vpn_gateway {id, cidrs}",
        "private-endpoint-without-a-route",
    ),
]
