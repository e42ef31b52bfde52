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
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Literal

import pulumi
from pydantic import Field, ValidationError, model_validator

from model.config.alerts import AlertSettings, check_alerts
from model.config.base import (
    LOG_RETENTION_DAYS,
    NAMESPACE,
    TRUE_WORDS,
    ConfigError,
    DnsLabel,
    FieldProblem,
    FieldProblems,
    InstanceTypeName,
    Settings,
)
from model.config.ceph import (
    CephNetworkAttachmentSettings,
    CephNetworkSettings,
    CephNodeSettings,
    CephSettings,
)
from model.config.charts import ChartOverride, check_charts
from model.config.cluster import (
    CONTROL_PLANE_LOG_TYPES,
    ClusterSettings,
    ExistingClusterSettings,
    NamespaceSettings,
)
from model.config.cluster_autoscaler import AutoscalerSettings
from model.config.cost import CostSettings, check_cost
from model.config.dra import check_dra
from model.config.fabric import FabricSettings, check_fabric
from model.config.fair_sharing import check_quota_sharing
from model.config.gpu_operator import GpuOperatorSettings, check_gpu_operator
from model.config.images import ImageSettings, check_images
from model.config.keda import WorkloadAutoscalingSettings, check_workload_autoscaling
from model.config.kubernetes_minor import check_kubernetes_minor
from model.config.layout import check_aws_layout, check_gpu_group_zones, check_region_offers
from model.config.loading import describe_all, past_field_problems, split_namespaces
from model.config.mandatory import mandatory_problems
from model.config.multikueue import MultiKueueSettings, check_multikueue
from model.config.names import check_names
from model.config.network import (
    NEW_VPC_KEYS,
    AwsSettings,
    NetworkSettings,
    ZoneSubnets,
    routed_to_vpc,
    subnet_layout,
)
from model.config.nodes import (
    DEFAULT_MAX_PODS,
    RESERVED_CAPACITY,
    CapacityType,
    GpuNodeGroupSettings,
    GpuSharingSettings,
    GpuTuningSettings,
    KubeletSettings,
    Scaling,
    SystemNodeSettings,
)
from model.config.observability import ObservabilitySettings, check_observability
from model.config.onprem import OnPremGpuPoolSettings
from model.config.pod_fit import check_pods_fit
from model.config.policy import PolicyExemption, PolicySettings
from model.config.pools import GpuPool, gpu_pools
from model.config.recipes import RecipesSettings
from model.config.reservation import check_reservation_windows
from model.config.scheduling import SchedulingSettings, check_scheduling
from model.config.selftest import SelfTestSettings, check_selftest
from model.config.storage import (
    FSX_CAPACITY_STEP_GIB,
    FSX_DEPLOYMENT_TYPES,
    FSX_FIRST_CAPACITY_GIB,
    FSX_THROUGHPUT_TIERS,
    DataRepositorySettings,
    FsxSettings,
    NvmeCacheSettings,
    StorageSettings,
    check_shared_data,
    check_storage,
    default_fsx_zone,
)
from model.config.team_access import check_existing_namespaces, check_team_access

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
    "ChartOverride",
    "ClusterSettings",
    "ConfigError",
    "CostSettings",
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
    "PolicyExemption",
    "PolicySettings",
    "Scaling",
    "SchedulingSettings",
    "SelfTestSettings",
    "Settings",
    "StorageSettings",
    "SystemNodeSettings",
    "WorkloadAutoscalingSettings",
    "ZoneSubnets",
    "check_shared_data",
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


def _is_true(value: Any) -> bool:
    """True as the field will read it ("True", "true" as `pulumi config set` stores them)."""
    return value is True or value in TRUE_WORDS


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
    multikueue: MultiKueueSettings = Field(default_factory=MultiKueueSettings)
    selftest: SelfTestSettings = Field(default_factory=SelfTestSettings)
    recipes: RecipesSettings = Field(default_factory=RecipesSettings)
    cost: CostSettings = Field(default_factory=CostSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    images: ImageSettings = Field(default_factory=ImageSettings)
    charts: dict[str, ChartOverride] = Field(
        default_factory=dict,
        description="Chart versions this stack takes ahead of the pins in model/versions.py, "
        "by chart: `kueue: {version: 0.19.3}`, so dev runs a bump before prod. Only a version "
        "recorded in model/charts.lock.json; the plan renders and validates it like the pin "
        "and says, until ../shared/crds holds that version's CRDs, that the custom resources "
        'were checked against the pin\'s (docs/operations.md, "Chart versions").',
    )

    @model_validator(mode="before")
    @classmethod
    def _production_defaults(cls, data: Any) -> Any:
        # Decided on the value the field will hold, so that "True" hardens as true does.
        if not isinstance(data, dict) or not _is_true(data.get("production", False)):
            return data
        if data.get("provider", "aws") != "aws":
            return data
        data = dict(data)
        network = data.get("network", {})
        # An existing VPC's NAT gateways are its owner's, not the platform's to multiply.
        existing_vpc = isinstance(network, dict) and network.get("existing_vpc") is not None
        for (section, key), value in PRODUCTION_DEFAULTS.items():
            if existing_vpc and section == "network" and key in NEW_VPC_KEYS:
                continue
            if isinstance(data.get(section, {}), dict):
                data[section] = {key: value, **data.get(section, {})}
        return data

    @model_validator(mode="after")
    def _rules_across_sections(self) -> PlatformConfig:
        """Every rule that reads more than one section, in stages: the sections the provider
        needs, then names and references, then each provider's sections (layout, the region's
        offers, zones, the API's reachability), then each plane's rules against the rest, then
        what the policy pack holds mandatory. Every stage runs and every problem is reported at
        once (four mistakes, one run); only a missing provider section stops the rest, since
        every name it would declare is missing too. A rule that cannot run on what an earlier
        problem left (a name that does not resolve) is named as not checked, never guessed at."""
        self._required_sections()
        found: list[FieldProblem] = []
        unchecked: list[str] = []
        for stage, rule in self._rules():
            try:
                found += rule() or []
            except FieldProblems as error:
                found += error.problems
            except FieldProblem as error:
                found.append(error)
            except Exception:
                # Only where an earlier problem left the config incomplete; otherwise a bug.
                if not found:
                    raise
                unchecked.append(stage)
        if unchecked:
            found.append(
                FieldProblem(
                    "",
                    f"not checked until the problems above are fixed: {', '.join(unchecked)}",
                )
            )
        if found:
            raise FieldProblems(found)
        return self

    def _required_sections(self) -> None:
        """First of all: a section the provider needs and the stack lacks. Until it exists,
        every name it would declare is missing too, and a reference into it ('a100' is not a
        GPU pool; pools: none) would send the user after the wrong key."""
        required = {"aws": "set aws.region and aws.zones",
                    "existing": "set existing.name and a kubeconfig"}  # fmt: skip
        section = self.provider
        if getattr(self, section) is None:
            raise FieldProblem(
                section, f"required with provider {self.provider}; {required[section]}"
            )

    def _rules(self) -> list[tuple[str, Callable[[], list[FieldProblem] | None]]]:
        """(what the rule checks, the rule) in the order the stages run. Before the other
        cross-section rules, which may then look names up: every reference resolves, every name
        is declared once, no two pools take the same nodes, and every nv-ipam pool has a block
        for each of its nodes."""
        rules: list[tuple[str, Callable[[], list[FieldProblem] | None]]] = [
            ("names and references", lambda: check_names(self)),
            ("the Kubernetes minor", lambda: check_kubernetes_minor(self)),
        ]
        if self.provider == "aws":
            rules += [
                ("sections of provider existing", self._no_existing_sections),
                ("the network layout", lambda: check_aws_layout(self)),
                ("the region's instance types", lambda: check_region_offers(self)),
                ("the GPU groups' zones", lambda: check_gpu_group_zones(self)),
                ("the API endpoint's reachability", self._check_api_reachable),
            ]
        else:
            rules += [
                ("sections of provider aws", self._no_aws_sections),
                ("the fabric", lambda: check_fabric(self)),
            ]
        # Each plane's rules that need the rest of the stack, in the order of the planes.
        for check in (
            check_storage,
            check_gpu_operator,
            check_dra,
            check_scheduling,
            check_team_access,
            check_existing_namespaces,
            check_quota_sharing,
            check_pods_fit,
            check_multikueue,
            check_workload_autoscaling,
            check_observability,
            check_alerts,
            check_selftest,
            check_images,
            check_cost,
            check_reservation_windows,
            check_shared_data,
            check_charts,
        ):
            rules.append(
                (check.__name__.removeprefix("check_").replace("_", " "), partial(check, self))
            )
        rules.append(("the policy pack's mandatory rules", lambda: mandatory_problems(self)))
        return rules

    def _no_existing_sections(self) -> list[FieldProblem]:
        found = []
        if self.existing is not None:
            found.append(FieldProblem("existing", "only valid with provider existing"))
        if self.fabric is not None:
            found.append(
                FieldProblem(
                    "fabric",
                    "only valid with provider existing; on AWS the fabric is EFA, set per "
                    "node group with gpu_node_groups[].efa",
                )
            )
        return found

    def _no_aws_sections(self) -> list[FieldProblem]:
        found = [
            FieldProblem(section, "only valid with provider aws; remove it for provider existing")
            for section in ("aws", "network", "system_nodes", "gpu_node_groups", "autoscaler")
            if section in self.model_fields_set
        ]
        eks_only = sorted(self.cluster.model_fields_set - set(EXISTING_CLUSTER_KEYS))
        if eks_only:
            found.append(
                FieldProblem(
                    f"cluster.{eks_only[0]}",
                    "configures EKS, only valid with provider aws; an existing cluster takes "
                    f"only cluster.{', cluster.'.join(EXISTING_CLUSTER_KEYS)}",
                )
            )
        return found

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
        # A runner's security group is inside the VPC; an existing VPC's routes are not in
        # the stack, so the plan says it cannot tell (plan/review.py) instead of refusing.
        if (
            cluster.endpoint_private_only
            and not cluster.api_access_security_group_ids
            and self.network.existing_vpc is None
            and not any(routed_to_vpc(self.network, c) for c in cluster.api_access_cidrs)
        ):
            routed = [f"{r.cidr} (network.{r.key})" for r in self.network.routes()]
            raise FieldProblem(
                "cluster.api_access_cidrs",
                f"{', '.join(map(str, cluster.api_access_cidrs))}: with endpoint_private_only "
                "no route from any of them reaches the VPC, so the first `pulumi up` would "
                "create the cluster and time out at its first Kubernetes object. Valid: a "
                f"range inside network.vpc_cidr {self.network.vpc_cidr}, or inside one routed "
                f"to the VPC ({', '.join(routed) or 'none routed'}): route the office or VPN "
                "range with network.transit_gateway {id, cidrs} or network.vpn_gateway {id, "
                "cidrs}, give api_access_security_group_ids (runners inside the VPC), or make "
                "the endpoint public with public_access_cidrs",
            )

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

    def installs(self, addon: str) -> bool:
        """Whether the platform installs `addon` (model/config/onprem.EXISTING_ADDONS) or uses
        the one an existing cluster runs (existing.addons)."""
        return self.existing is None or getattr(self.existing.addons, addon) == "install"


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
            source,
            [
                *problems,
                *(m for e in error.errors() for m in describe_all(e, PlatformConfig)),
                *past_field_problems(PlatformConfig, raw, error),
            ],
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
