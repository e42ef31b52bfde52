"""The one configuration model of the platform, and the only reader of Pulumi config.

One module per plane (`network`, `cluster`, `nodes`, `storage`) holds that plane's settings;
this module composes them into `PlatformConfig`, loads a stack and reports errors. Every knob is
a field, with a default, a description and a check. A stack file
(`stacks/Pulumi.<stack>.yaml`) holds only what differs from these defaults, under the
`gpu-platform:` namespace, so `pulumi config set --path gpu-platform:network.vpc_cidr ...` works.
Bad input raises `ConfigError` before any resource is declared, naming the stack file, the key
path, the bad value and what would be valid.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import types
import typing
from typing import Annotated, Any, Literal

import pulumi
from pydantic import BaseModel, Field, ValidationError, model_validator

from infra.catalog import CATALOG
from infra.config.base import (
    LOG_RETENTION_DAYS,
    NAMESPACE,
    ConfigError,
    DnsLabel,
    FieldProblem,
    InstanceTypeName,
    RoleArn,
    Settings,
)
from infra.config.cluster import (
    CONTROL_PLANE_LOG_TYPES,
    ClusterSettings,
    ExistingClusterSettings,
    NamespaceSettings,
)
from infra.config.network import AwsSettings, NetworkSettings, ZoneSubnets, subnet_layout
from infra.config.nodes import (
    DEFAULT_MAX_PODS,
    RESERVED_CAPACITY,
    AutoscalerSettings,
    CapacityType,
    GpuNodeGroupSettings,
    GpuSharingSettings,
    KubeletSettings,
    Scaling,
    SystemNodeSettings,
)
from infra.config.storage import (
    FSX_CAPACITY_STEP_GIB,
    FSX_DEPLOYMENT_TYPES,
    FSX_FIRST_CAPACITY_GIB,
    FSX_THROUGHPUT_TIERS,
    CephNetworkAttachmentSettings,
    CephNetworkSettings,
    CephNodeSettings,
    CephSettings,
    DataRepositorySettings,
    FsxSettings,
    NvmeCacheSettings,
    StorageSettings,
    check_storage,
    default_fsx_zone,
)

# What callers imported from the single module this package replaced keeps working.
__all__ = [
    "CONTROL_PLANE_LOG_TYPES",
    "DEFAULT_MAX_PODS",
    "FSX_CAPACITY_STEP_GIB",
    "FSX_DEPLOYMENT_TYPES",
    "FSX_FIRST_CAPACITY_GIB",
    "FSX_THROUGHPUT_TIERS",
    "LOG_RETENTION_DAYS",
    "NAMESPACE",
    "RESERVED_CAPACITY",
    "AutoscalerSettings",
    "AwsSettings",
    "CapacityType",
    "CephNetworkAttachmentSettings",
    "CephNetworkSettings",
    "CephNodeSettings",
    "CephSettings",
    "ClusterSettings",
    "ConfigError",
    "DataRepositorySettings",
    "DnsLabel",
    "ExistingClusterSettings",
    "FieldProblem",
    "FsxSettings",
    "GpuNodeGroupSettings",
    "GpuSharingSettings",
    "InstanceTypeName",
    "KubeletSettings",
    "NamespaceSettings",
    "NetworkSettings",
    "NvmeCacheSettings",
    "PlatformConfig",
    "RoleArn",
    "Scaling",
    "Settings",
    "StorageSettings",
    "SystemNodeSettings",
    "ZoneSubnets",
    "check_storage",
    "config_from_pulumi",
    "default_fsx_zone",
    "load_config",
    "parse_config",
    "stack_file",
    "subnet_layout",
]


# ----------------------------------------------------------------------------------- platform

# What `production: true` changes, unless the stack sets the key itself.
PRODUCTION_DEFAULTS: dict[tuple[str, str], Any] = {
    ("network", "nat_gateways"): "per_zone",
    ("network", "flow_logs"): True,
    # A year of flow and audit logs: what security reviews (and PCI DSS 10.5.1) ask for.
    ("network", "flow_log_retention_days"): 365,
    ("cluster", "log_retention_days"): 365,
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
        "deletion protection, a year of flow and control-plane (audit) logs, and protected "
        "stateful resources. Each can still be set alone.",
    )
    aws: AwsSettings | None = Field(None, description="Required with provider aws.")
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    existing: ExistingClusterSettings | None = Field(
        None, description="Required with provider existing."
    )
    system_nodes: SystemNodeSettings = Field(default_factory=SystemNodeSettings)
    gpu_node_groups: list[GpuNodeGroupSettings] = Field(
        default_factory=list, description="GPU node groups (provider aws), one component each."
    )
    autoscaler: AutoscalerSettings = Field(default_factory=AutoscalerSettings)
    namespaces: NamespaceSettings = Field(default_factory=NamespaceSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)

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
            self._check_gpu_groups()
            if not self.cluster.admin_principal_arns:
                raise FieldProblem(
                    "cluster.admin_principal_arns",
                    "empty: the cluster would grant nobody access to the Kubernetes API, so "
                    "`pulumi up` itself could not create namespaces or releases; list the role "
                    "or user that runs `pulumi up` (arn:aws:iam::<account>:role/<name>)",
                )
        else:
            if self.existing is None:
                raise FieldProblem(
                    "existing",
                    "required with provider existing; set existing.name and a kubeconfig",
                )
            for section in ("aws", "network", "system_nodes", "gpu_node_groups", "autoscaler"):
                if section in self.model_fields_set:
                    raise FieldProblem(section, "only valid with provider aws")
        return self

    @model_validator(mode="after")
    def _storage_fits(self) -> PlatformConfig:
        check_storage(self)
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

    def _check_gpu_groups(self) -> None:
        names = [g.name for g in self.gpu_node_groups]
        for i, group in enumerate(self.gpu_node_groups):
            path = f"gpu_node_groups[{i}]"
            if names.index(group.name) != i:
                raise FieldProblem(f"{path}.name", f"{group.name!r} is used twice")
            if group.zone is not None and group.zone not in self.aws.zones:
                raise FieldProblem(
                    f"{path}.zone", f"{group.zone} is not one of aws.zones {self.aws.zones}"
                )
            for zone in self.group_zones(group):
                for name in group.instance_types:
                    offered = self.aws.zone_offerings.get(name)
                    if offered is not None and zone not in offered:
                        raise FieldProblem(
                            f"{path}.zone",
                            f"{zone} does not offer {name}; it is offered in "
                            f"{', '.join(offered) or 'no zone'} (aws.zone_offerings)",
                        )
        self._check_subnet_room()

    def _check_subnet_room(self) -> None:
        """Every private subnet must hold, at full scale, each node's pods and the addresses
        its interfaces take."""
        demand: dict[str, list[tuple[str, int]]] = {z: [] for z in self.aws.zones}
        system_row = CATALOG[self.system_nodes.instance_types[0]]
        per_zone = math.ceil(self.system_nodes.scaling.max_size / len(self.aws.zones))
        for zone in self.aws.zones:
            need = per_zone * system_row.addresses_per_node(system_row.max_pods)
            demand[zone].append(("system_nodes", need))
        for i, group in enumerate(self.gpu_node_groups):
            zones = self.group_zones(group)
            nodes = math.ceil(group.scaling.max_size / len(zones))
            for zone in zones:
                demand[zone].append((f"gpu_node_groups[{i}]", nodes * group.addresses_per_node))
        for zs in subnet_layout(self.network, self.aws.zones):
            usable = zs.private.num_addresses - 5  # AWS keeps five addresses of every subnet
            users = demand[zs.zone]
            if sum(n for _, n in users) > usable:
                worst = max(users, key=lambda u: u[1])[0]
                detail = ", ".join(f"{who} {n}" for who, n in users)
                raise FieldProblem(
                    f"{worst}.scaling.max_size",
                    f"private subnet {zs.private} in {zs.zone} has {usable} usable addresses, "
                    f"but nodes at max_size need {sum(n for _, n in users)} ({detail}); lower "
                    "max_size or kubelet.max_pods, or give network.private_subnet_cidrs more room",
                )

    def group_zones(self, group: GpuNodeGroupSettings) -> list[str]:
        """Zones a GPU group spans: its own zone; EFA groups one zone (EFA traffic stays in a
        subnet); other groups every zone."""
        if group.zone is not None:
            return [group.zone]
        return self.aws.zones[:1] if group.efa else list(self.aws.zones)

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

    return config_from_pulumi(CONFIG.get(), stack_file(pulumi.get_stack()))


def config_from_pulumi(values: dict[str, str], source: str) -> PlatformConfig:
    """Validate config as the CLI hands it over: `namespace:key` -> string."""
    prefix = f"{NAMESPACE}:"
    raw = {
        key[len(prefix) :]: _decode(value)
        for key, value in sorted(values.items())
        if key.startswith(prefix)
    }
    return parse_config(raw, source)


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
