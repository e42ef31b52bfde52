"""What a reviewer reads besides the resource tree: each resource's inputs in full (`--detail`,
user data decoded, secrets masked) and the exposure summary every plan ends with.

The exposure summary is read from what the program declared, never from the config, so it shows
what `pulumi up` would build even when a component ignores or misreads a setting.
"""

from __future__ import annotations

import base64
import binascii
import email
import ipaddress
import json
from typing import Any

from plan.diff import flatten, masked
from plan.engine import known_after_apply
from plan.model import Plan, PlannedResource
from plan.outputs import is_known_after_apply

CLUSTER = "aws:eks/cluster:Cluster"
VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
LEGACY_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
ROUTE = "aws:ec2/route:Route"
# A route's target by the prefix of its id (EC2 resource ids: tgw-, vgw-).
GATEWAY_KINDS = {"tgw-": "transit gateway", "vgw-": "virtual private gateway"}
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
# The four settings of an S3 public access block; any one off leaves a way to make it public.
_BLOCK_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
# The tag the AWS Load Balancer Controller reads to place internet-facing load balancers.
ELB_ROLE_TAG = "kubernetes.io/role/elb"


# ------------------------------------------------------------------------------ detail


def decode_user_data(encoded: str) -> str:
    """Launch-template user data as the node reads it: base64 of a MIME multi-part document,
    shown part by part; anything else as decoded text, or as given when it is not base64."""
    try:
        text = base64.b64decode(encoded, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return encoded
    message = email.message_from_string(text)
    if not message.is_multipart():
        return text
    parts = []
    for part in message.get_payload():
        body = part.get_payload(decode=True).decode()
        parts.append(f"--- part: {part.get_content_type()}\n{body.rstrip()}")
    return "\n".join(parts)


def format_detail(plan: Plan) -> str:
    lines = ["Detail: the inputs of every resource (secrets masked)"]
    for r in sorted(plan.resources, key=lambda r: (r.type, r.name)):
        if not r.custom:
            continue
        lines += ["", f"{r.type} {r.name}" + ("  [protected]" if r.protect else "")]
        for path, value in flatten(r.inputs).items():
            shown = masked(path, value)
            if path == "userData" and shown == value:
                lines.append("  userData (decoded):")
                lines += [f"    {line}" for line in decode_user_data(value).splitlines()]
            else:
                lines.append(f"  {path}: {json.dumps(shown, sort_keys=True)}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- exposure


def _network(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except (TypeError, ValueError):
        return None  # a value known only after apply


def _beyond(cidr: str, vpc_cidrs: list[Any]) -> bool:
    net = _network(cidr)
    if net is None:
        return False
    return not any(net.version == v.version and net.subnet_of(v) for v in vpc_cidrs)


def _ports(rule: dict[str, Any]) -> str:
    low, high = rule.get("fromPort"), rule.get("toPort")
    protocol = rule.get("ipProtocol", rule.get("protocol", "-1"))
    if protocol in ("-1", "all") or low is None:
        return "all ports"
    return f"{protocol} {low}" if low == high else f"{protocol} {low}-{high}"


def security_group_rules(plan: Plan) -> list[tuple[str, str, str, dict[str, Any]]]:
    """Every rule with a CIDR: (direction, CIDR, where it is declared, the rule's inputs), from
    the standalone rule resources and the rules written inline in a security group."""
    found = []
    for token, direction in ((INGRESS_RULE, "in"), (EGRESS_RULE, "out")):
        for r in plan.of_type(token):
            for key in ("cidrIpv4", "cidrIpv6"):
                if key in r.inputs:
                    found.append((direction, r.inputs[key], r.name, r.inputs))
    for r in plan.of_type(LEGACY_RULE):
        direction = "in" if r.inputs.get("type") == "ingress" else "out"
        for cidr in r.inputs.get("cidrBlocks", []) + r.inputs.get("ipv6CidrBlocks", []):
            found.append((direction, cidr, r.name, r.inputs))
    for group in plan.of_type(SECURITY_GROUP):
        for key, direction in (("ingress", "in"), ("egress", "out")):
            for rule in group.inputs.get(key, []):
                for cidr in rule.get("cidrBlocks", []) + rule.get("ipv6CidrBlocks", []):
                    found.append((direction, cidr, group.name, rule))
    return sorted(found, key=lambda f: (f[2], f[0], f[1]))


def _gateway_route(plan: Plan, cidr: str) -> str | None:
    """The declared route that carries `cidr` into the VPC from a transit or virtual private
    gateway, in words, or None."""
    source = _network(cidr)
    for route in sorted(plan.of_type(ROUTE), key=lambda r: r.name):
        destination = _network(route.inputs.get("destinationCidrBlock"))
        if source is None or destination is None or not source.subnet_of(destination):
            continue
        gateway = route.inputs.get("transitGatewayId") or route.inputs.get("gatewayId", "")
        kind = next((k for p, k in GATEWAY_KINDS.items() if gateway.startswith(p)), None)
        if kind is not None:
            return f"through {kind} {gateway} (route {route.name}, to {destination})"
    return None


def _admits_https(rule: dict[str, Any]) -> bool:
    """The rule lets in the API server's port, TCP 443 (other rules of the cluster group are
    for data paths, such as Lustre from the file system)."""
    if rule.get("ipProtocol") in ("-1", "all"):
        return True
    low, high = rule.get("fromPort"), rule.get("toPort")
    return rule.get("ipProtocol") == "tcp" and low is not None and low <= 443 <= high


def runner_reach(plan: Plan, cluster: PlannedResource) -> list[str]:
    """How the machine that runs `pulumi up` reaches the API endpoint, from what is declared:
    over the internet, from inside the VPC, or through a gateway route, per admitted source;
    or why the plan cannot tell."""
    vpc = cluster.inputs.get("vpcConfig", {})
    if vpc.get("endpointPublicAccess", True):
        cidrs = ", ".join(vpc.get("publicAccessCidrs", ["0.0.0.0/0"]))
        return [f"    `pulumi up` reaches it over the internet from {cidrs}"]
    group = known_after_apply(f"{cluster.name}.vpcConfig.clusterSecurityGroupId")
    admitted = [
        rule
        for r in plan.of_type(INGRESS_RULE)
        if (rule := r.inputs).get("securityGroupId") == group and _admits_https(rule)
    ]
    vpcs = [n for n in (_network(v.inputs.get("cidrBlock")) for v in plan.of_type(VPC)) if n]
    if not plan.of_type(VPC):
        sources = ", ".join(
            r.get("cidrIpv4") or r.get("referencedSecurityGroupId") for r in admitted
        )
        return [
            "    `pulumi up` reaches it: cannot tell here. The VPC is an existing one "
            "(network.existing_vpc): its route tables are not declared, so the plan cannot "
            f"see whether {sources or 'any network'} is routed to it. Before `pulumi up`, "
            "run it from inside that VPC or from a network its route tables send through a "
            "transit gateway, VPN or peering"
        ]
    lines = []
    for rule in admitted:
        if "referencedSecurityGroupId" in rule:
            how = "inside the VPC"
            source = f"security group {rule['referencedSecurityGroupId']}"
        else:
            source = rule["cidrIpv4"]
            inside = _network(source) is not None and not _beyond(source, vpcs)
            how = "inside the VPC" if inside else _gateway_route(plan, source)
            how = how or "NO ROUTE into the VPC: unreachable from there"
        lines.append(f"    `pulumi up` from {source}: {how}")
    return lines or ["    `pulumi up` reaches it: from nowhere (no source is admitted)"]


def existing_subnets(plan: Plan) -> list[str]:
    """Subnets the cluster uses that the plan does not declare (network.existing_vpc): what
    they need, which the plan cannot check."""
    lines = []
    for cluster in plan.of_type(CLUSTER):
        given = [
            s
            for s in cluster.inputs.get("vpcConfig", {}).get("subnetIds", [])
            if not is_known_after_apply(s)
        ]
        if given:
            name = cluster.inputs.get("name", cluster.name)
            lines.append(
                f"  Existing subnets of {cluster.name} (not declared here, not checked): "
                f"{', '.join(given)}. Before `pulumi up` each needs the tags "
                f"kubernetes.io/role/internal-elb=1 and kubernetes.io/cluster/{name}=shared "
                "(EKS user guide, Subnet requirements and considerations; AWS Load Balancer "
                "Controller, subnet auto-discovery), and egress through a NAT gateway or VPC "
                "endpoints for ECR (api, dkr), S3 and STS, without which nodes pull no image "
                "and do not join"
            )
    return lines


def endpoint_access(plan: Plan) -> list[str]:
    lines = []
    for cluster in plan.of_type(CLUSTER):
        vpc = cluster.inputs.get("vpcConfig", {})
        # EKS's defaults when unset: public endpoint on, private off, public CIDRs 0.0.0.0/0.
        public = vpc.get("endpointPublicAccess", True)
        private = vpc.get("endpointPrivateAccess", False)
        if public:
            cidrs = ", ".join(vpc.get("publicAccessCidrs", ["0.0.0.0/0"]))
            where = f"public to {cidrs}; private access {'on' if private else 'off'}"
        else:
            where = "private only (no public endpoint)"
        lines.append(f"  API endpoint of {cluster.name}: {where}")
        group = known_after_apply(f"{cluster.name}.vpcConfig.clusterSecurityGroupId")
        for direction, cidr, name, rule in security_group_rules(plan):
            if direction == "in" and rule.get("securityGroupId") == group:
                lines.append(
                    f"    admitted through the cluster security group: {cidr} on "
                    f"{_ports(rule)} ({name})"
                )
        lines += runner_reach(plan, cluster)
    return lines or ["  API endpoint: none declared here (an existing cluster's own)"]


def public_buckets(plan: Plan) -> list[str]:
    """Buckets without a public access block that sets all four flags, or with a public ACL."""
    blocks = {r.inputs.get("bucket"): r.inputs for r in plan.of_type(PUBLIC_ACCESS_BLOCK)}
    found = []
    for token in BUCKETS:
        for bucket in plan.of_type(token):
            block = blocks.get(known_after_apply(f"{bucket.name}.id")) or blocks.get(
                bucket.inputs.get("bucket")
            )
            if block is None:
                found.append(f"{bucket.name} (no public access block)")
            elif off := [flag for flag in _BLOCK_FLAGS if block.get(flag) is not True]:
                found.append(f"{bucket.name} ({', '.join(off)} not true)")
            elif bucket.inputs.get("acl", "private").startswith("public"):
                found.append(f"{bucket.name} (acl {bucket.inputs['acl']})")
    return sorted(found)


def _names(resources: list[PlannedResource]) -> str:
    return ", ".join(sorted(r.name for r in resources)) or "none"


def format_exposure(plan: Plan) -> str:
    vpcs = plan.of_type(VPC)
    vpc_cidrs = [n for n in (_network(v.inputs.get("cidrBlock")) for v in vpcs) if n]
    elb = [s for s in plan.of_type(SUBNET) if ELB_ROLE_TAG in s.inputs.get("tags", {})]
    lines = ["Exposure:", *endpoint_access(plan), *existing_subnets(plan)]
    lines.append(
        f"  Internet gateways: {_names(plan.of_type('aws:ec2/internetGateway:InternetGateway'))}"
    )
    lines.append(f"  NAT gateways: {_names(plan.of_type('aws:ec2/natGateway:NatGateway'))}")
    lines.append(
        f"  Subnets tagged for internet-facing load balancers ({ELB_ROLE_TAG}): {_names(elb)}"
    )
    if vpcs:
        vpc_words = ", ".join(str(c) for c in vpc_cidrs)
        open_rules = [
            f"    {direction} {cidr} on {_ports(rule)} ({name})"
            for direction, cidr, name, rule in security_group_rules(plan)
            if _beyond(cidr, vpc_cidrs)
        ]
        heading = f"  Security-group rules open beyond the VPC ({vpc_words}):"
        lines.append(heading if open_rules else f"{heading} none")
        lines += open_rules
    lines.append(f"  Public buckets: {', '.join(public_buckets(plan)) or 'none'}")
    protected = sorted(f"{r.type} {r.name}" for r in plan.resources if r.protect)
    lines.append(f"  Protected resources: {', '.join(protected) or 'none'}")
    return "\n".join(lines)
