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
import math
import re
import types
import typing
from dataclasses import dataclass
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

from infra.catalog import CATALOG, InstanceType
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
    zone_offerings: dict[InstanceTypeName, list[str]] = Field(
        default_factory=dict,
        description="Zones that offer each instance type, as `aws ec2 "
        "describe-instance-type-offerings --location-type availability-zone` shows them for "
        "this account (zone names map to physical zones per account). A GPU group in a zone "
        "not listed for its type is rejected; a type not listed is not checked.",
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


@dataclass(frozen=True)
class ZoneSubnets:
    zone: str
    public: IPv4Network
    private: IPv4Network


def subnet_layout(network: NetworkSettings, zones: list[str]) -> list[ZoneSubnets]:
    """One public and one private subnet per zone.

    Without explicit CIDRs the VPC is cut into 2^k equal blocks (the fewest that leave one
    spare): each zone gets a whole block as its private subnet, because GPU pods take VPC
    addresses, and the spare block is cut again for the small public subnets.
    """
    bits = math.ceil(math.log2(len(zones) + 1))
    blocks = list(network.vpc_cidr.subnets(prefixlen_diff=bits))
    spare = list(blocks[-1].subnets(prefixlen_diff=bits))
    private = network.private_subnet_cidrs or blocks[: len(zones)]
    public = network.public_subnet_cidrs or spare[: len(zones)]
    return [ZoneSubnets(z, pub, priv) for z, pub, priv in zip(zones, public, private, strict=True)]


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


# ---------------------------------------------------------------------------- GPU node groups

CapacityType = Literal["on_demand", "spot", "reservation", "capacity_block"]
RESERVED_CAPACITY = ("reservation", "capacity_block")
# Kubernetes' tested default; big GPU nodes run few pods, and each pod takes a VPC address.
DEFAULT_MAX_PODS = 110


class GpuSharingSettings(Settings):
    """How pods share a node's GPUs (NVIDIA device plugin / GPU Operator configuration)."""

    mode: Literal["none", "time-slicing", "mps", "mig"] = Field(
        "none",
        description="`time-slicing` for light inference, `mps` for small training jobs, `mig` "
        "to partition A100/H100/H200/B200 GPUs; `none` gives each pod whole GPUs.",
    )
    replicas: int = Field(1, ge=1, le=48, description="Pods per GPU with time-slicing or MPS.")
    mig_strategy: Literal["single", "mixed"] = Field(
        "single",
        description="MIG: `single` cuts every GPU into seven 1g slices, each advertised as "
        "nvidia.com/gpu; `mixed` uses the GPU Operator's all-balanced layout (two 1g, one 2g, "
        "one 3g per GPU), advertised as nvidia.com/mig-<profile>.",
    )

    @model_validator(mode="after")
    def _replicas_need_sharing(self) -> GpuSharingSettings:
        if self.replicas > 1 and self.mode not in ("time-slicing", "mps"):
            raise FieldProblem(
                "replicas", f"replicas {self.replicas} needs mode time-slicing or mps"
            )
        return self


class KubeletSettings(Settings):
    """Kubelet settings rendered into the node's nodeadm NodeConfig."""

    topology_manager_policy: Literal["none", "best-effort", "restricted", "single-numa-node"] = (
        Field(
            "single-numa-node",
            description="Align CPUs, GPUs and NICs on one NUMA node, so NCCL traffic stays local.",
        )
    )
    topology_manager_scope: Literal["container", "pod"] = Field(
        "pod", description="Align a whole pod (training pods are one container plus helpers)."
    )
    cpu_manager_policy: Literal["none", "static"] = Field(
        "static", description="`static` pins Guaranteed pods' CPUs (data loaders, NCCL threads)."
    )
    max_pods: int | None = Field(
        None,
        ge=8,
        description=f"Pods per node; default the lower of {DEFAULT_MAX_PODS} and the instance's "
        "VPC CNI limit. Each pod takes a VPC address.",
    )
    system_reserved: dict[str, str] = Field(
        default_factory=lambda: {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
        description="Resources kept for the OS.",
    )
    kube_reserved: dict[str, str] = Field(
        default_factory=lambda: {"cpu": "500m", "memory": "2Gi", "ephemeral-storage": "1Gi"},
        description="Resources kept for the kubelet and container runtime.",
    )

    @model_validator(mode="after")
    def _static_needs_reserved_cpu(self) -> KubeletSettings:
        if self.cpu_manager_policy == "static" and not (
            "cpu" in self.system_reserved or "cpu" in self.kube_reserved
        ):
            raise FieldProblem(
                "cpu_manager_policy",
                "static CPU manager needs cpu in system_reserved or kube_reserved",
            )
        return self


class GpuNodeGroupSettings(Settings):
    """One EKS managed node group of GPU instances, with its own launch template."""

    name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")] = Field(
        description="Short name, unique in the stack; names the node group and its label."
    )
    instance_types: list[InstanceTypeName] = Field(
        min_length=1,
        description="Types from the catalog. Several only make sense for spot (more pools) or "
        "on-demand fallback; reservations and Capacity Blocks take exactly one.",
    )
    capacity: CapacityType = Field(
        "on_demand",
        description="on_demand, spot, reservation (On-Demand Capacity Reservation) or "
        "capacity_block (EC2 Capacity Block for ML).",
    )
    capacity_reservation_id: str | None = Field(
        None,
        pattern=r"^cr-[0-9a-f]{8,17}$",
        description="The reservation or Capacity Block (cr-...) to launch into.",
    )
    capacity_reservation_group_arn: str | None = Field(
        None,
        pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[\w.-]+$",
        description="A resource group of reservations (capacity: reservation only).",
    )
    efa: bool = Field(
        False,
        description="Lay out EFA interfaces (one per EFA-capable network card), attach the EFA "
        "security group and keep the group in one subnet.",
    )
    placement_group: bool | None = Field(
        None,
        description="Cluster placement group for lower EFA latency. Default: on for EFA groups, "
        "off with a reservation or Capacity Block (it can leave reserved capacity unused).",
    )
    zone: str | None = Field(
        None,
        description="Zone to place the group in. Default: EFA groups the first of aws.zones, "
        "other groups every zone.",
    )
    scaling: Scaling = Field(default_factory=lambda: Scaling(min_size=0, max_size=2))
    root_volume_gib: int = Field(
        200, ge=50, le=16384, description="gp3 root volume; GPU images are large."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels.")
    kubelet: KubeletSettings = Field(default_factory=KubeletSettings)
    gpu_sharing: GpuSharingSettings = Field(default_factory=GpuSharingSettings)
    scale_down_unneeded_minutes: int = Field(
        30,
        ge=1,
        description="How long a GPU node sits unneeded before the autoscaler removes it; "
        "long enough to survive the gap between two jobs.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> GpuNodeGroupSettings:
        rows = [CATALOG[t] for t in self.instance_types]
        reserved = self.capacity_reservation_id or self.capacity_reservation_group_arn
        if self.capacity == "spot" and reserved:
            raise FieldProblem("capacity", "spot cannot launch into a capacity reservation")
        if self.capacity in ("on_demand", "spot") and reserved:
            key = "capacity_reservation_" + ("id" if self.capacity_reservation_id else "group_arn")
            raise FieldProblem(
                key, f"needs capacity: reservation or capacity_block, not {self.capacity}"
            )
        if self.capacity == "reservation" and bool(self.capacity_reservation_id) == bool(
            self.capacity_reservation_group_arn
        ):
            raise FieldProblem(
                "capacity_reservation_id",
                "capacity: reservation needs exactly one of capacity_reservation_id or "
                "capacity_reservation_group_arn",
            )
        if self.capacity == "capacity_block" and not self.capacity_reservation_id:
            raise FieldProblem(
                "capacity_reservation_id", "capacity: capacity_block needs the block's cr- id"
            )
        if self.capacity == "capacity_block" and self.capacity_reservation_group_arn:
            raise FieldProblem(
                "capacity_reservation_group_arn", "a Capacity Block is targeted by its cr- id"
            )
        if self.capacity in RESERVED_CAPACITY and len(rows) != 1:
            raise FieldProblem(
                "instance_types", f"capacity: {self.capacity} launches exactly one instance type"
            )
        for i, row in enumerate(rows):
            if not row.gpus and self.gpu_sharing.mode != "none":
                raise FieldProblem(
                    "gpu_sharing.mode",
                    f"{self.gpu_sharing.mode} shares GPUs, but {row.name} has none",
                )
            if not row.gpus:
                raise FieldProblem(
                    f"instance_types[{i}]",
                    f"{row.name} has no GPUs; a GPU group needs GPU types "
                    "(non-GPU add-ons run on system_nodes)",
                )
            if self.efa and not row.supports_efa:
                efa_types = sorted(n for n, r in CATALOG.items() if r.supports_efa)
                raise FieldProblem(
                    f"instance_types[{i}]",
                    f"efa: true but {row.name} has no EFA; EFA types: {', '.join(efa_types)}",
                )
            if self.gpu_sharing.mode == "mig" and not row.mig_profiles:
                raise FieldProblem(
                    "gpu_sharing.mode",
                    f"mig needs A100, H100, H200 or B200 GPUs; {row.name} has {row.gpu_model}",
                )
            if self.kubelet.max_pods is not None and self.kubelet.max_pods > row.max_pods:
                raise FieldProblem(
                    "kubelet.max_pods",
                    f"{self.kubelet.max_pods} exceeds {row.name}'s VPC CNI limit {row.max_pods}",
                )
        if self.gpu_sharing.mode == "mig" and len({r.mig_profiles for r in rows}) > 1:
            raise FieldProblem(
                "gpu_sharing.mode",
                "mig partitions every GPU of the group alike: give types with one GPU model",
            )
        if self.efa and len({r.efa_interfaces for r in rows}) > 1:
            raise FieldProblem(
                "instance_types",
                "EFA types in one group must have the same EFA interface count: one launch "
                "template lays out the interfaces",
            )
        return self

    @property
    def instances(self) -> list[InstanceType]:
        return [CATALOG[t] for t in self.instance_types]

    @property
    def uses_placement_group(self) -> bool:
        if self.placement_group is not None:
            return self.placement_group
        return self.efa and self.capacity not in RESERVED_CAPACITY

    @property
    def max_pods(self) -> int:
        ceiling = min(r.max_pods for r in self.instances)
        return self.kubelet.max_pods or min(DEFAULT_MAX_PODS, ceiling)

    @property
    def addresses_per_node(self) -> int:
        return max(r.addresses_per_node(self.max_pods) for r in self.instances)


class AutoscalerSettings(Settings):
    """cluster-autoscaler (provider aws): scales every node group, GPU groups from zero."""

    enabled: bool = Field(True, description="Deploy cluster-autoscaler.")
    priorities: dict[CapacityType, int] = Field(
        default_factory=lambda: {
            "capacity_block": 40,
            "reservation": 30,
            "on_demand": 20,
            "spot": 10,
        },
        description="Priority expander: when several groups fit a pending pod, the highest "
        "wins. Default: reserved capacity (already paid for), then on-demand, then spot.",
    )
    scale_down_delay_after_add_minutes: int = Field(
        10, ge=0, description="No scale-down this long after any scale-up."
    )


class NamespaceSettings(Settings):
    system: DnsLabel = Field("gpu-platform", description="Namespace of the platform's add-ons.")
    training: DnsLabel = Field("training", description="Namespace of training jobs.")


# -------------------------------------------------------------------------------------- storage
# Everything about the storage plane: the shared POSIX file system (FSx for Lustre on AWS, CephFS
# through Rook on an existing cluster) and the node-local NVMe cache. Checked against the rest of
# the config by `check_storage`, which PlatformConfig calls.

FSX_DEPLOYMENT_TYPES = ("SCRATCH_2", "PERSISTENT_2")
# Per-TiB disk throughput (MB/s/TiB) each deployment type offers. SCRATCH_2 has one fixed
# baseline; PERSISTENT_2 is provisioned at one of its tiers (FSx for Lustre user guide,
# "Performance characteristics of SSD and HDD storage classes").
FSX_THROUGHPUT_TIERS: dict[str, tuple[int, ...]] = {
    "SCRATCH_2": (200,),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
# SSD capacity: 1,200 GiB, then steps of 2,400 GiB.
FSX_FIRST_CAPACITY_GIB = 1200
FSX_CAPACITY_STEP_GIB = 2400
S3_EVENTS = ("NEW", "CHANGED", "DELETED")
KmsKeyArn = Annotated[
    str,
    Field(
        pattern=r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]{36}$",
        description="A KMS key ARN.",
    ),
]
S3Event = Literal["NEW", "CHANGED", "DELETED"]


def _s3_bucket_name(value: str) -> str:
    """S3 general purpose bucket naming rules, so a bad name fails here and not at `pulumi up`."""
    why = None
    if not 3 <= len(value) <= 63:
        why = f"is {len(value)} characters; 3 to 63 are allowed"
    elif not re.fullmatch(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", value):
        why = (
            "may hold only lowercase letters, digits, dots and hyphens, and must begin and end "
            "with a letter or digit"
        )
    elif ".." in value or ".-" in value or "-." in value:
        why = "may not hold two adjacent periods, or a period next to a hyphen"
    elif re.fullmatch(r"\d+\.\d+\.\d+\.\d+", value):
        why = "may not be formatted as an IP address"
    elif value.startswith(("xn--", "sthree-", "amzn-s3-demo-")):
        why = "may not start with xn--, sthree- or amzn-s3-demo-"
    elif value.endswith(("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")):
        why = "may not end with a suffix S3 reserves (-s3alias, --ol-s3, .mrap, --x-s3, --table-s3)"
    if why:
        raise ValueError(f"{value!r} is not a valid S3 bucket name: it {why}")
    return value


class DataRepositorySettings(Settings):
    """An S3 bucket linked to a directory of the Lustre file system (a data repository
    association): objects appear as files, and files written there go back to S3."""

    bucket_name: Annotated[str, AfterValidator(_s3_bucket_name)] | None = Field(
        None,
        description="Name of the bucket the platform creates. Default: a unique name derived "
        "from the stack (S3 names are global).",
    )
    s3_prefix: str = Field(
        "datasets/",
        pattern=r"^([^/][^\s]*/)?$",
        description="Prefix inside the bucket that is linked, ending in `/` (empty: the whole "
        "bucket).",
    )
    file_system_path: str = Field(
        "/datasets",
        pattern=r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$",
        description="Directory of the file system the prefix maps to, e.g. /datasets; training "
        "pods see it under the shared-data mount.",
    )
    auto_import_events: list[S3Event] = Field(
        default_factory=lambda: list(S3_EVENTS),
        description="S3 changes imported automatically into the file system.",
    )
    auto_export_events: list[S3Event] = Field(
        default_factory=lambda: list(S3_EVENTS),
        description="File system changes exported automatically to the bucket.",
    )
    import_metadata_on_create: bool = Field(
        True,
        description="List the prefix's existing objects into the file system when the "
        "association is created.",
    )

    @field_validator("auto_import_events", "auto_export_events")
    @classmethod
    def _distinct_events(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"events repeat: {value}")
        return value


class FsxSettings(Settings):
    """FSx for Lustre (provider aws): the shared file system training pods mount as
    `shared-data`."""

    deployment_type: Literal[FSX_DEPLOYMENT_TYPES] = Field(  # type: ignore[valid-type]
        "SCRATCH_2",
        description="SCRATCH_2: cheapest, not replicated (dev). PERSISTENT_2: replicated "
        "servers, a chosen throughput tier, KMS and backups.",
    )
    storage_capacity_gib: int = Field(
        FSX_FIRST_CAPACITY_GIB,
        description="SSD capacity in GiB: 1200, or a multiple of 2400. Throughput grows with it.",
    )
    per_unit_storage_throughput: int | None = Field(
        None,
        description="PERSISTENT_2 throughput tier in MB/s per TiB: 125, 250, 500 or 1000 "
        "(default 125). SCRATCH_2 has a fixed 200 and takes none.",
    )
    data_compression: Literal["LZ4", "NONE"] = Field(
        "LZ4", description="LZ4 compression on the file servers (saves capacity, costs nothing)."
    )
    lustre_version: Literal["2.12", "2.15"] = Field(
        "2.15",
        description="Lustre version of the file system; data repository associations need "
        "2.12 or newer.",
    )
    zone: str | None = Field(
        None,
        description="Availability zone of the file system; it must host a GPU group. Default: "
        "the zone of the first EFA group, else the first zone of the first GPU group, else "
        "aws.zones[0].",
    )
    kms_key_arn: KmsKeyArn | None = Field(
        None,
        description="Customer managed KMS key for data at rest (PERSISTENT_2 only). Default: "
        "the AWS managed key, unless create_kms_key.",
    )
    create_kms_key: bool = Field(
        False,
        description="Create a platform KMS key (rotated, protected in production) for data at "
        "rest (PERSISTENT_2 only).",
    )
    automatic_backup_retention_days: int = Field(
        0,
        ge=0,
        le=90,
        description="Daily automatic backups kept this many days; 0 disables them. PERSISTENT_2 "
        "only, and only without a data repository (FSx does not back up S3-linked file "
        "systems).",
    )
    daily_automatic_backup_start_time: str = Field(
        "03:00",
        pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
        description="When daily backups start, HH:MM in UTC.",
    )
    mount_options: list[str] = Field(
        default_factory=lambda: ["flock"],
        description="Lustre client mount options of the shared-data volume (flock: POSIX locks "
        "across nodes, which checkpoint writers use).",
    )
    data_repository: DataRepositorySettings | None = Field(
        default_factory=DataRepositorySettings,
        description="The S3 data repository; null: no bucket and no association.",
    )

    @model_validator(mode="after")
    def _valid_for_deployment_type(self) -> FsxSettings:
        capacity = self.storage_capacity_gib
        if capacity != FSX_FIRST_CAPACITY_GIB and (
            capacity <= 0 or capacity % FSX_CAPACITY_STEP_GIB
        ):
            step = FSX_CAPACITY_STEP_GIB
            lower = max(step, capacity // step * step)
            raise FieldProblem(
                "storage_capacity_gib",
                f"{capacity} GiB is not a valid SSD capacity: use 1200 or a multiple of 2400 "
                f"(e.g. {lower} or {lower + step})",
            )
        persistent = self.deployment_type.startswith("PERSISTENT")
        tier = self.per_unit_storage_throughput
        if tier is not None and not persistent:
            raise FieldProblem(
                "per_unit_storage_throughput",
                f"{self.deployment_type} has a fixed throughput and takes no tier; "
                "use deployment_type PERSISTENT_2 to choose one",
            )
        tiers = FSX_THROUGHPUT_TIERS[self.deployment_type]
        if tier is not None and tier not in tiers:
            raise FieldProblem(
                "per_unit_storage_throughput",
                f"{tier} MB/s/TiB is not a {self.deployment_type} tier; valid: "
                f"{', '.join(map(str, tiers))}",
            )
        if self.automatic_backup_retention_days and not persistent:
            raise FieldProblem(
                "automatic_backup_retention_days",
                f"{self.deployment_type} file systems cannot be backed up; use PERSISTENT_2 "
                "or set 0",
            )
        if self.automatic_backup_retention_days and self.data_repository is not None:
            raise FieldProblem(
                "automatic_backup_retention_days",
                "FSx does not back up a file system linked to S3: set data_repository: null "
                "(S3 then holds nothing), or keep the data in S3 and set 0",
            )
        for key in ("kms_key_arn", "create_kms_key"):
            if getattr(self, key) and not persistent:
                raise FieldProblem(
                    key,
                    f"{self.deployment_type} is encrypted with an AWS owned key; a KMS key "
                    "needs PERSISTENT_2",
                )
        if self.kms_key_arn and self.create_kms_key:
            raise FieldProblem("create_kms_key", "set kms_key_arn or create_kms_key, not both")
        return self

    @property
    def throughput_tier(self) -> int:
        """MB/s per TiB of capacity."""
        return self.per_unit_storage_throughput or FSX_THROUGHPUT_TIERS[self.deployment_type][0]

    @property
    def expected_throughput_mbps(self) -> int:
        """Aggregate disk throughput: capacity in TiB × the per-TiB tier."""
        return round(self.storage_capacity_gib / 1024 * self.throughput_tier)


class CephNodeSettings(Settings):
    """A storage host of the Ceph cluster: its Kubernetes node name and, optionally, its disks."""

    name: str = Field(
        min_length=1, description="The Kubernetes node name (its kubernetes.io/hostname label)."
    )
    devices: list[str] = Field(
        default_factory=list,
        description="Disks for OSDs on this host, e.g. nvme1n1; empty: the cluster's "
        "device_filter picks them.",
    )


class CephNetworkAttachmentSettings(Settings):
    """A Multus network for Ceph traffic: a macvlan interface on a host NIC (the RoCE NIC), with
    whereabouts addresses."""

    interface: str = Field(
        pattern=r"^[A-Za-z0-9_.:-]{1,15}$",
        description="Host interface the macvlan sits on; the same name on every host.",
    )
    cidr: IPv4Network = Field(description="Addresses Ceph pods take on this network.")


class CephNetworkSettings(Settings):
    """How Ceph daemons talk: the pod network, the host network, or Multus networks."""

    provider: Literal["pod", "host", "multus"] = Field(
        "host",
        description="`host`: daemons on the hosts' networks (simple, fast). `multus`: public "
        "and/or cluster traffic on dedicated NICs (RoCE). `pod`: the CNI's pod network.",
    )
    public: CephNetworkAttachmentSettings | None = Field(
        None, description="Multus network for client (public) traffic."
    )
    cluster: CephNetworkAttachmentSettings | None = Field(
        None, description="Multus network for replication (cluster) traffic between OSDs."
    )

    @model_validator(mode="after")
    def _networks_match_provider(self) -> CephNetworkSettings:
        if self.provider == "multus" and self.public is None and self.cluster is None:
            raise FieldProblem("provider", "multus needs a public or a cluster network, or both")
        if self.provider != "multus":
            for key in ("public", "cluster"):
                if getattr(self, key) is not None:
                    raise FieldProblem(
                        key, f"a Multus network needs provider multus, not {self.provider}"
                    )
        if self.public and self.cluster and self.public.cidr.overlaps(self.cluster.cidr):
            raise FieldProblem(
                "cluster.cidr", f"{self.cluster.cidr} overlaps public.cidr {self.public.cidr}"
            )
        return self


class CephSettings(Settings):
    """Ceph through Rook (provider existing): CephFS as the shared file system."""

    namespace: DnsLabel = Field("rook-ceph", description="Namespace of the operator and cluster.")
    nodes: list[CephNodeSettings] = Field(
        min_length=1, description="The storage hosts; OSDs run only on these."
    )
    device_filter: str | None = Field(
        None,
        description="Regular expression over disk names that picks OSD disks on hosts that "
        "list no devices, e.g. ^nvme[1-9]n1$.",
    )
    mon_count: int = Field(3, description="Ceph monitors: odd, 1 to 9; 3 survives one loss.")
    mgr_count: int = Field(
        2, ge=1, le=5, description="Ceph managers (one active, the rest standby)."
    )
    network: CephNetworkSettings = Field(
        default_factory=CephNetworkSettings, description="Networks Ceph daemons talk over."
    )
    filesystem_name: DnsLabel = Field("shared", description="Name of the CephFilesystem.")
    replication: int = Field(
        3, ge=1, description="Copies of each object, one per host; at most the storage hosts."
    )
    claim_size_gib: int = Field(
        1024, ge=1, description="Size (CephFS quota) of the shared-data claim, in GiB."
    )
    expected_throughput_mbps: int | None = Field(
        None,
        ge=1,
        description="Aggregate throughput measured on this cluster, in MB/s, for the self-test "
        "to check against; none: the plan reports no figure.",
    )

    @field_validator("device_filter")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"{value!r} is not a regular expression: {error}") from None
        return value

    @model_validator(mode="after")
    def _enough_hosts(self) -> CephSettings:
        if self.mon_count % 2 == 0 or not 1 <= self.mon_count <= 9:
            raise FieldProblem(
                "mon_count", f"{self.mon_count} monitors: use an odd count from 1 to 9 (quorum)"
            )
        names = [n.name for n in self.nodes]
        for i, node in enumerate(self.nodes):
            if names.index(node.name) != i:
                raise FieldProblem(f"nodes[{i}].name", f"{node.name!r} is listed twice")
            if not node.devices and self.device_filter is None:
                raise FieldProblem(
                    f"nodes[{i}].devices",
                    f"{node.name} lists no devices and there is no device_filter: it would "
                    "hold no OSD",
                )
        if self.replication > len(self.nodes):
            raise FieldProblem(
                "replication",
                f"{self.replication} copies need {self.replication} storage hosts (failure "
                f"domain host), but nodes lists {len(self.nodes)}",
            )
        return self


class NvmeCacheSettings(Settings):
    """The node-local `nvme-cache` volume every training pod mounts."""

    host_path: str = Field(
        "/mnt/k8s-disks/0/nvme-cache",
        pattern=r"^/[^\s]*[^/\s]$",
        description="Directory on the node's NVMe RAID0 array. On AWS, nodeadm "
        "(localStorage.strategy RAID0) mounts the array at /mnt/k8s-disks/0; on an existing "
        "cluster, the admin mounts local NVMe so that this path lies on it.",
    )
    fallback_size_gib: int = Field(
        100,
        ge=1,
        description="Size limit of the emptyDir that stands in on instance types without "
        "instance storage (it then lives on the root volume).",
    )


class StorageSettings(Settings):
    """The storage plane: a shared file system (`shared-data`) and a node-local cache
    (`nvme-cache`), under the same names on every provider."""

    fsx: FsxSettings | None = Field(
        None, description="FSx for Lustre (provider aws); none: no shared-data volume."
    )
    ceph: CephSettings | None = Field(
        None, description="Rook-Ceph CephFS (provider existing); none: no shared-data volume."
    )
    nvme_cache: NvmeCacheSettings = Field(
        default_factory=NvmeCacheSettings, description="The node-local nvme-cache volume."
    )


def default_fsx_zone(cfg: PlatformConfig) -> str:
    """The zone FSx goes in when none is set: where the GPU nodes that read it most are."""
    groups = cfg.gpu_node_groups
    for group in groups:
        if group.efa:
            return cfg.group_zones(group)[0]
    if groups:
        return cfg.group_zones(groups[0])[0]
    return cfg.aws.zones[0]


def check_storage(cfg: PlatformConfig) -> None:
    """Storage rules that need the rest of the config: the provider and the GPU zones."""
    storage = cfg.storage
    if storage.fsx is not None and cfg.provider != "aws":
        raise FieldProblem("storage.fsx", "only valid with provider aws; use storage.ceph")
    if storage.ceph is not None and cfg.provider != "existing":
        raise FieldProblem("storage.ceph", "only valid with provider existing; use storage.fsx")
    fsx = storage.fsx
    if fsx is None or fsx.zone is None:
        return
    if fsx.zone not in cfg.aws.zones:
        raise FieldProblem(
            "storage.fsx.zone", f"{fsx.zone} is not one of aws.zones {cfg.aws.zones}"
        )
    gpu_zones = sorted({z for g in cfg.gpu_node_groups for z in cfg.group_zones(g)})
    if fsx.zone not in gpu_zones:
        raise FieldProblem(
            "storage.fsx.zone",
            f"no GPU group runs in {fsx.zone}; put the file system where its readers are: "
            f"{', '.join(gpu_zones) or 'no GPU group is configured'}",
        )


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
