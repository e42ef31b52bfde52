"""The IAM actions `pulumi up` (and the refresh before it) calls for each pulumi-aws resource type
the program declares: one table, read by plan/deploy_policy.py.

pulumi-aws bridges the Terraform AWS provider, so the calls are those of each resource's CRUD
functions in hashicorp/terraform-provider-aws, `internal/service/<service>/<resource>.go` (named
per row). The action names and the condition keys each action takes are the AWS Service
Authorization Reference's ("Actions, resources, and condition keys for <service>", the page per
service is in plan/iam_actions.json), which the policy's lint checks every action against.

`scope` says how far AWS lets the policy narrow a row's changes:
- `tag`: the stack tag `gpu-platform:stack` the provider puts on every resource it creates
  (provider default tags, components/context.py): `aws:RequestTag` on the create call and
  `aws:ResourceTag` afterwards, for each action whose row in the reference takes the key;
- ARN templates: the resources' names, which the plan knows: `{name}` each resource's own name,
  or Pulumi's auto-name (the logical name, `-` and a random suffix, so `<logical>-*`);
  `{cluster}`, `{nodegroup}`, `{role}`, `{bucket}` every EKS cluster, node group, role and
  bucket of the stack;
- `None` with `unscoped`: why neither works, so the action is granted on `*`.
Reads (Describe/List/Get) are granted on `*`: most Describe calls take no resource ARN at all
(the reference lists no resource type for them), and a refresh reads every resource type.
"""

from __future__ import annotations

from dataclasses import dataclass

TAG = "tag"


@dataclass(frozen=True)
class TypeActions:
    source: str  # the provider's file whose CRUD functions make these calls
    create: tuple[str, ...]
    read: tuple[str, ...]
    update: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    tag: tuple[str, ...] = ()
    scope: str | tuple[str, ...] | None = TAG
    unscoped: str = ""  # why scope is None
    # Service principals this type hands one of the stack's roles to (iam:PassRole).
    passes_role_to: tuple[str, ...] = ()
    # Service-linked roles the first create in an account makes (iam:CreateServiceLinkedRole).
    service_linked: tuple[str, ...] = ()
    # An input naming the managed policies a change may attach: the policy admits only the
    # planned ones (the iam:PolicyARN condition).
    policy_arn_input: str = ""

    def changes(self) -> tuple[str, ...]:
        return (*self.create, *self.update, *self.delete, *self.tag)


_EC2_TAGS = ("ec2:CreateTags", "ec2:DeleteTags")
_EKS_TAGS = ("eks:TagResource", "eks:UntagResource")
_SG_RULE_UNSCOPED = (
    "the node rules go on the EKS cluster's security group, which EKS creates and tags with "
    "its own keys (aws:eks:cluster-name), not the stack tag; ec2:SecurityGroupID would need "
    "the group's ID, known only after the cluster exists"
)
_OTHERS_GATEWAY = (
    "the call names the transit or virtual private gateway (and its route tables) as well as "
    "the VPC: the network team's gateway carries no stack tag, and its id is the stack's, not "
    "a name the plan can turn into an ARN of the stack's own"
)
_S3_BUCKET = ("arn:aws:s3:::{name}*",)

DEPLOY_ACTIONS: dict[str, TypeActions] = {
    # The provider's configure step and `aws.get_caller_identity` (components/iam.py).
    "pulumi:providers:aws": TypeActions(
        "internal/provider/provider.go, internal/service/sts/caller_identity_data_source.go",
        create=(),
        read=("sts:GetCallerIdentity",),
        scope=None,
        unscoped="sts:GetCallerIdentity takes no resource (the reference lists none)",
    ),
    "aws:autoscaling/tag:Tag": TypeActions(
        "internal/service/autoscaling/group_tag.go",
        create=("autoscaling:CreateOrUpdateTags",),
        read=("autoscaling:DescribeTags",),
        update=("autoscaling:CreateOrUpdateTags",),
        delete=("autoscaling:DeleteTags",),
        # EKS names a managed node group's Auto Scaling group eks-<node group name>-<uuid>.
        scope=(
            "arn:aws:autoscaling:*:*:autoScalingGroup:*:autoScalingGroupName/eks-{nodegroup}-*",
        ),
    ),
    "aws:cloudwatch/logGroup:LogGroup": TypeActions(
        "internal/service/logs/group.go",
        create=("logs:CreateLogGroup", "logs:PutRetentionPolicy"),
        read=("logs:DescribeLogGroups", "logs:ListTagsForResource"),
        update=(
            "logs:PutRetentionPolicy",
            "logs:DeleteRetentionPolicy",
            "logs:AssociateKmsKey",
            "logs:DisassociateKmsKey",
        ),
        delete=("logs:DeleteLogGroup",),
        tag=("logs:TagResource", "logs:UntagResource"),
        scope=("arn:aws:logs:*:*:log-group:{name}", "arn:aws:logs:*:*:log-group:{name}:*"),
    ),
    "aws:ec2/availabilityZoneGroup:AvailabilityZoneGroup": TypeActions(
        "internal/service/ec2/ec2_availability_zone_group.go",
        # Create reads the group's status first and modifies it only where it differs.
        create=("ec2:DescribeAvailabilityZones", "ec2:ModifyAvailabilityZoneGroup"),
        read=("ec2:DescribeAvailabilityZones",),
        update=("ec2:ModifyAvailabilityZoneGroup",),
        # Delete is schema.Noop: the account stays opted in (EC2 API Reference,
        # ModifyAvailabilityZoneGroup: opting out of a Local Zone group goes through Support).
        scope=None,
        unscoped="the call names a zone group of the account, not a resource of the stack: it "
        "carries no tag (plan/iam_actions.json lists no tag condition key for the action) and "
        "has no name of the stack's to build an ARN from",
    ),
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": TypeActions(
        "internal/service/ec2/vpc_default_security_group.go",
        # Adopting the VPC's default group revokes its rules; deleting only forgets it.
        create=("ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress"),
        read=("ec2:DescribeSecurityGroups", "ec2:DescribeSecurityGroupRules"),
        update=(
            "ec2:AuthorizeSecurityGroupIngress",
            "ec2:AuthorizeSecurityGroupEgress",
            "ec2:RevokeSecurityGroupIngress",
            "ec2:RevokeSecurityGroupEgress",
        ),
        # Tagged through ec2:CreateTags, which the tagged rows grant on the request's tags.
        scope=None,
        unscoped="the VPC creates its default group untagged; the program tags it only after "
        "revoking its rules",
    ),
    "aws:ec2/eip:Eip": TypeActions(
        "internal/service/ec2/ec2_eip.go",
        create=("ec2:AllocateAddress",),
        read=("ec2:DescribeAddresses", "ec2:DescribeAddressesAttribute"),
        delete=("ec2:ReleaseAddress", "ec2:DisassociateAddress"),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/flowLog:FlowLog": TypeActions(
        "internal/service/ec2/vpc_flow_log.go",
        create=("ec2:CreateFlowLogs",),
        read=("ec2:DescribeFlowLogs",),
        delete=("ec2:DeleteFlowLogs",),
        tag=_EC2_TAGS,
        passes_role_to=("vpc-flow-logs.amazonaws.com",),
    ),
    "aws:ec2/internetGateway:InternetGateway": TypeActions(
        "internal/service/ec2/vpc_internet_gateway.go",
        create=("ec2:CreateInternetGateway", "ec2:AttachInternetGateway"),
        read=("ec2:DescribeInternetGateways",),
        delete=("ec2:DetachInternetGateway", "ec2:DeleteInternetGateway"),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": TypeActions(
        "internal/service/ec2/ec2_launch_template.go",
        create=("ec2:CreateLaunchTemplate",),
        read=("ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions"),
        update=("ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate"),
        delete=("ec2:DeleteLaunchTemplate",),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/natGateway:NatGateway": TypeActions(
        "internal/service/ec2/vpc_nat_gateway.go",
        create=("ec2:CreateNatGateway",),
        read=("ec2:DescribeNatGateways",),
        delete=("ec2:DeleteNatGateway",),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/placementGroup:PlacementGroup": TypeActions(
        "internal/service/ec2/ec2_placement_group.go",
        create=("ec2:CreatePlacementGroup",),
        read=("ec2:DescribePlacementGroups",),
        delete=("ec2:DeletePlacementGroup",),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/route:Route": TypeActions(
        "internal/service/ec2/vpc_route.go",
        create=("ec2:CreateRoute",),
        read=("ec2:DescribeRouteTables",),
        update=("ec2:ReplaceRoute",),
        delete=("ec2:DeleteRoute",),
    ),
    "aws:ec2/routeTable:RouteTable": TypeActions(
        "internal/service/ec2/vpc_route_table.go",
        create=("ec2:CreateRouteTable", "ec2:CreateRoute"),
        read=("ec2:DescribeRouteTables",),
        update=("ec2:CreateRoute", "ec2:ReplaceRoute", "ec2:DeleteRoute"),
        delete=("ec2:DeleteRoute", "ec2:DeleteRouteTable"),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": TypeActions(
        "internal/service/ec2/vpc_route_table_association.go",
        create=("ec2:AssociateRouteTable",),
        read=("ec2:DescribeRouteTables",),
        update=("ec2:ReplaceRouteTableAssociation",),
        delete=("ec2:DisassociateRouteTable",),
    ),
    "aws:ec2/securityGroup:SecurityGroup": TypeActions(
        "internal/service/ec2/vpc_security_group.go",
        # The provider revokes the allow-all egress rule AWS adds to a new group.
        create=("ec2:CreateSecurityGroup", "ec2:RevokeSecurityGroupEgress"),
        # Delete waits for the interfaces still in the group to go.
        read=(
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSecurityGroupRules",
            "ec2:DescribeNetworkInterfaces",
        ),
        delete=("ec2:DeleteSecurityGroup",),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/subnet:Subnet": TypeActions(
        "internal/service/ec2/vpc_subnet.go",
        create=("ec2:CreateSubnet", "ec2:ModifySubnetAttribute"),
        read=("ec2:DescribeSubnets", "ec2:DescribeNetworkInterfaces"),
        update=("ec2:ModifySubnetAttribute",),
        delete=("ec2:DeleteSubnet",),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/vpc:Vpc": TypeActions(
        "internal/service/ec2/vpc_.go",
        create=("ec2:CreateVpc", "ec2:ModifyVpcAttribute"),
        # Read also finds the VPC's default security group, route table and network ACL.
        read=(
            "ec2:DescribeVpcs",
            "ec2:DescribeVpcAttribute",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeRouteTables",
            "ec2:DescribeNetworkAcls",
        ),
        update=("ec2:ModifyVpcAttribute",),
        delete=("ec2:DeleteVpc",),
        tag=_EC2_TAGS,
    ),
    "aws:ec2/vpnGatewayAttachment:VpnGatewayAttachment": TypeActions(
        "internal/service/ec2/vpnsite_gateway_attachment.go",
        create=("ec2:AttachVpnGateway",),
        read=("ec2:DescribeVpnGateways",),
        delete=("ec2:DetachVpnGateway",),
        scope=None,
        unscoped=_OTHERS_GATEWAY,
    ),
    "aws:ec2/vpcEndpoint:VpcEndpoint": TypeActions(
        "internal/service/ec2/vpc_endpoint.go",
        create=("ec2:CreateVpcEndpoint",),
        read=("ec2:DescribeVpcEndpoints", "ec2:DescribePrefixLists"),
        update=("ec2:ModifyVpcEndpoint",),
        delete=("ec2:DeleteVpcEndpoints",),
        tag=_EC2_TAGS,
    ),
    "aws:ec2transitgateway/vpcAttachment:VpcAttachment": TypeActions(
        "internal/service/ec2/transitgateway_vpc_attachment.go",
        create=("ec2:CreateTransitGatewayVpcAttachment",),
        # Create and read look up the gateway and, where the account owns it, its default
        # route table's association and propagation of the attachment.
        read=(
            "ec2:DescribeTransitGatewayVpcAttachments",
            "ec2:DescribeTransitGateways",
            "ec2:GetTransitGatewayRouteTableAssociations",
            "ec2:GetTransitGatewayRouteTablePropagations",
        ),
        update=(
            "ec2:ModifyTransitGatewayVpcAttachment",
            "ec2:AssociateTransitGatewayRouteTable",
            "ec2:DisassociateTransitGatewayRouteTable",
            "ec2:EnableTransitGatewayRouteTablePropagation",
            "ec2:DisableTransitGatewayRouteTablePropagation",
        ),
        delete=("ec2:DeleteTransitGatewayVpcAttachment",),
        # Tagged through ec2:CreateTags, which the tagged rows grant on the stack tag.
        scope=None,
        unscoped=_OTHERS_GATEWAY,
        # Amazon VPC Transit Gateways guide, service-linked-roles.html: attaching a VPC of the
        # account makes AWSServiceRoleForVPCTransitGateway, trusted by this principal.
        service_linked=("transitgateway.amazonaws.com",),
    ),
    "aws:ecr/repository:Repository": TypeActions(
        "internal/service/ecr/repository.go",
        create=("ecr:CreateRepository",),
        read=("ecr:DescribeRepositories", "ecr:ListTagsForResource"),
        update=("ecr:PutImageTagMutability", "ecr:PutImageScanningConfiguration"),
        delete=("ecr:DeleteRepository",),
        tag=("ecr:TagResource", "ecr:UntagResource"),
        scope=("arn:aws:ecr:*:*:repository/{name}",),
    ),
    "aws:ecr/pullThroughCacheRule:PullThroughCacheRule": TypeActions(
        "internal/service/ecr/pull_through_cache_rule.go",
        create=("ecr:CreatePullThroughCacheRule",),
        read=("ecr:DescribePullThroughCacheRules",),
        update=("ecr:UpdatePullThroughCacheRule",),
        delete=("ecr:DeletePullThroughCacheRule",),
        # ECR User Guide, slr-pullthroughcache.html and using-service-linked-roles.html: the
        # registry's first rule makes AWSServiceRoleForECRPullThroughCache, trusted by this
        # principal, as the caller.
        service_linked=("pullthroughcache.ecr.amazonaws.com",),
        scope=None,
        unscoped="a rule is no resource of its own: the Service Authorization Reference scopes "
        "its actions to the registry (arn:aws:ecr:<region>:<account>:registry/*), not a prefix",
    ),
    "aws:eks/accessEntry:AccessEntry": TypeActions(
        "internal/service/eks/access_entry.go",
        create=("eks:CreateAccessEntry",),
        read=("eks:DescribeAccessEntry",),
        update=("eks:UpdateAccessEntry",),
        delete=("eks:DeleteAccessEntry",),
        tag=_EKS_TAGS,
        scope=("arn:aws:eks:*:*:cluster/{cluster}", "arn:aws:eks:*:*:access-entry/{cluster}/*"),
    ),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": TypeActions(
        "internal/service/eks/access_policy_association.go",
        create=("eks:AssociateAccessPolicy",),
        read=("eks:ListAssociatedAccessPolicies",),
        delete=("eks:DisassociateAccessPolicy",),
        scope=("arn:aws:eks:*:*:access-entry/{cluster}/*",),
    ),
    "aws:eks/addon:Addon": TypeActions(
        "internal/service/eks/addon.go",
        create=("eks:CreateAddon",),
        read=("eks:DescribeAddon",),
        update=("eks:UpdateAddon",),
        delete=("eks:DeleteAddon",),
        tag=_EKS_TAGS,
        scope=("arn:aws:eks:*:*:cluster/{cluster}", "arn:aws:eks:*:*:addon/{cluster}/*"),
        passes_role_to=("eks.amazonaws.com", "pods.eks.amazonaws.com"),
    ),
    "aws:eks/cluster:Cluster": TypeActions(
        "internal/service/eks/cluster.go",
        # Envelope encryption of secrets: EKS creates a grant on the key as the caller.
        create=("eks:CreateCluster", "kms:DescribeKey", "kms:CreateGrant"),
        read=("eks:DescribeCluster", "eks:DescribeUpdate", "eks:ListTagsForResource"),
        update=(
            "eks:UpdateClusterConfig",
            "eks:UpdateClusterVersion",
            "eks:AssociateEncryptionConfig",
        ),
        delete=("eks:DeleteCluster",),
        tag=_EKS_TAGS,
        scope=("arn:aws:eks:*:*:cluster/{cluster}", "arn:aws:kms:*:*:key/*"),
        passes_role_to=("eks.amazonaws.com",),
        service_linked=("eks.amazonaws.com",),
    ),
    "aws:eks/nodeGroup:NodeGroup": TypeActions(
        "internal/service/eks/node_group.go",
        create=("eks:CreateNodegroup",),
        read=("eks:DescribeNodegroup", "eks:DescribeUpdate"),
        update=("eks:UpdateNodegroupConfig", "eks:UpdateNodegroupVersion"),
        delete=("eks:DeleteNodegroup",),
        tag=_EKS_TAGS,
        scope=(
            "arn:aws:eks:*:*:cluster/{cluster}",
            "arn:aws:eks:*:*:nodegroup/{cluster}/*/*",
        ),
        passes_role_to=("ec2.amazonaws.com",),
        service_linked=("eks-nodegroup.amazonaws.com",),
    ),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": TypeActions(
        "internal/service/eks/pod_identity_association.go",
        create=("eks:CreatePodIdentityAssociation",),
        read=("eks:DescribePodIdentityAssociation",),
        update=("eks:UpdatePodIdentityAssociation",),
        delete=("eks:DeletePodIdentityAssociation",),
        tag=_EKS_TAGS,
        scope=(
            "arn:aws:eks:*:*:cluster/{cluster}",
            "arn:aws:eks:*:*:podidentityassociation/{cluster}/*",
        ),
        passes_role_to=("pods.eks.amazonaws.com",),
    ),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": TypeActions(
        "internal/service/fsx/data_repository_association.go",
        # The service-linked role FSx reaches the bucket with: SERVICE_LINKED_ROLE_CALLS.
        create=("fsx:CreateDataRepositoryAssociation",),
        read=("fsx:DescribeDataRepositoryAssociations", "fsx:ListTagsForResource"),
        update=("fsx:UpdateDataRepositoryAssociation",),
        delete=("fsx:DeleteDataRepositoryAssociation",),
        tag=("fsx:TagResource", "fsx:UntagResource"),
        service_linked=("s3.data-source.lustre.fsx.amazonaws.com",),
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": TypeActions(
        "internal/service/fsx/lustre_file_system.go",
        # Encrypted with a customer managed key: FSx makes a grant on it as the caller.
        create=("fsx:CreateFileSystem", "kms:DescribeKey", "kms:CreateGrant"),
        read=("fsx:DescribeFileSystems", "fsx:ListTagsForResource"),
        update=("fsx:UpdateFileSystem",),
        delete=("fsx:DeleteFileSystem",),
        tag=("fsx:TagResource", "fsx:UntagResource"),
        service_linked=("fsx.amazonaws.com",),
    ),
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": TypeActions(
        "internal/service/iam/openid_connect_provider.go",
        create=("iam:CreateOpenIDConnectProvider",),
        read=("iam:GetOpenIDConnectProvider",),
        update=(
            "iam:UpdateOpenIDConnectProviderThumbprint",
            "iam:AddClientIDToOpenIDConnectProvider",
            "iam:RemoveClientIDFromOpenIDConnectProvider",
        ),
        delete=("iam:DeleteOpenIDConnectProvider",),
        tag=("iam:TagOpenIDConnectProvider", "iam:UntagOpenIDConnectProvider"),
        # Only EKS clusters' issuers.
        scope=("arn:aws:iam::*:oidc-provider/oidc.eks.*.amazonaws.com/id/*",),
    ),
    "aws:iam/role:Role": TypeActions(
        "internal/service/iam/role.go",
        create=("iam:CreateRole",),
        read=(
            "iam:GetRole",
            "iam:ListRolePolicies",
            "iam:ListAttachedRolePolicies",
            "iam:ListInstanceProfilesForRole",
        ),
        update=("iam:UpdateRole", "iam:UpdateRoleDescription", "iam:UpdateAssumeRolePolicy"),
        delete=("iam:DeleteRole",),
        tag=("iam:TagRole", "iam:UntagRole"),
        scope=("arn:aws:iam::*:role/{name}",),
    ),
    "aws:iam/rolePolicy:RolePolicy": TypeActions(
        "internal/service/iam/role_policy.go",
        create=("iam:PutRolePolicy",),
        read=("iam:GetRolePolicy",),
        delete=("iam:DeleteRolePolicy",),
        scope=("arn:aws:iam::*:role/{role}",),
    ),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": TypeActions(
        "internal/service/iam/role_policy_attachment.go",
        create=("iam:AttachRolePolicy",),
        read=("iam:ListAttachedRolePolicies",),
        delete=("iam:DetachRolePolicy",),
        scope=("arn:aws:iam::*:role/{role}",),
        policy_arn_input="policyArn",
    ),
    "aws:kms/alias:Alias": TypeActions(
        "internal/service/kms/alias.go",
        # CreateAlias is authorized on the alias and on the key it names.
        create=("kms:CreateAlias",),
        read=("kms:ListAliases",),
        update=("kms:UpdateAlias",),
        delete=("kms:DeleteAlias",),
        scope=("arn:aws:kms:*:*:{name}", "arn:aws:kms:*:*:key/*"),
    ),
    "aws:kms/key:Key": TypeActions(
        "internal/service/kms/key.go",
        create=("kms:CreateKey", "kms:EnableKeyRotation"),
        read=(
            "kms:DescribeKey",
            "kms:GetKeyPolicy",
            "kms:GetKeyRotationStatus",
            "kms:ListResourceTags",
        ),
        update=(
            "kms:PutKeyPolicy",
            "kms:UpdateKeyDescription",
            "kms:EnableKeyRotation",
            "kms:DisableKeyRotation",
        ),
        delete=("kms:ScheduleKeyDeletion",),
        tag=("kms:TagResource", "kms:UntagResource"),
    ),
    "aws:s3/bucket:Bucket": TypeActions(
        "internal/service/s3/bucket.go",
        create=("s3:CreateBucket",),
        # Read fetches every bucket setting the v5 resource still models.
        read=(
            "s3:ListBucket",
            "s3:GetBucketAcl",
            "s3:GetBucketCORS",
            "s3:GetBucketWebsite",
            "s3:GetBucketVersioning",
            "s3:GetAccelerateConfiguration",
            "s3:GetBucketRequestPayment",
            "s3:GetBucketLogging",
            "s3:GetLifecycleConfiguration",
            "s3:GetReplicationConfiguration",
            "s3:GetEncryptionConfiguration",
            "s3:GetBucketObjectLockConfiguration",
            "s3:GetBucketPolicy",
            "s3:GetBucketTagging",
        ),
        delete=("s3:DeleteBucket",),
        tag=("s3:PutBucketTagging",),
        # Bucket ARNs take no tag condition for these calls; Pulumi's auto-name is the
        # logical name plus a suffix.
        scope=_S3_BUCKET,
    ),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": TypeActions(
        "internal/service/s3/bucket_lifecycle_configuration.go",
        create=("s3:PutLifecycleConfiguration",),
        read=("s3:GetLifecycleConfiguration",),
        scope=_S3_BUCKET,
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": TypeActions(
        "internal/service/s3/bucket_public_access_block.go",
        create=("s3:PutBucketPublicAccessBlock",),
        read=("s3:GetBucketPublicAccessBlock",),
        scope=_S3_BUCKET,
    ),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        TypeActions(
            "internal/service/s3/bucket_server_side_encryption_configuration.go",
            create=("s3:PutEncryptionConfiguration",),
            read=("s3:GetEncryptionConfiguration",),
            scope=_S3_BUCKET,
        )
    ),
    "aws:s3/bucketVersioning:BucketVersioning": TypeActions(
        "internal/service/s3/bucket_versioning.go",
        create=("s3:PutBucketVersioning",),
        read=("s3:GetBucketVersioning",),
        scope=_S3_BUCKET,
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": TypeActions(
        "internal/service/ec2/vpc_security_group_egress_rule.go",
        create=("ec2:AuthorizeSecurityGroupEgress",),
        read=("ec2:DescribeSecurityGroupRules",),
        update=("ec2:ModifySecurityGroupRules",),
        delete=("ec2:RevokeSecurityGroupEgress",),
        # Tagged on create through ec2:CreateTags, which the tagged rows grant.
        scope=None,
        unscoped=_SG_RULE_UNSCOPED,
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": TypeActions(
        "internal/service/ec2/vpc_security_group_ingress_rule.go",
        create=("ec2:AuthorizeSecurityGroupIngress",),
        read=("ec2:DescribeSecurityGroupRules",),
        update=("ec2:ModifySecurityGroupRules",),
        delete=("ec2:RevokeSecurityGroupIngress",),
        # Tagged on create through ec2:CreateTags, which the tagged rows grant.
        scope=None,
        unscoped=_SG_RULE_UNSCOPED,
    ),
}


# What the runner calls on a service-linked role beyond creating it, by service: AWS makes the
# role in the caller's name and the caller's policy must allow these on the role's path,
# arn:<partition>:iam::*:role/aws-service-role/<service>/*.
SERVICE_LINKED_ROLE_CALLS: dict[str, tuple[str, ...]] = {
    # FSx for Lustre User Guide, "Adding permissions to use data repositories in Amazon S3"
    # (setting-up.md): FSx makes a role per file system linked to S3
    # (AWSServiceRoleForFSxS3Access_<file system id>) and attaches and puts its policies as the
    # caller; without both it falls back to rewriting the bucket's policy, which the runner may
    # not do either, and the association fails.
    "s3.data-source.lustre.fsx.amazonaws.com": ("iam:AttachRolePolicy", "iam:PutRolePolicy"),
}


# Types the runner's AWS principal makes no AWS call for: Kubernetes objects go to the cluster's
# API server (authorized by the runner's EKS access entry, not IAM actions), random values are
# made locally, the stack and components are not cloud resources.
NO_AWS_CALLS = (
    "kubernetes:",
    "pulumi:providers:kubernetes",
    "pulumi:pulumi:Stack",
    "random:",
    "gpu-platform:",
)
