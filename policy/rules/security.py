"""Security rules: encryption, exposure, instance metadata, IAM and host access of pods."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from policy.rules.base import (
    KUBERNETES_WORKLOADS,
    Context,
    Subject,
    as_list,
    containers,
    pod_specs,
    reference,
    rule,
    truthy,
)

CLUSTER = "aws:eks/cluster:Cluster"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
DEFAULT_SECURITY_GROUP = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
)
PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
KMS_KEY = "aws:kms/key:Key"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SUBNET = "aws:ec2/subnet:Subnet"
IAM_POLICY_TYPES = (
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/policy:Policy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
)
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
OPEN_CIDRS = {"0.0.0.0/0", "::/0"}


@rule(
    "eks-secrets-encrypted",
    "mandatory",
    [CLUSTER],
    "EKS envelope-encrypts Kubernetes secrets with a customer KMS key.",
    "components/control/cluster.py declares the key; restore encryptionConfig "
    "(resources: [secrets], provider.keyArn) on the cluster",
)
def eks_secrets_encrypted(r: Subject, ctx: Context) -> Iterator[str]:
    config = r.props.get("encryptionConfig") or {}
    if "secrets" not in as_list(config.get("resources")):
        yield "secrets are not envelope-encrypted"
    elif not (config.get("provider") or {}).get("keyArn"):
        yield "no KMS key named for secrets encryption"


@rule(
    "prod-api-endpoint-private",
    "mandatory",
    [CLUSTER],
    "In production the Kubernetes API endpoint is private, or public only to listed CIDRs.",
    "set cluster.endpoint_private_only: true, or list cluster.public_access_cidrs",
)
def prod_api_endpoint_private(r: Subject, ctx: Context) -> Iterator[str]:
    if ctx.production and _endpoint_world_open(r):
        yield "the API endpoint is public to the whole internet"


@rule(
    "api-endpoint-world-open",
    "advisory",
    [CLUSTER],
    "Outside production a public Kubernetes API endpoint is limited to listed CIDRs; the "
    "default public_access_cidrs (0.0.0.0/0) admits the whole internet. No shipped stack "
    "breaks it: dev lists one range.",
    "list the runner's and your office's CIDRs in cluster.public_access_cidrs "
    "(README, The real flow), or set cluster.endpoint_private_only: true",
)
def api_endpoint_world_open(r: Subject, ctx: Context) -> Iterator[str]:
    # Production stacks get prod-api-endpoint-private, mandatory, for the same exposure.
    if not ctx.production and _endpoint_world_open(r):
        cidrs = as_list((r.props.get("vpcConfig") or {}).get("publicAccessCidrs"))
        shown = ", ".join(cidrs) if cidrs else "unset, which EKS reads as 0.0.0.0/0"
        yield f"the API endpoint is public to the whole internet (publicAccessCidrs: {shown})"


def _endpoint_world_open(r: Subject) -> bool:
    vpc = r.props.get("vpcConfig") or {}
    # EKS API reference, VpcConfigRequest: endpointPublicAccess defaults to true and
    # publicAccessCidrs to 0.0.0.0/0.
    if not truthy(vpc.get("endpointPublicAccess", True)):
        return False
    cidrs = set(as_list(vpc.get("publicAccessCidrs")))
    return not cidrs or bool(cidrs & OPEN_CIDRS)


@rule(
    "imdsv2-required",
    "mandatory",
    [LAUNCH_TEMPLATE],
    "Nodes require IMDSv2 session tokens, so a pod cannot read node credentials through SSRF.",
    "restore metadataOptions.httpTokens: required in components/data/nodes.py",
)
def imdsv2_required(r: Subject, ctx: Context) -> Iterator[str]:
    tokens = (r.props.get("metadataOptions") or {}).get("httpTokens")
    if tokens != "required":
        yield f"metadataOptions.httpTokens is {tokens or 'unset'} (IMDSv1 allowed)"


@rule(
    "no-open-ingress",
    "mandatory",
    [INGRESS_RULE, SECURITY_GROUP],
    "No security-group ingress from 0.0.0.0/0 or ::/0 unless the stack exempts the rule.",
    "narrow cluster.api_access_cidrs, or add policy.exemptions "
    "{rule: no-open-ingress, resource: <name>, reason}",
)
def no_open_ingress(r: Subject, ctx: Context) -> Iterator[str]:
    rules = as_list(r.props.get("ingress")) if r.type == SECURITY_GROUP else [r.props]
    for ingress in rules:
        sources = {ingress.get("cidrIpv4"), ingress.get("cidrIpv6")}
        sources |= set(as_list(ingress.get("cidrBlocks"))) | set(
            as_list(ingress.get("ipv6CidrBlocks"))
        )
        if sources & OPEN_CIDRS:
            yield f"ingress open to {sorted(sources & OPEN_CIDRS)}"


@rule(
    "ebs-encrypted",
    "mandatory",
    [LAUNCH_TEMPLATE, STORAGE_CLASS],
    "Node root volumes and EBS volumes from the gp3 StorageClass are encrypted.",
    "restore ebs.encrypted on the launch template (components/data/nodes.py) or "
    "parameters.encrypted on the StorageClass",
)
def ebs_encrypted(r: Subject, ctx: Context) -> Iterator[str]:
    if r.type == STORAGE_CLASS:
        encrypted = truthy((r.props.get("parameters") or {}).get("encrypted"))
        if r.props.get("provisioner") == "ebs.csi.aws.com" and not encrypted:
            yield "the StorageClass creates unencrypted EBS volumes"
        return
    for mapping in as_list(r.props.get("blockDeviceMappings")):
        if "ebs" in mapping and not truthy(mapping["ebs"].get("encrypted")):
            yield f"{mapping.get('deviceName')} is not encrypted"


@rule(
    "prod-fsx-customer-key",
    "mandatory",
    [FSX],
    "FSx for Lustre encrypts at rest with an AWS managed key; a persistent file system in "
    "production uses a customer key, so access to the data can be revoked.",
    "set storage.fsx.create_kms_key: true or storage.fsx.kms_key_arn",
)
def prod_fsx_customer_key(r: Subject, ctx: Context) -> Iterator[str]:
    persistent = str(r.props.get("deploymentType", "")).startswith("PERSISTENT")
    if ctx.production and persistent and not r.props.get("kmsKeyId"):
        yield "persistent file system without a customer KMS key"


@rule(
    "s3-encrypted",
    "mandatory",
    [BUCKET],
    "Every bucket has default server-side encryption declared.",
    "the FSx data bucket's encryption lives in components/storage/fsx.py: restore its "
    "BucketServerSideEncryptionConfiguration",
    linked=True,
)
def s3_encrypted(r: Subject, ctx: Context) -> Iterator[str]:
    for config in ctx.of_type(BUCKET_ENCRYPTION):
        if reference(config.props.get("bucket")) == r.name and any(
            (rule_.get("applyServerSideEncryptionByDefault") or {}).get("sseAlgorithm")
            for rule_ in as_list(config.props.get("rules"))
        ):
            return
    yield "no default encryption configuration for this bucket"


@rule(
    "log-groups-encrypted",
    "advisory",
    [LOG_GROUP],
    "Log groups use a customer KMS key (CloudWatch always encrypts with its own key). "
    "Advisory: the shipped stacks keep CloudWatch's key.",
    "control-plane logs: cluster.create_log_kms_key: true or cluster.log_kms_key_arn; flow "
    "logs: network.create_flow_log_kms_key: true or network.flow_log_kms_key_arn",
)
def log_groups_encrypted(r: Subject, ctx: Context) -> Iterator[str]:
    if not r.props.get("kmsKeyId"):
        yield "no customer KMS key (CloudWatch's own key)"


@rule(
    "s3-public-access-blocked",
    "mandatory",
    [BUCKET],
    "Every bucket blocks public ACLs and policies, all four settings on.",
    "restore the bucket's BucketPublicAccessBlock in components/storage/fsx.py",
    linked=True,
)
def s3_public_access_blocked(r: Subject, ctx: Context) -> Iterator[str]:
    keys = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    for block in ctx.of_type(PUBLIC_ACCESS_BLOCK):
        if reference(block.props.get("bucket")) == r.name:
            off = [k for k in keys if not truthy(block.props.get(k))]
            if off:
                yield f"public access not blocked: {', '.join(off)} off"
            return
    yield "no public access block for this bucket"


@rule(
    "default-security-group-closed",
    "mandatory",
    [DEFAULT_SECURITY_GROUP],
    "The VPC's default security group has no rules, so nothing attached to it by accident "
    "talks to anything.",
    "components/control/network.py adopts the default group with empty ingress and egress: "
    "keep them empty",
)
def default_security_group_closed(r: Subject, ctx: Context) -> Iterator[str]:
    if r.props.get("ingress") or r.props.get("egress"):
        yield "the default security group has rules"


@rule(
    "kms-key-policy-and-rotation",
    "mandatory",
    [KMS_KEY],
    "Every KMS key has an explicit key policy and yearly rotation.",
    "the keys are declared in components (control plane, storage): set policy and "
    "enableKeyRotation: true",
)
def kms_key_policy_and_rotation(r: Subject, ctx: Context) -> Iterator[str]:
    if not r.props.get("policy"):
        yield "no explicit key policy (the account default grants the whole account)"
    if not truthy(r.props.get("enableKeyRotation")):
        yield "key rotation off"


def _is_public_subnet(subnet: Subject) -> bool:
    tags = subnet.props.get("tags") or {}
    return truthy(subnet.props.get("mapPublicIpOnLaunch")) or "kubernetes.io/role/elb" in tags


@rule(
    "node-groups-in-private-subnets",
    "mandatory",
    [NODE_GROUP],
    "Node groups launch only in private subnets.",
    "node groups take network's private subnets; set gpu_node_groups[].zone to a zone in aws.zones",
    linked=True,
)
def node_groups_in_private_subnets(r: Subject, ctx: Context) -> Iterator[str]:
    for value in as_list(r.props.get("subnetIds")):
        subnet = ctx.named(SUBNET, reference(value))
        if subnet is not None and _is_public_subnet(subnet):
            yield f"launches in public subnet {subnet.name}"


@rule(
    "efa-no-public-ip",
    "mandatory",
    [LAUNCH_TEMPLATE],
    "EFA interfaces never take a public IP (EFA instances with several interfaces cannot, and "
    "a training node needs none).",
    "restore associatePublicIpAddress: false in components/data/efa.py",
)
def efa_no_public_ip(r: Subject, ctx: Context) -> Iterator[str]:
    for nic in as_list(r.props.get("networkInterfaces")):
        if nic.get("interfaceType") == "efa" and truthy(nic.get("associatePublicIpAddress")):
            yield f"EFA interface on card {nic.get('networkCardIndex')} takes a public IP"


def _statements(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    return as_list((document or {}).get("Statement"))


_READ_PREFIXES = ("Describe", "List", "Get")


@rule(
    "iam-no-wildcard-write",
    "mandatory",
    IAM_POLICY_TYPES,
    "No IAM statement allows write actions on Resource * without a condition, nor * on *.",
    "scope the statement's Resource or add a Condition in the component's policy builder",
)
def iam_no_wildcard_write(r: Subject, ctx: Context) -> Iterator[str]:
    for statement in _statements(r.props.get("policy")):
        if statement.get("Effect") != "Allow" or "*" not in as_list(statement.get("Resource")):
            continue
        actions = as_list(statement.get("Action"))
        if "*" in actions:
            yield "allows * on *"
        elif not statement.get("Condition"):
            writes = [a for a in actions if not a.split(":")[-1].startswith(_READ_PREFIXES)]
            if writes:
                yield f"allows {', '.join(writes)} on * without a condition"


def _host_access(spec: dict[str, Any]) -> list[str]:
    volumes = spec.get("volumes") or []
    found = [f"hostPath volume {v.get('name')}" for v in volumes if "hostPath" in v]
    found += [
        f"privileged container {c.get('name')}"
        for c in containers(spec)
        if (c.get("securityContext") or {}).get("privileged")
    ]
    return found


NAMESPACE = "kubernetes:core/v1:Namespace"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"


def _privileged_namespaces(ctx: Context) -> set[str]:
    """The namespaces that need host access: those the settings list, and those the program
    declares with Pod Security `enforce: privileged` on purpose (the operators' own)."""
    declared = {
        (n.props.get("metadata") or {}).get("name")
        for n in ctx.of_type(NAMESPACE)
        if ((n.props.get("metadata") or {}).get("labels") or {}).get(PSA_ENFORCE) == "privileged"
    }
    return declared | set(ctx.settings.privileged_namespaces)


@rule(
    "privileged-only-where-needed",
    "mandatory",
    KUBERNETES_WORKLOADS,
    "Privileged containers and hostPath volumes only in the namespaces that need them: those "
    "in policy.privileged_namespaces or declared with Pod Security enforce: privileged; the "
    "charts' rendered pods too.",
    "move the workload, or add its namespace to policy.privileged_namespaces",
    rendered=True,
)
def privileged_only_where_needed(r: Subject, ctx: Context) -> Iterator[str]:
    namespace = (r.props.get("metadata") or {}).get("namespace", "default")
    if namespace in _privileged_namespaces(ctx):
        return
    for spec in pod_specs(r.props):
        for what in _host_access(spec):
            yield f"{what} in namespace {namespace}"


RULES = [
    eks_secrets_encrypted,
    prod_api_endpoint_private,
    api_endpoint_world_open,
    imdsv2_required,
    no_open_ingress,
    ebs_encrypted,
    prod_fsx_customer_key,
    s3_encrypted,
    log_groups_encrypted,
    s3_public_access_blocked,
    default_security_group_closed,
    kms_key_policy_and_rotation,
    node_groups_in_private_subnets,
    efa_no_public_ip,
    iam_no_wildcard_write,
    privileged_only_where_needed,
]
