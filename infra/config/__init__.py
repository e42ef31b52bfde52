"""The one configuration model of the platform, and the only reader of Pulumi config.

One module per plane (`network`, `cluster`, `nodes`, `storage`, whose on-prem half is `ceph`)
holds that plane's settings; this module composes them into `PlatformConfig`, loads a stack and
reports errors. Every knob is a field, with a default, a description and a check. A stack file
(`stacks/Pulumi.<stack>.yaml`) holds only what differs from these defaults, under the
`gpu-platform:` namespace, so `pulumi config set --path gpu-platform:network.vpc_cidr ...` works.
Bad input raises `ConfigError` before any resource is declared, naming the stack file, the key
path, the bad value and what would be valid.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Literal

import pulumi
from pydantic import Field, TypeAdapter, ValidationError, model_validator

from infra.catalog import CATALOG
from infra.config.alerts import AlertSettings, check_alerts
from infra.config.autoscaling import WorkloadAutoscalingSettings, check_autoscaling
from infra.config.base import (
    LOG_RETENTION_DAYS,
    NAMESPACE,
    ConfigError,
    DnsLabel,
    FieldProblem,
    InstanceTypeName,
    Settings,
)
from infra.config.ceph import (
    CephNetworkAttachmentSettings,
    CephNetworkSettings,
    CephNodeSettings,
    CephSettings,
)
from infra.config.cluster import (
    CONTROL_PLANE_LOG_TYPES,
    ClusterSettings,
    ExistingClusterSettings,
    NamespaceSettings,
)
from infra.config.fabric import FabricSettings, check_fabric
from infra.config.gpu_software import GpuOperatorSettings, check_gpu_software
from infra.config.loading import describe, split_namespaces
from infra.config.network import (
    CIDR_PREFIX_RANGE,
    AwsSettings,
    NetworkSettings,
    ZoneSubnets,
    subnet_bits,
    subnet_layout,
)
from infra.config.nodes import (
    DEFAULT_MAX_PODS,
    RESERVED_CAPACITY,
    AutoscalerSettings,
    CapacityType,
    GpuNodeGroupSettings,
    GpuSharingSettings,
    GpuTuningSettings,
    KubeletSettings,
    Scaling,
    SystemNodeSettings,
)
from infra.config.observability import ObservabilitySettings, check_observability
from infra.config.onprem import OnPremGpuPoolSettings
from infra.config.pools import GpuPool, gpu_pools
from infra.config.scheduling import SchedulingSettings, check_scheduling
from infra.config.storage import (
    FSX_CAPACITY_STEP_GIB,
    FSX_DEPLOYMENT_TYPES,
    FSX_FIRST_CAPACITY_GIB,
    FSX_THROUGHPUT_TIERS,
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
    "FabricSettings",
    "FieldProblem",
    "FsxSettings",
    "GpuNodeGroupSettings",
    "GpuOperatorSettings",
    "GpuPool",
    "GpuSharingSettings",
    "GpuTuningSettings",
    "InstanceTypeName",
    "KubeletSettings",
    "NamespaceSettings",
    "NetworkSettings",
    "NvmeCacheSettings",
    "ObservabilitySettings",
    "OnPremGpuPoolSettings",
    "PlatformConfig",
    "Scaling",
    "SchedulingSettings",
    "Settings",
    "StorageSettings",
    "SystemNodeSettings",
    "WorkloadAutoscalingSettings",
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

# What `production: true` changes on AWS, unless the stack sets the key itself. On an existing
# cluster it only protects stateful resources: these keys are AWS-only there.
PRODUCTION_DEFAULTS: dict[tuple[str, str], Any] = {
    ("network", "nat_gateways"): "per_zone",
    ("network", "flow_logs"): True,
    # A year of flow and audit logs: what security reviews (and PCI DSS 10.5.1) ask for.
    ("network", "flow_log_retention_days"): 365,
    ("cluster", "log_retention_days"): 365,
    ("cluster", "endpoint_private_only"): True,
    ("cluster", "deletion_protection"): True,
}
# The only cluster key an existing cluster takes: every other one configures EKS.
EXISTING_CLUSTER_KEYS = ("kubernetes_version",)
_BOOL = TypeAdapter(bool)


def _as_bool(value: Any) -> Any:
    """A boolean as the field will read it ("True", "false" as `pulumi config set` stores
    them); a value the field will refuse is left for it to report."""
    try:
        return _BOOL.validate_python(value)
    except ValidationError:
        return value


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
    gpu_operator: GpuOperatorSettings = Field(default_factory=GpuOperatorSettings)
    scheduling: SchedulingSettings = Field(default_factory=SchedulingSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    workload_autoscaling: WorkloadAutoscalingSettings = Field(
        default_factory=WorkloadAutoscalingSettings
    )
    fabric: FabricSettings | None = Field(
        None,
        description="InfiniBand / RoCE through the NVIDIA Network Operator (provider existing); "
        "required when a GPU pool's fabric is infiniband or roce.",
    )
    alerts: AlertSettings = Field(default_factory=AlertSettings)

    @model_validator(mode="before")
    @classmethod
    def _production_defaults(cls, data: Any) -> Any:
        # Decided on the value the field will hold, so that "True" hardens as true does.
        if not isinstance(data, dict) or _as_bool(data.get("production", False)) is not True:
            return data
        if data.get("provider", "aws") != "aws":
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
            if self.fabric is not None:
                raise FieldProblem(
                    "fabric",
                    "only valid with provider existing; on AWS the fabric is EFA, set per "
                    "node group with gpu_node_groups[].efa",
                )
            self._check_aws_network()
            self._check_gpu_groups()
            self._check_api_reachable()
        else:
            if self.existing is None:
                raise FieldProblem(
                    "existing",
                    "required with provider existing; set existing.name and a kubeconfig",
                )
            for section in ("aws", "network", "system_nodes", "gpu_node_groups", "autoscaler"):
                if section in self.model_fields_set:
                    raise FieldProblem(
                        section, "only valid with provider aws; remove it for provider existing"
                    )
            eks_only = sorted(self.cluster.model_fields_set - set(EXISTING_CLUSTER_KEYS))
            if eks_only:
                raise FieldProblem(
                    f"cluster.{eks_only[0]}",
                    "configures EKS, only valid with provider aws; an existing cluster takes "
                    f"only cluster.{', cluster.'.join(EXISTING_CLUSTER_KEYS)}",
                )
            check_fabric(self)
        return self

    def _check_api_reachable(self) -> None:
        """The first `up` creates Kubernetes objects from the runner: it must be let in, and
        reach the endpoint, or every one of them is refused or times out."""
        cluster = self.cluster
        if not cluster.admin_principal_arns:
            raise FieldProblem(
                "cluster.admin_principal_arns",
                "empty: the cluster would grant nobody access to the Kubernetes API, so "
                "`pulumi up` itself could not create namespaces or releases; list the role "
                "or user that runs `pulumi up` (arn:aws:iam::<account>:role/<name>)",
            )
        private_path = cluster.api_access_cidrs or cluster.api_access_security_group_ids
        if cluster.endpoint_private_only and not private_path:
            raise FieldProblem(
                "cluster.api_access_cidrs",
                "endpoint_private_only: true (the default under production: true) but nothing "
                "may reach the private endpoint: give api_access_cidrs (the runner's subnet, "
                "VPN or peered range) or api_access_security_group_ids (the runner's security "
                "group), or make the endpoint public with public_access_cidrs",
            )

    @model_validator(mode="after")
    def _storage_fits(self) -> PlatformConfig:
        check_storage(self)
        return self

    @model_validator(mode="after")
    def _gpu_software_fits(self) -> PlatformConfig:
        check_gpu_software(self)
        return self

    @model_validator(mode="after")
    def _queues_fit(self) -> PlatformConfig:
        check_scheduling(self)
        check_autoscaling(self)
        return self

    @model_validator(mode="after")
    def _observability_fits(self) -> PlatformConfig:
        check_observability(self)
        return self

    @model_validator(mode="after")
    def _alerts_fit(self) -> PlatformConfig:
        check_alerts(self)
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
        self._check_carved_subnets()
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

    def _check_carved_subnets(self) -> None:
        """Subnets carved from vpc_cidr must still be ones AWS accepts (/28 or larger)."""
        network, zones = self.network, len(self.aws.zones)
        bits = subnet_bits(zones)
        smallest = CIDR_PREFIX_RANGE[1]
        carved = []
        if network.private_subnet_cidrs is None:
            carved.append(("private", network.vpc_cidr.prefixlen + bits))
        if network.public_subnet_cidrs is None:
            carved.append(("public", network.vpc_cidr.prefixlen + 2 * bits))
        for kind, prefix in carved:
            if prefix > smallest:
                largest = smallest - max(p for _, p in carved) + network.vpc_cidr.prefixlen
                raise FieldProblem(
                    "network.vpc_cidr",
                    f"{network.vpc_cidr} is too small for {zones} zones: its {kind} subnets would "
                    f"be /{prefix}, and AWS accepts subnets up to /{smallest}; use a /{largest} "
                    "or larger VPC, or set network.private_subnet_cidrs and public_subnet_cidrs",
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
                detail = ", ".join(f"{who} {n}" for who, n in users)
                raise FieldProblem(
                    self._crowded_key(zs.zone, max(users, key=lambda u: u[1])[0]),
                    f"private subnet {zs.private} in {zs.zone} has {usable} usable addresses, "
                    f"but nodes at max_size need {sum(n for _, n in users)} ({detail}); lower "
                    "max_size or kubelet.max_pods, or give network.private_subnet_cidrs more room",
                )

    def _crowded_key(self, zone: str, biggest: str) -> str:
        """The key the user set that made a private subnet too small: its own CIDR, the
        scaling of the group that needs the most addresses, else a VPC narrower than the
        default one."""
        if self.network.private_subnet_cidrs is not None:
            return f"network.private_subnet_cidrs[{self.aws.zones.index(zone)}]"
        owners = {"system_nodes": self.system_nodes}
        owners.update((f"gpu_node_groups[{i}]", g) for i, g in enumerate(self.gpu_node_groups))
        default = NetworkSettings.model_fields["vpc_cidr"].default
        narrowed = self.network.vpc_cidr.prefixlen > default.prefixlen
        if narrowed and "scaling" not in owners[biggest].model_fields_set:
            return "network.vpc_cidr"
        return f"{biggest}.scaling.max_size"

    def group_zones(self, group: GpuNodeGroupSettings) -> list[str]:
        """Zones a GPU group spans: its own zone; EFA groups one zone (EFA traffic stays in a
        subnet); other groups every zone."""
        if group.zone is not None:
            return [group.zone]
        return self.aws.zones[:1] if group.efa else list(self.aws.zones)

    @property
    def gpu_pools(self) -> list[GpuPool]:
        """Every GPU pool of the stack, whichever provider made its nodes."""
        return gpu_pools(self)

    @property
    def protect_stateful(self) -> bool:
        return self.production


# ------------------------------------------------------------------------------------ loading


def stack_file(stack: str) -> str:
    return f"stacks/Pulumi.{stack}.yaml"


def parse_config(raw: dict[str, Any], source: str, problems: Sequence[str] = ()) -> PlatformConfig:
    """Validate raw config (keys without the namespace) into the model, or raise ConfigError
    with every problem found, `problems` found before first."""
    try:
        cfg = PlatformConfig.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(
            source, [*problems, *(describe(e, PlatformConfig) for e in error.errors())]
        ) from None
    if problems:
        raise ConfigError(source, list(problems))
    return cfg


def load_config() -> PlatformConfig:
    """Read the running stack's config and validate it."""
    from pulumi.runtime.config import CONFIG

    return config_from_pulumi(CONFIG.get(), stack_file(pulumi.get_stack()))


def config_from_pulumi(values: dict[str, str], source: str) -> PlatformConfig:
    """Validate config as the CLI hands it over: `namespace:key` -> string."""
    ours, problems = split_namespaces(values)
    return parse_config({k: _decode(v) for k, v in ours.items()}, source, problems)


def _decode(value: str) -> Any:
    """The CLI hands every value over as a string, with objects and lists as JSON."""
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value
