"""Control plane: an EKS cluster on AWS, or an existing cluster reached through a kubeconfig.

Both hand later components the same `ClusterHandle`, so nothing downstream asks which one it got.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml

from components.base import PlatformComponent
from components.context import StackContext
from components.iam import (
    account_id,
    eks_trust_policy,
    pod_identity_trust_policy,
    role_with_policies,
)
from components.kms import eks_secrets_key_policy, rotated_kms_key
from components.log_groups import declare_log_group
from model.config import ClusterSettings, ExistingClusterSettings
from model.versions import MANAGED_ADDONS, ManagedAddon, addon_build_report, in_extended_support

CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
CLUSTER_POLICIES = ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",)

# --------------------------------------------------------------------------- pure builders


def kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig that authenticates with `aws eks get-token`, so it holds no credential."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region],
            "interactiveMode": "Never",
        }
    }
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster_name,
                    "cluster": {"server": endpoint, "certificate-authority-data": ca_data},
                }
            ],
            "users": [{"name": cluster_name, "user": user}],
            "contexts": [
                {"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}
            ],
            "current-context": cluster_name,
        },
        sort_keys=False,
    )


def addons_for(kubernetes_version: str, needs_nodes: bool) -> list[tuple[ManagedAddon, str]]:
    """The managed add-ons of one phase, each with its version pinned for the cluster's minor."""
    return [
        (addon, addon.versions[kubernetes_version])
        for addon in MANAGED_ADDONS
        if addon.needs_nodes == needs_nodes
    ]


def endpoint_access(cluster: ClusterSettings) -> dict:
    """API endpoint exposure: private always (nodes use it); public only when allowed."""
    public = not cluster.endpoint_private_only
    return {
        "endpoint_private_access": True,
        "endpoint_public_access": public,
        "public_access_cidrs": [str(c) for c in cluster.public_access_cidrs] if public else None,
    }


def support_type(cluster: ClusterSettings, today: date) -> str:
    """EKS upgrade policy: EXTENDED when asked for, or when the minor is already past standard
    support (EKS refuses STANDARD for a cluster running in extended support)."""
    extended = cluster.extended_support or in_extended_support(cluster.kubernetes_version, today)
    return "EXTENDED" if extended else "STANDARD"


def api_ingress_rules(cluster: ClusterSettings) -> list[dict]:
    """Who may reach the API endpoint's private addresses besides the nodes: the `pulumi up`
    runner and admins, on HTTPS only, each rule described."""
    https = {"ip_protocol": "tcp", "from_port": 443, "to_port": 443}
    rules = [
        {**https, "cidr_ipv4": str(cidr), "description": f"Kubernetes API from {cidr}"}
        for cidr in cluster.api_access_cidrs
    ]
    rules += [
        {
            **https,
            "referenced_security_group_id": sg,
            "description": f"Kubernetes API from security group {sg}",
        }
        for sg in cluster.api_access_security_group_ids
    ]
    return rules


# ------------------------------------------------------------------------------ handle


@dataclass
class ClusterHandle:
    """What later components wire to, whichever way the cluster came to be."""

    name: pulumi.Input[str]
    kubernetes_version: str
    kubernetes: k8s.Provider
    # EKS's own version output: node groups follow it, so they roll after the control plane.
    eks_version: pulumi.Input[str] | None = None
    oidc_provider_arn: pulumi.Input[str] | None = None
    security_group_id: pulumi.Input[str] | None = None
    # What nodes wait for (add-ons they need to join), and what pods wait for (nodes to run
    # on); an existing cluster has both already.
    ready: list[pulumi.Resource] = field(default_factory=list)
    schedulable: list[pulumi.Resource] = field(default_factory=list)


# ------------------------------------------------------------------------------ EKS


@dataclass(frozen=True)
class EksControlPlaneArgs:
    context: StackContext
    region: str
    cluster: ClusterSettings
    subnet_ids: Sequence[pulumi.Input[str]]


class EksControlPlane(PlatformComponent):
    """EKS with KMS-encrypted secrets, control-plane logs, access entries, Pod Identity and OIDC,
    the add-ons nodes need to join, and a Kubernetes provider for the cluster."""

    PLANE = "control"

    def __init__(
        self, name: str, args: EksControlPlaneArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        env, settings = args.context.env, args.cluster

        role = role_with_policies(f"{env}-eks-cluster", eks_trust_policy(), CLUSTER_POLICIES, self)
        key = rotated_kms_key(
            f"{env}-eks-secrets",
            f"EKS secrets envelope encryption for {args.context.cluster_name}",
            f"{args.context.cluster_name}-secrets",
            self,
            args.context.protect,
            pulumi.Output.all(account_id(self), role.arn).apply(
                lambda v: eks_secrets_key_policy(v[0], v[1])
            ),
        )
        # EKS creates this group on first log write with no retention; owning it sets one.
        log_group = declare_log_group(
            f"{env}-eks-logs",
            f"/aws/eks/{args.context.cluster_name}/cluster",
            settings.log_retention_days,
            settings.log_kms_key_arn,
            settings.create_log_kms_key,
            args.region,
            self,
            args.context.protect,
        )
        cluster = aws.eks.Cluster(
            f"{env}-eks",
            aws.eks.ClusterArgs(
                name=args.context.cluster_name,
                version=settings.kubernetes_version,
                role_arn=role.arn,
                vpc_config=aws.eks.ClusterVpcConfigArgs(
                    subnet_ids=list(args.subnet_ids), **endpoint_access(settings)
                ),
                access_config=aws.eks.ClusterAccessConfigArgs(
                    authentication_mode="API",
                    # Creator admin is an access entry EKS makes outside the program's state:
                    # it cannot be reviewed, nor removed without replacing the cluster. The
                    # deploying principal is listed in admin_principal_arns instead.
                    bootstrap_cluster_creator_admin_permissions=False,
                ),
                encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                    resources=["secrets"],
                    provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn),
                ),
                kubernetes_network_config=aws.eks.ClusterKubernetesNetworkConfigArgs(
                    service_ipv4_cidr=str(settings.service_ipv4_cidr), ip_family="ipv4"
                ),
                enabled_cluster_log_types=list(settings.log_types),
                # Add-ons are managed below, pinned; EKS's unmanaged copies would fight them.
                bootstrap_self_managed_addons=False,
                deletion_protection=settings.deletion_protection,
                upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(
                    support_type=support_type(settings, date.today())
                ),
            ),
            # The cluster's name is fixed (gpu-platform-<stack>): a replacement created first
            # would collide on it, so the old one goes first (the plan says so).
            self.child(
                depends_on=[log_group], protect=args.context.protect, delete_before_replace=True
            ),
        )

        access: list[pulumi.Resource] = []
        for i, principal in enumerate(settings.admin_principal_arns):
            entry = aws.eks.AccessEntry(
                f"{env}-admin-{i}",
                aws.eks.AccessEntryArgs(
                    cluster_name=cluster.name, principal_arn=principal, type="STANDARD"
                ),
                self.child(),
            )
            association = aws.eks.AccessPolicyAssociation(
                f"{env}-admin-{i}",
                aws.eks.AccessPolicyAssociationArgs(
                    cluster_name=cluster.name,
                    principal_arn=principal,
                    policy_arn=CLUSTER_ADMIN_POLICY,
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                ),
                # One association per principal and policy: see components/control/team_access.py.
                self.child(depends_on=[entry], delete_before_replace=True),
            )
            access += [entry, association]

        cluster_sg = cluster.vpc_config.cluster_security_group_id
        for i, rule in enumerate(api_ingress_rules(settings)):
            aws.vpc.SecurityGroupIngressRule(
                f"{env}-api-access-{i}",
                aws.vpc.SecurityGroupIngressRuleArgs(security_group_id=cluster_sg, **rule),
                self.child(),
            )

        # IRSA for charts that still want it; add-ons here use Pod Identity.
        oidc = aws.iam.OpenIdConnectProvider(
            f"{env}-oidc",
            aws.iam.OpenIdConnectProviderArgs(
                url=cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer),
                client_id_lists=["sts.amazonaws.com"],
            ),
            self.child(),
        )

        self.addons = declare_addons(
            self, env, cluster.name, settings.kubernetes_version, needs_nodes=False
        )

        config = pulumi.Output.all(
            cluster.name, cluster.endpoint, cluster.certificate_authority.data
        ).apply(lambda v: kubeconfig(v[0], v[1], v[2], args.region))
        self.kubeconfig = pulumi.Output.secret(config)
        provider = k8s.Provider(
            f"{env}-k8s",
            k8s.ProviderArgs(kubeconfig=self.kubeconfig, enable_server_side_apply=True),
            # Every Kubernetes resource goes through this provider: until the access entries
            # and their policies exist, the API answers the runner with Unauthorized.
            self.child(depends_on=access),
        )
        self.cluster = cluster
        self.handle = ClusterHandle(
            name=cluster.name,
            kubernetes_version=settings.kubernetes_version,
            kubernetes=provider,
            eks_version=cluster.version,
            oidc_provider_arn=oidc.arn,
            security_group_id=cluster.vpc_config.cluster_security_group_id,
            ready=list(self.addons),
        )
        # Stack outputs: how to reach the cluster, and each managed add-on's build on its version.
        self.outputs = {
            "region": args.region,
            "cluster_name": cluster.name,
            "cluster_endpoint": cluster.endpoint,
            "kubeconfig": self.kubeconfig,
            "oidc_provider_arn": oidc.arn,
            "addon_builds": addon_build_report(settings.kubernetes_version),
        }
        self.register_outputs(self.outputs)


def declare_addons(
    owner: PlatformComponent,
    env: str,
    cluster_name: pulumi.Input[str],
    kubernetes_version: str,
    needs_nodes: bool,
    after: Sequence[pulumi.Resource] = (),
) -> list[aws.eks.Addon]:
    """The managed add-ons of one phase, as children of `owner`, with Pod Identity roles."""
    declared: list[aws.eks.Addon] = []
    agent: list[aws.eks.Addon] = []
    for addon, version in addons_for(kubernetes_version, needs_nodes):
        associations = None
        if addon.service_account:
            role = role_with_policies(
                f"{env}-{addon.name}",
                pod_identity_trust_policy(),
                [addon.managed_policy_arn],
                owner,
            )
            associations = [
                aws.eks.AddonPodIdentityAssociationArgs(
                    role_arn=role.arn, service_account=addon.service_account
                )
            ]
        declared.append(
            aws.eks.Addon(
                f"{env}-{addon.name}",
                aws.eks.AddonArgs(
                    cluster_name=cluster_name,
                    addon_name=addon.name,
                    addon_version=version,
                    configuration_values=(
                        json.dumps(addon.configuration, sort_keys=True)
                        if addon.configuration
                        else None
                    ),
                    pod_identity_associations=associations,
                    resolve_conflicts_on_create="OVERWRITE",
                    resolve_conflicts_on_update="PRESERVE",
                ),
                # Pod Identity credentials come through the agent: it goes first.
                owner.child(depends_on=[*after, *(agent if associations else [])]),
            )
        )
        if addon.name == POD_IDENTITY_AGENT:
            agent = declared[-1:]
    return declared


@dataclass(frozen=True)
class ClusterAddonsArgs:
    context: StackContext
    cluster: ClusterHandle
    after: Sequence[pulumi.Resource] = ()


class ClusterAddons(PlatformComponent):
    """Managed add-ons that run pods (coredns, EBS CSI): declared once nodes can host them."""

    PLANE = "control"

    def __init__(
        self, name: str, args: ClusterAddonsArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        self.addons = declare_addons(
            self,
            args.context.env,
            args.cluster.name,
            args.cluster.kubernetes_version,
            needs_nodes=True,
            after=args.after,
        )
        self.register_outputs({"addons": [a.addon_name for a in self.addons]})


# ------------------------------------------------------------------------------ existing


@dataclass(frozen=True)
class ExistingClusterArgs:
    context: StackContext
    existing: ExistingClusterSettings
    kubernetes_version: str


class ExistingCluster(PlatformComponent):
    """A cluster someone else runs: only a Kubernetes provider, no AWS resource."""

    PLANE = "control"

    def __init__(
        self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        existing = args.existing
        source = (
            pulumi.Output.secret(existing.kubeconfig.get_secret_value())
            if existing.kubeconfig is not None
            else existing.kubeconfig_path
        )
        provider = k8s.Provider(
            f"{args.context.env}-k8s",
            k8s.ProviderArgs(
                kubeconfig=source, context=existing.context, enable_server_side_apply=True
            ),
            self.child(),
        )
        self.handle = ClusterHandle(
            name=existing.name, kubernetes_version=args.kubernetes_version, kubernetes=provider
        )
        self.outputs = {"cluster_name": existing.name}
        self.register_outputs(self.outputs)
