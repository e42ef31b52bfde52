"""The storage plane's config: the shared POSIX file system (FSx for Lustre on AWS, CephFS
through Rook on an existing cluster) and the node-local NVMe cache. Checked against the rest of
the config by `check_storage`, which PlatformConfig calls."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from model.config.base import DnsLabel, FieldProblem, Int, KmsKeyArn, Settings, shaped
from model.config.bounds import GP3_MAX_GIB, INT32_MAX
from model.config.ceph import CephSettings

if TYPE_CHECKING:
    from model.config import PlatformConfig

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
    s3_prefix: Annotated[
        str,
        shaped(
            r"([^/\s]\S*/)?",
            "an S3 prefix: empty, or text without spaces that does not begin with / and ends "
            "with /",
        ),
    ] = Field(
        "datasets/",
        description="Prefix inside the bucket that is linked, ending in `/` (empty: the whole "
        "bucket).",
    )
    file_system_path: Annotated[
        str,
        shaped(
            r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*",
            "an absolute directory path such as /datasets: /-separated names of letters, "
            "digits and . _ -, without a trailing /",
        ),
    ] = Field(
        "/datasets",
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
    noncurrent_version_expiration_days: Int = Field(
        30,
        ge=1,
        le=INT32_MAX,
        description="Days an overwritten or deleted object's old version is kept in the "
        "versioned bucket before S3 expires it (every export of a changed file makes one).",
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
    storage_capacity_gib: Int = Field(
        FSX_FIRST_CAPACITY_GIB,
        # The FSx API's StorageCapacity is an Integer (CreateFileSystem, int32). The model's
        # own rule says which capacities are valid, in its words; the schema carries its floor.
        le=INT32_MAX,
        json_schema_extra={"minimum": FSX_FIRST_CAPACITY_GIB},
        description="SSD capacity in GiB: 1200, or a multiple of 2400. Throughput grows with it.",
    )
    per_unit_storage_throughput: Int | None = Field(
        None,
        ge=min(min(t) for t in FSX_THROUGHPUT_TIERS.values()),
        le=max(max(t) for t in FSX_THROUGHPUT_TIERS.values()),
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
        description="Availability zone of the file system, one of aws.zones (never a Local "
        "Zone: the file system stays in the region); it must host a GPU group where any runs in "
        "the region's zones. Default: the zone of the first EFA group, else the first zone of "
        "the first GPU group, counting only the region's zones, else aws.zones[0]; with every "
        "GPU group in a Local Zone, set it to the zone whose ID is the Local Zone's parent "
        "(model/config/regions.py LOCAL_ZONES), the nearest one.",
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
    automatic_backup_retention_days: Int = Field(
        0,
        ge=0,
        le=90,
        description="Daily automatic backups kept this many days; 0 disables them. PERSISTENT_2 "
        "only, and only without a data repository (FSx does not back up S3-linked file "
        "systems).",
    )
    daily_automatic_backup_start_time: Annotated[
        str, shaped(r"([01]\d|2[0-3]):[0-5]\d", "a time of day HH:MM, 00:00 to 23:59")
    ] = Field(
        "03:00",
        description="When daily backups start, HH:MM in UTC.",
    )
    csi_provisioning: Literal["static", "dynamic"] = Field(
        "static",
        description="What the FSx CSI driver may do. `static`: only mount the platform's file "
        "system (no AWS permission at all). `dynamic`: also create file systems for "
        "StorageClasses, tagged fsx.csi.aws.com/cluster=<cluster>, and resize or delete only "
        "those.",
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


class NvmeCacheSettings(Settings):
    """The node-local `nvme-cache` volume every training pod mounts."""

    fallback_size_gib: Int = Field(
        100,
        ge=1,
        le=GP3_MAX_GIB,
        description="Size limit of the cache on instance types without instance storage, "
        "where its emptyDir lives on the root volume. Elsewhere the cache may fill the NVMe "
        "array kubelet's root directory lies on.",
    )


class SharedDataSettings(Settings):
    """`shared-data` from storage the cluster already has, instead of FSx or Ceph: a
    ReadWriteMany StorageClass (NFS, Weka, GPFS, EFS...) the platform claims from, or a claim
    the admin made in every namespace jobs run in."""

    storage_class: DnsLabel | None = Field(
        None,
        description="An existing StorageClass whose volumes many nodes mount read-write "
        "(ReadWriteMany): the platform declares the `shared-data` claim from it in every "
        "namespace jobs run in.",
    )
    size_gib: Int = Field(
        1024,
        ge=1,
        le=INT32_MAX,
        description="Size each `shared-data` claim of storage_class asks for, in GiB.",
    )
    existing_claim: DnsLabel | None = Field(
        None,
        description="A ReadWriteMany PersistentVolumeClaim of this name the admin has made in "
        "every namespace jobs run in (the training namespace, each team's, the self-test's): "
        "jobs mount it, the platform declares none.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> SharedDataSettings:
        if (self.storage_class is None) == (self.existing_claim is None):
            raise FieldProblem(
                "storage_class",
                "set exactly one of storage_class (the platform claims from it) or "
                "existing_claim (the admin's claim, mounted as is)",
            )
        if self.existing_claim is not None and "size_gib" in self.model_fields_set:
            raise FieldProblem(
                "size_gib", "sizes the platform's claim of storage_class; existing_claim has none"
            )
        return self


class StorageSettings(Settings):
    """The storage plane: a shared file system (`shared-data`) and a node-local cache
    (`nvme-cache`), under the same names on every provider."""

    fsx: FsxSettings | None = Field(
        None, description="FSx for Lustre (provider aws) as `shared-data`."
    )
    ceph: CephSettings | None = Field(
        None, description="Rook-Ceph CephFS (provider existing) as `shared-data`."
    )
    shared_data: SharedDataSettings | None = Field(
        None,
        description="`shared-data` from a StorageClass or claim the cluster already has, "
        "instead of fsx or ceph.",
    )
    nvme_cache: NvmeCacheSettings = Field(
        default_factory=NvmeCacheSettings, description="The node-local nvme-cache volume."
    )


def default_fsx_zone(cfg: PlatformConfig) -> str:
    """The zone FSx goes in when none is set: where the GPU nodes that read it most are, among
    the region's zones (a group in a Local Zone reads it from there)."""
    groups = sorted(cfg.gpu_node_groups, key=lambda g: not g.efa)
    in_region = [z for g in groups for z in cfg.group_zones(g) if z in cfg.aws.zones]
    return (in_region or cfg.aws.zones)[0]


def check_storage(cfg: PlatformConfig) -> None:
    """Storage rules that need the rest of the config: the provider and the GPU zones."""
    storage = cfg.storage
    if storage.fsx is not None and cfg.provider != "aws":
        raise FieldProblem("storage.fsx", "only valid with provider aws; use storage.ceph")
    if storage.ceph is not None and cfg.provider != "existing":
        raise FieldProblem("storage.ceph", "only valid with provider existing; use storage.fsx")
    sources = [k for k in ("fsx", "ceph", "shared_data") if getattr(storage, k) is not None]
    if len(sources) > 1:
        raise FieldProblem(
            f"storage.{sources[1]}",
            f"shared-data has one source; storage.{sources[0]} is set too: keep one",
        )
    fsx = storage.fsx
    if fsx is None or fsx.zone is None:
        return
    if fsx.zone not in cfg.aws.zones:
        raise FieldProblem(
            "storage.fsx.zone",
            f"{fsx.zone} is not one of aws.zones {cfg.aws.zones}: the file system stays in the "
            "region's zones, also for GPU groups in a Local Zone",
        )
    gpu_zones = sorted(
        {z for g in cfg.gpu_node_groups for z in cfg.group_zones(g) if z in cfg.aws.zones}
    )
    # Groups only in Local Zones read it from the region whichever zone it is in.
    local_only = not gpu_zones and bool(cfg.gpu_node_groups)
    if fsx.zone not in gpu_zones and not local_only:
        raise FieldProblem(
            "storage.fsx.zone",
            f"no GPU group runs in {fsx.zone}; put the file system where its readers are: "
            f"{', '.join(gpu_zones) or 'no GPU group is configured'}",
        )


def check_shared_data(cfg: PlatformConfig) -> None:
    """Something provides the claim every pod template the platform renders mounts
    (components/storage/volumes.training_volumes): with nothing behind it, every job's and the
    self-test's pods would stay Pending. Checked last, so that a stack's other problems come
    first. On AWS a stack without storage.fsx plans (a minimal stack needs only a region and
    zones) and is warned instead (infra/stack_warnings.shared_data_warnings)."""
    storage = cfg.storage
    if cfg.provider == "existing" and storage.ceph is None and storage.shared_data is None:
        raise FieldProblem(
            "storage",
            "nothing provides the shared-data claim every job and the self-test mount: set "
            "storage.ceph, storage.shared_data.storage_class (an existing ReadWriteMany "
            "StorageClass, such as an NFS, Weka or GPFS one) or storage.shared_data."
            "existing_claim (a claim the admin made in every namespace jobs run in)",
        )
