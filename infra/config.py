"""The one configuration model of the platform, and the only reader of Pulumi config.

Every knob is a field here, with a default, a description and a check. A stack file
(`stacks/Pulumi.<stack>.yaml`) holds only what differs from these defaults, under the
`gpu-platform:` namespace, so `pulumi config set --path gpu-platform:network.vpc_cidr ...` works.
Bad input raises `ConfigError` before any resource is declared, naming the stack file, the key
path, the bad value and what would be valid.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

import pulumi
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from infra.catalog import CATALOG
from infra.versions import DEFAULT_KUBERNETES_VERSION, SUPPORTED_KUBERNETES_VERSIONS

NAMESPACE = "gpu-platform"

# CloudWatch Logs accepts only these retention periods.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
)
CONTROL_PLANE_LOG_TYPES = (
    "api",
    "audit",
    "authenticator",
    "controllerManager",
    "scheduler",
)

DnsLabel = Annotated[
    str,
    Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", description="A DNS-1123 label."),
]
RoleArn = Annotated[
    str,
    Field(
        pattern=r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$",
        description="An IAM role ARN.",
    ),
]


class ConfigError(pulumi.RunError):
    """Invalid stack configuration. The Pulumi language host prints a RunError without a trace."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        noun = "problem" if len(problems) == 1 else "problems"
        lines = [f"{source}: invalid {NAMESPACE} configuration ({len(problems)} {noun}):"]
        lines += [f"  - {problem}" for problem in problems]
        lines.append("Nothing was declared. Fix the stack file, or `pulumi config set --path`.")
        super().__init__("\n".join(lines))


class FieldProblem(ValueError):
    """A cross-field rule broken at `field` (a path relative to the model that raised it)."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def _overlaps(named: list[tuple[str, IPv4Network]]) -> FieldProblem | None:
    for i, (name_a, net_a) in enumerate(named):
        for name_b, net_b in named[i + 1 :]:
            if net_a.overlaps(net_b):
                return FieldProblem(name_b, f"{net_b} overlaps {name_a} ({net_a})")
    return None


# ---------------------------------------------------------------------------------------- aws


class AwsSettings(Settings):
    """Where the platform lives on AWS. Required with `provider: aws`."""

    region: str = Field(
        pattern=r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$",
        description="AWS region, e.g. us-east-1. Every AWS resource goes through one provider "
        "pinned to it, so ambient AWS_REGION never changes where things land.",
    )
    zones: list[str] = Field(
        min_length=2,
        description="Availability zones for subnets, at least two (EKS requires two). GPU "
        "groups that talk over EFA are placed in one of them.",
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra tags on every AWS resource (provider default tags).",
    )

    @model_validator(mode="after")
    def _zones_in_region(self) -> AwsSettings:
        for i, zone in enumerate(self.zones):
            if not re.fullmatch(re.escape(self.region) + r"[a-z]", zone):
                raise FieldProblem(
                    f"zones[{i}]",
                    f"{zone!r} is not a zone of region {self.region}; expected e.g. {self.region}a",
                )
        if len(set(self.zones)) != len(self.zones):
            raise FieldProblem("zones", f"zones repeat: {self.zones}")
        return self


class NetworkSettings(Settings):
    """The VPC (provider aws)."""

    vpc_cidr: IPv4Network = Field(
        IPv4Network("10.0.0.0/16"),
        description="VPC CIDR; /16 leaves room for many GPU pods.",
    )
    public_subnet_cidrs: list[IPv4Network] | None = Field(
        None,
        description="One public subnet per zone, in zone order. Default: carved from vpc_cidr.",
    )
    private_subnet_cidrs: list[IPv4Network] | None = Field(
        None,
        description="One private subnet per zone, in zone order; nodes and pods live here. "
        "Default: the largest blocks carved from vpc_cidr.",
    )
    nat_gateways: Literal["single", "per_zone"] = Field(
        "single",
        description="`single` saves cost (dev); `per_zone` survives a zone outage "
        "(production default).",
    )
    vpc_endpoints: bool = Field(
        True,
        description="S3 gateway and ECR (api, dkr) and STS interface endpoints, so image pulls "
        "and credentials stay off the NAT gateways.",
    )
    flow_logs: bool = Field(False, description="VPC flow logs to CloudWatch (production default).")
    flow_log_retention_days: int = Field(90, description="Flow log retention in days.")

    @field_validator("flow_log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        return _check_retention(value)

    @model_validator(mode="after")
    def _subnets_inside_vpc(self) -> NetworkSettings:
        named = [("vpc_cidr", self.vpc_cidr)]
        for key in ("public_subnet_cidrs", "private_subnet_cidrs"):
            for i, cidr in enumerate(getattr(self, key) or []):
                if not cidr.subnet_of(self.vpc_cidr):
                    raise FieldProblem(
                        f"{key}[{i}]", f"{cidr} lies outside vpc_cidr {self.vpc_cidr}"
                    )
                named.append((f"{key}[{i}]", cidr))
        problem = _overlaps(named[1:])
        if problem:
            raise problem
        return self


def _check_retention(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        raise ValueError(
            f"{value} is not a CloudWatch retention; valid: {list(LOG_RETENTION_DAYS)}"
        )
    return value


# ------------------------------------------------------------------------------------ cluster


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
    log_retention_days: int = Field(90, description="Control-plane log retention in days.")
    admin_role_arns: list[RoleArn] = Field(
        default_factory=list,
        description="IAM roles granted cluster-admin through EKS access entries (authentication "
        "mode API). The creator gets no implicit admin: list every admin here.",
    )
    deletion_protection: bool = Field(
        False, description="Refuse to delete the cluster (production default)."
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


class Scaling(Settings):
    """Size bounds of a node group; cluster-autoscaler moves between min_size and max_size."""

    min_size: int = Field(0, ge=0, description="Fewest nodes; 0 lets the group scale to zero.")
    max_size: int = Field(1, ge=1, description="Most nodes.")
    desired_size: int | None = Field(
        None,
        description="Nodes at creation; default min_size. Later the autoscaler owns it.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Scaling:
        if self.min_size > self.max_size:
            raise FieldProblem("min_size", f"min_size {self.min_size} > max_size {self.max_size}")
        desired = self.desired_size
        if desired is not None and not self.min_size <= desired <= self.max_size:
            raise FieldProblem(
                "desired_size",
                f"desired_size {desired} outside [min_size {self.min_size}, "
                f"max_size {self.max_size}]",
            )
        return self

    @property
    def desired(self) -> int:
        return self.min_size if self.desired_size is None else self.desired_size


def _known_instance_type(value: str) -> str:
    if value not in CATALOG:
        close = difflib.get_close_matches(value, CATALOG, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"{value!r} is not in the instance catalog (infra/catalog.py); {hint}"
            f"known: {', '.join(sorted(CATALOG))}"
        )
    return value


InstanceTypeName = Annotated[str, AfterValidator(_known_instance_type)]


class SystemNodeSettings(Settings):
    """The small non-GPU node group that runs add-ons (provider aws)."""

    instance_types: list[InstanceTypeName] = Field(
        default_factory=lambda: ["m7i.xlarge"],
        min_length=1,
        description="Non-GPU types from the catalog; the first is the launch template default.",
    )
    scaling: Scaling = Field(default_factory=lambda: Scaling(min_size=2, max_size=4))
    root_volume_gib: int = Field(50, ge=20, le=16384, description="gp3 root volume size.")

    @field_validator("instance_types")
    @classmethod
    def _no_gpus(cls, value: list[str]) -> list[str]:
        for name in value:
            if CATALOG[name].gpus:
                raise ValueError(f"{name} has GPUs; system nodes use non-GPU types such as m7i")
        return value


class NamespaceSettings(Settings):
    system: DnsLabel = Field("gpu-platform", description="Namespace of the platform's add-ons.")
    training: DnsLabel = Field("training", description="Namespace of training jobs.")


# ----------------------------------------------------------------------------------- platform

# What `production: true` changes, unless the stack sets the key itself.
PRODUCTION_DEFAULTS: dict[tuple[str, str], Any] = {
    ("network", "nat_gateways"): "per_zone",
    ("network", "flow_logs"): True,
    ("cluster", "endpoint_private_only"): True,
    ("cluster", "deletion_protection"): True,
}


class PlatformConfig(Settings):
    """The whole platform, as one stack configures it."""

    provider: Literal["aws", "existing"] = Field(
        "aws",
        description="`aws`: declare VPC and EKS. `existing`: use a cluster you run.",
    )
    production: bool = Field(
        False,
        description="Production hardening: one NAT per zone, flow logs, private API endpoint, "
        "deletion protection, and protected stateful resources. Each can still be set alone.",
    )
    aws: AwsSettings | None = Field(None, description="Required with provider aws.")
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    existing: ExistingClusterSettings | None = Field(
        None, description="Required with provider existing."
    )
    system_nodes: SystemNodeSettings = Field(default_factory=SystemNodeSettings)
    namespaces: NamespaceSettings = Field(default_factory=NamespaceSettings)

    @model_validator(mode="before")
    @classmethod
    def _production_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("production") is not True:
            return data
        data = dict(data)
        for (section, key), value in PRODUCTION_DEFAULTS.items():
            if isinstance(data.get(section, {}), dict):
                data[section] = {key: value, **data.get(section, {})}
        return data

    @model_validator(mode="after")
    def _provider_sections(self) -> PlatformConfig:
        if self.provider == "aws":
            if self.aws is None:
                raise FieldProblem(
                    "aws", "required with provider aws; set aws.region and aws.zones"
                )
            if self.existing is not None:
                raise FieldProblem("existing", "only valid with provider existing")
            self._check_aws_network()
        else:
            if self.existing is None:
                raise FieldProblem(
                    "existing",
                    "required with provider existing; set existing.name and a kubeconfig",
                )
            for section in ("aws", "network", "system_nodes"):
                if section in self.model_fields_set:
                    raise FieldProblem(section, "only valid with provider aws")
        return self

    def _check_aws_network(self) -> None:
        zones = len(self.aws.zones)
        for key in ("public_subnet_cidrs", "private_subnet_cidrs"):
            given = getattr(self.network, key)
            if given is not None and len(given) != zones:
                raise FieldProblem(
                    f"network.{key}",
                    f"{len(given)} subnets for {zones} zones ({', '.join(self.aws.zones)}); "
                    "give exactly one per zone",
                )
        if self.network.vpc_cidr.overlaps(self.cluster.service_ipv4_cidr):
            raise FieldProblem(
                "cluster.service_ipv4_cidr",
                f"{self.cluster.service_ipv4_cidr} overlaps network.vpc_cidr "
                f"{self.network.vpc_cidr}",
            )
        if self.cluster.endpoint_private_only and "public_access_cidrs" in (
            self.cluster.model_fields_set
        ):
            raise FieldProblem(
                "cluster.public_access_cidrs",
                "has no effect with endpoint_private_only: true; remove one of them",
            )

    @property
    def protect_stateful(self) -> bool:
        return self.production


# ------------------------------------------------------------------------------------ loading


def stack_file(stack: str) -> str:
    return f"stacks/Pulumi.{stack}.yaml"


def parse_config(raw: dict[str, Any], source: str) -> PlatformConfig:
    """Validate raw config (keys without the namespace) into the model, or raise ConfigError."""
    try:
        return PlatformConfig.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(source, [_describe(e) for e in error.errors()]) from None


def load_config() -> PlatformConfig:
    """Read the `gpu-platform:` keys of the running stack and validate them."""
    from pulumi.runtime.config import CONFIG

    prefix = f"{NAMESPACE}:"
    raw = {
        key[len(prefix) :]: _decode(value)
        for key, value in sorted(CONFIG.get().items())
        if key.startswith(prefix)
    }
    return parse_config(raw, stack_file(pulumi.get_stack()))


def _decode(value: str) -> Any:
    """The CLI hands every value over as a string, with objects and lists as JSON."""
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


# ------------------------------------------------------------------------- error descriptions


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def _describe(error: dict[str, Any]) -> str:
    loc = tuple(error["loc"])
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, FieldProblem):
        loc += tuple(int(p) if p.isdigit() else p for p in re.split(r"\.|\[|\]", cause.field) if p)
        return f"{NAMESPACE}:{_path(loc)}: {cause}"
    path = f"{NAMESPACE}:{_path(loc)}"
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        valid = _keys_at(loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"{path}: unknown key; {hint}valid keys here: {', '.join(valid)}"
    if kind == "missing":
        return f"{path}: required value is missing"
    message = str(cause) if isinstance(cause, ValueError) else error["msg"]
    if kind == "literal_error":
        message = message.replace("Input should be", "valid values are")
    return f"{path}: {message} (got {value!r})"


def _unwrap(annotation: Any) -> Any:
    """The model class inside Optional[...] / list[...] / dict[..., ...], if any."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, tuple, dict, Annotated):
        for arg in typing.get_args(annotation):
            inner = _unwrap(arg)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return annotation


def _keys_at(loc: tuple[Any, ...]) -> list[str]:
    model: Any = PlatformConfig
    for part in loc:
        if isinstance(part, str):
            model = _unwrap(model.model_fields[part].annotation)
    return sorted(model.model_fields) if isinstance(model, type) else []
