"""The control plane's config: EKS settings, or how to reach an existing cluster."""

from __future__ import annotations

import re
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from model.config.base import (
    DnsLabel,
    FieldProblem,
    KmsKeyArn,
    PrincipalArn,
    RetentionDays,
    SecurityGroupId,
    Settings,
    _one_key_source,
)
from model.config.onprem import (
    ExistingAddonsSettings,
    ExistingKubePrometheusStackSettings,
    OnPremGpuPoolSettings,
)
from model.config.references import K8S_NAMESPACE, TEAM_NAMESPACE, names
from model.versions import DEFAULT_KUBERNETES_VERSION, SUPPORTED_KUBERNETES_VERSIONS, minor_tuple

# EKS API reference, KubernetesNetworkConfigRequest.serviceIpv4Cidr: a block inside one of
# these private ranges, between /12 and /24, that does not overlap the VPC.
SERVICE_CIDR_RANGES = tuple(
    IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
)
SERVICE_CIDR_PREFIXES = (12, 24)
# EKS service quotas: "Public endpoint access CIDR ranges per cluster", 40, not adjustable.
MAX_PUBLIC_ACCESS_CIDRS = 40

CONTROL_PLANE_LOG_TYPES = (
    "api",
    "audit",
    "authenticator",
    "controllerManager",
    "scheduler",
)


class ClusterSettings(Settings):
    """The Kubernetes control plane (EKS on AWS; its version for an existing cluster)."""

    kubernetes_version: str = Field(
        DEFAULT_KUBERNETES_VERSION,
        description='Kubernetes minor, quoted ("1.35"). Pins the EKS version, the add-on '
        "versions, and the schema every manifest is validated against. A minor past its EKS "
        "standard support is allowed (extended support, billed extra); the plan warns. An "
        "existing cluster may run a minor older than EKS serves, down to the oldest its "
        "installed charts' kubeVersion admits; the plan warns what is untested there.",
    )
    extended_support: bool = Field(
        False,
        description="Keep the cluster in EKS extended support once its minor's standard support "
        "ends, instead of letting EKS upgrade it automatically. Always on for a minor that is "
        "already in extended support.",
    )
    endpoint_private_only: bool = Field(
        False,
        description="API server reachable only from inside the VPC (production default). "
        "Otherwise public, limited to public_access_cidrs.",
    )
    public_access_cidrs: list[IPv4Network] = Field(
        default_factory=lambda: [IPv4Network("0.0.0.0/0")],
        min_length=1,
        max_length=MAX_PUBLIC_ACCESS_CIDRS,
        description="Who may reach a public API endpoint (at most 40 ranges, an EKS limit). "
        "The default, 0.0.0.0/0 as in EKS, is the whole internet: the plan reports it "
        "(advisory api-endpoint-world-open). Narrow this to your runners' and office/VPN ranges.",
    )
    service_ipv4_cidr: IPv4Network = Field(
        IPv4Network("172.20.0.0/16"),
        description="Kubernetes Service CIDR; must not overlap the VPC.",
    )
    log_types: list[Literal[CONTROL_PLANE_LOG_TYPES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(CONTROL_PLANE_LOG_TYPES),
        description="Control-plane log types sent to CloudWatch.",
    )
    log_retention_days: RetentionDays = Field(
        90,
        description="Control-plane log retention in days; the group holds the audit log "
        "(production default: 365).",
    )
    log_kms_key_arn: KmsKeyArn | None = Field(
        None,
        description="Customer managed KMS key that encrypts the control-plane log group; its "
        "key policy must let logs.<region>.amazonaws.com use it. Default: CloudWatch Logs' own "
        "encryption, unless create_log_kms_key.",
    )
    create_log_kms_key: bool = Field(
        False,
        description="Create a rotated KMS key for the control-plane log group alone, usable "
        "only by CloudWatch Logs for that group.",
    )
    admin_principal_arns: list[PrincipalArn] = Field(
        default_factory=list,
        description="IAM roles or users granted cluster-admin through EKS access entries "
        "(authentication mode API). List the principal that runs `pulumi up` here: the creator "
        "gets no implicit admin, and an AWS stack that grants nobody is refused.",
    )
    api_access_cidrs: list[IPv4Network] = Field(
        default_factory=list,
        description="Where the `pulumi up` runner and admins reach the private API endpoint "
        "from (runner subnets inside the VPC, VPN or peered ranges): admitted on TCP 443 to the "
        "cluster security group.",
    )
    api_access_security_group_ids: list[SecurityGroupId] = Field(
        default_factory=list,
        description="Security groups (of runners inside the VPC) admitted on TCP 443 to the "
        "cluster security group.",
    )
    deletion_protection: bool = Field(
        False, description="Refuse to delete the cluster (production default)."
    )
    node_ssm_access: bool = Field(
        True, description="Let SSM Session Manager reach nodes (no SSH keys, no open ports)."
    )

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        if isinstance(value, float):
            raise ValueError(f'{value} is a number; quote it, e.g. "{DEFAULT_KUBERNETES_VERSION}"')
        valid = ", ".join(SUPPORTED_KUBERNETES_VERSIONS)
        # Older minors are the provider's to judge (model/config/kubernetes_minor.py).
        if not (isinstance(value, str) and re.fullmatch(r"1\.(0|[1-9][0-9]?)", value)):
            raise ValueError(f"{value!r} is not a Kubernetes minor; valid: {valid}")
        if minor_tuple(value) > minor_tuple(SUPPORTED_KUBERNETES_VERSIONS[-1]):
            raise ValueError(f"{value!r} is not supported yet; valid: {valid}")
        return value

    @field_validator("service_ipv4_cidr")
    @classmethod
    def _service_cidr(cls, value: IPv4Network) -> IPv4Network:
        low, high = SERVICE_CIDR_PREFIXES
        if not any(value.subnet_of(r) for r in SERVICE_CIDR_RANGES):
            raise ValueError(
                f"{value} is outside the ranges EKS accepts for services: "
                f"{', '.join(map(str, SERVICE_CIDR_RANGES))}"
            )
        if not low <= value.prefixlen <= high:
            raise ValueError(
                f"{value} is a /{value.prefixlen}; EKS accepts a service range from /{low} "
                f"to /{high}"
            )
        return value

    @model_validator(mode="after")
    def _one_log_key(self) -> ClusterSettings:
        _one_key_source(self, "log_kms_key_arn", "create_log_kms_key")
        return self


class ExistingClusterSettings(Settings):
    """An existing, conformant cluster (provider existing): how to reach it."""

    name: DnsLabel = Field(description="The cluster's name, used in labels and dashboards.")
    kubeconfig_path: str | None = Field(
        None, description="Path to a kubeconfig on the machine that runs `pulumi up`."
    )
    kubeconfig: SecretStr | None = Field(
        None,
        description="Kubeconfig contents as a secret: "
        '`pulumi config set --secret --path gpu-platform:existing.kubeconfig "$(cat kc)"`.',
    )
    context: str | None = Field(None, description="Kubeconfig context; default: current context.")
    gpu_pools: list[OnPremGpuPoolSettings] = Field(
        default_factory=list,
        description="The cluster's GPU nodes, one entry per kind (GPU model and count, fabric, "
        "sharing), selected by labels they already carry.",
    )
    addons: ExistingAddonsSettings = Field(
        default_factory=ExistingAddonsSettings,
        description="Which add-ons the platform installs and which it takes from the cluster.",
    )
    kube_prometheus_stack: ExistingKubePrometheusStackSettings | None = Field(
        None,
        description="Where the cluster's own kube-prometheus-stack answers, with "
        "addons.kube_prometheus_stack: existing. Default: a release named "
        "kube-prometheus-stack.",
    )
    namespaces: list[DnsLabel] = Field(
        default_factory=list,
        description="Namespaces of the platform's (namespaces.*, scheduling.teams[].name) "
        "that the cluster already has: the platform patches its labels onto them "
        "(NamespacePatch) instead of creating them, which `up` would refuse (AlreadyExists), "
        "and a destroy leaves them and what they hold.",
    )

    @model_validator(mode="after")
    def _prometheus_only_when_existing(self) -> ExistingClusterSettings:
        if self.kube_prometheus_stack is not None and self.addons.kube_prometheus_stack != (
            "existing"
        ):
            raise FieldProblem(
                "kube_prometheus_stack",
                "describes the cluster's own kube-prometheus-stack: set addons."
                "kube_prometheus_stack: existing, or remove it (the platform's release names "
                "its own services)",
            )
        return self

    def prometheus(self) -> ExistingKubePrometheusStackSettings:
        """The cluster's kube-prometheus-stack as the stack describes it, or as a release
        named kube-prometheus-stack."""
        return self.kube_prometheus_stack or ExistingKubePrometheusStackSettings()

    @model_validator(mode="after")
    def _one_kubeconfig(self) -> ExistingClusterSettings:
        if (self.kubeconfig_path is None) == (self.kubeconfig is None):
            raise FieldProblem(
                "kubeconfig_path",
                "set exactly one of kubeconfig_path or kubeconfig (secret)",
            )
        return self


class NamespaceSettings(Settings):
    system: Annotated[DnsLabel, names(K8S_NAMESPACE)] = Field(
        "gpu-platform", description="Namespace of the platform's add-ons."
    )
    training: Annotated[DnsLabel, names(K8S_NAMESPACE, TEAM_NAMESPACE)] = Field(
        "training", description="Namespace of training jobs."
    )
    monitoring: Annotated[DnsLabel, names(K8S_NAMESPACE)] = Field(
        "monitoring", description="Namespace of Prometheus, Alertmanager and Grafana."
    )
    selftest: Annotated[DnsLabel, names(K8S_NAMESPACE)] = Field(
        "gpu-platform-selftest",
        description="Namespace of the self-test's runs and of its ServiceAccount, which may "
        "read and (selftest.cordon_on_fail) patch nodes: the platform's own, never a team's, "
        "since any pod of a namespace may run as its accounts.",
    )
