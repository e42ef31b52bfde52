"""The control plane's config: EKS settings, or how to reach an existing cluster."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from infra.config.base import (
    DnsLabel,
    FieldProblem,
    KmsKeyArn,
    RoleArn,
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
        description='Kubernetes minor, quoted ("1.34"). Pins the EKS version, the add-on '
        "versions, and the schema every manifest is validated against.",
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
    admin_role_arns: list[RoleArn] = Field(
        default_factory=list,
        description="IAM roles granted cluster-admin through EKS access entries (authentication "
        "mode API). The creator gets no implicit admin: list every admin here.",
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
