"""The control plane's config: EKS settings, or how to reach an existing cluster."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from infra.config.base import (
    DnsLabel,
    FieldProblem,
    KmsKeyArn,
    PrincipalArn,
    SecurityGroupId,
    Settings,
    _check_retention,
    _one_key_source,
)
from infra.versions import DEFAULT_KUBERNETES_VERSION, SUPPORTED_KUBERNETES_VERSIONS

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
        "standard support is allowed (extended support, billed extra); the plan warns.",
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
        description="Who may reach a public API endpoint. Narrow this to your office/VPN ranges.",
    )
    service_ipv4_cidr: IPv4Network = Field(
        IPv4Network("172.20.0.0/16"),
        description="Kubernetes Service CIDR; must not overlap the VPC.",
    )
    log_types: list[Literal[CONTROL_PLANE_LOG_TYPES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(CONTROL_PLANE_LOG_TYPES),
        description="Control-plane log types sent to CloudWatch.",
    )
    log_retention_days: int = Field(
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
        if value not in SUPPORTED_KUBERNETES_VERSIONS:
            raise ValueError(
                f"{value!r} is not supported; valid: {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}"
            )
        return value

    @model_validator(mode="after")
    def _someone_reaches_the_api(self) -> ClusterSettings:
        # Without a path from the runner, every Kubernetes resource of the first `up` times out.
        private_path = self.api_access_cidrs or self.api_access_security_group_ids
        if self.endpoint_private_only and not private_path:
            raise FieldProblem(
                "api_access_cidrs",
                "endpoint_private_only: true (the default under production: true) but nothing "
                "may reach the private endpoint: give api_access_cidrs (the runner's subnet, "
                "VPN or peered range) or api_access_security_group_ids (the runner's security "
                "group), or make the endpoint public with public_access_cidrs",
            )
        return self

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        return _check_retention(value)

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

    @model_validator(mode="after")
    def _one_kubeconfig(self) -> ExistingClusterSettings:
        if (self.kubeconfig_path is None) == (self.kubeconfig is None):
            raise FieldProblem(
                "kubeconfig_path",
                "set exactly one of kubeconfig_path or kubeconfig (secret)",
            )
        return self


class NamespaceSettings(Settings):
    system: DnsLabel = Field("gpu-platform", description="Namespace of the platform's add-ons.")
    training: DnsLabel = Field("training", description="Namespace of training jobs.")
