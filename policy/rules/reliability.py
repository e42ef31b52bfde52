"""Reliability rules: protected state, backups, logs, pod resources, GPU scheduling, versions."""

from __future__ import annotations

from collections.abc import Iterator

from policy.rules.base import (
    KUBERNETES_WORKLOADS,
    Context,
    Subject,
    as_list,
    containers,
    pod_specs,
    reference,
    rule,
)

# Resources whose loss loses data or locks it away: the cluster's secrets key, file systems,
# buckets, the cluster itself (its etcd holds every object).
STATEFUL_TYPES = (
    "aws:eks/cluster:Cluster",
    "aws:kms/key:Key",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:s3/bucket:Bucket",
)
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
DATA_REPOSITORY = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
CLUSTER = "aws:eks/cluster:Cluster"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
VPC = "aws:ec2/vpc:Vpc"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
BUCKET = "aws:s3/bucket:Bucket"
VERSIONING = "aws:s3/bucketVersioning:BucketVersioning"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
# The control-plane logs an incident needs: who called the API (audit), what it answered (api)
# and who authenticated (authenticator).
REQUIRED_LOG_TYPES = ("api", "audit", "authenticator")
GPU_RESOURCE = "nvidia.com/gpu"


@rule(
    "prod-stateful-protected",
    "mandatory",
    STATEFUL_TYPES,
    "In production, stateful resources (cluster, KMS keys, file systems, buckets) are protected "
    "so that no update or destroy deletes them.",
    "set production: true (it protects stateful resources); never remove protect in a component",
)
def prod_stateful_protected(r: Subject, ctx: Context) -> Iterator[str]:
    if ctx.production and not r.protect:
        yield "stateful resource not protected in production"


@rule(
    "prod-fsx-backups",
    "mandatory",
    [FSX],
    "In production a file system has automatic backups, or an S3 data repository that holds "
    "the data instead (FSx does not back up a file system linked to S3).",
    "set storage.fsx.automatic_backup_retention_days, or storage.fsx.data_repository",
    linked=True,
)
def prod_fsx_backups(r: Subject, ctx: Context) -> Iterator[str]:
    if not ctx.production or (r.props.get("automaticBackupRetentionDays") or 0) > 0:
        return
    linked = any(
        reference(a.props.get("fileSystemId")) == r.name for a in ctx.of_type(DATA_REPOSITORY)
    )
    if not linked:
        yield "no automatic backups and no S3 data repository"


@rule(
    "control-plane-logs",
    "mandatory",
    [CLUSTER],
    "The EKS control plane sends its api, audit and authenticator logs to CloudWatch.",
    "add the missing types to cluster.log_types",
)
def control_plane_logs(r: Subject, ctx: Context) -> Iterator[str]:
    enabled = set(as_list(r.props.get("enabledClusterLogTypes")))
    missing = [t for t in REQUIRED_LOG_TYPES if t not in enabled]
    if missing:
        yield f"control-plane logs off: {', '.join(missing)}"


@rule(
    "log-retention-set",
    "mandatory",
    [LOG_GROUP],
    "Every log group has a retention, so logs neither vanish early nor grow forever.",
    "set cluster.log_retention_days or network.flow_log_retention_days",
)
def log_retention_set(r: Subject, ctx: Context) -> Iterator[str]:
    if not r.props.get("retentionInDays"):
        yield "no retention: logs kept forever"


@rule(
    "flow-logs-on",
    "advisory",
    [VPC],
    "The VPC records flow logs. Advisory: the shipped dev stack leaves them off to save cost; "
    "production turns them on.",
    "set network.flow_logs: true (on with production: true)",
    linked=True,
)
def flow_logs_on(r: Subject, ctx: Context) -> Iterator[str]:
    if not any(reference(f.props.get("vpcId")) == r.name for f in ctx.of_type(FLOW_LOG)):
        yield "no flow log for this VPC"


@rule(
    "containers-requests-limits",
    "mandatory",
    KUBERNETES_WORKLOADS,
    "Every container declares resource requests and limits, so the scheduler and Kueue "
    "account for it and one pod cannot starve a node.",
    "set the resources in the workload's builder (components/scheduling/training_job.py, "
    "components/selftest/job.py)",
)
def containers_requests_limits(r: Subject, ctx: Context) -> Iterator[str]:
    for spec in pod_specs(r.props):
        for container in containers(spec):
            resources = container.get("resources") or {}
            for part in ("requests", "limits"):
                if not resources.get(part):
                    yield f"container {container.get('name')} has no {part}"


def _requests_gpus(spec: dict) -> bool:
    return any(
        GPU_RESOURCE in ((c.get("resources") or {}).get("limits") or {}) for c in containers(spec)
    )


def _tolerates_gpu_taint(spec: dict) -> bool:
    return any(
        t.get("key") == GPU_RESOURCE or (t.get("operator") == "Exists" and not t.get("key"))
        for t in spec.get("tolerations") or []
    )


@rule(
    "gpu-pods-tolerate-and-request",
    "mandatory",
    KUBERNETES_WORKLOADS,
    "A pod that requests GPUs tolerates the GPU taint (nvidia.com/gpu), and a pod that "
    "tolerates it requests GPUs, so no CPU pod squats on a GPU node.",
    "set tolerations and nvidia.com/gpu limits in the workload's builder",
)
def gpu_pods_tolerate_and_request(r: Subject, ctx: Context) -> Iterator[str]:
    for spec in pod_specs(r.props):
        requests, tolerates = _requests_gpus(spec), _tolerates_gpu_taint(spec)
        if requests and not tolerates:
            yield "requests GPUs without tolerating the nvidia.com/gpu taint"
        if tolerates and not requests:
            yield "tolerates the nvidia.com/gpu taint without requesting GPUs"


@rule(
    "versioned-buckets-expire-old-versions",
    "mandatory",
    [BUCKET],
    "A versioned bucket expires non-current versions, or every overwrite is kept and paid "
    "for forever.",
    "keep the noncurrentVersionExpiration lifecycle rule of the data bucket "
    "(components/storage/fsx.py)",
    linked=True,
)
def versioned_buckets_expire(r: Subject, ctx: Context) -> Iterator[str]:
    versioned = any(
        reference(v.props.get("bucket")) == r.name
        and (v.props.get("versioningConfiguration") or {}).get("status") == "Enabled"
        for v in ctx.of_type(VERSIONING)
    )
    if not versioned:
        return
    expires = any(
        reference(lc.props.get("bucket")) == r.name
        and any(
            rule_.get("status") == "Enabled" and rule_.get("noncurrentVersionExpiration")
            for rule_ in as_list(lc.props.get("rules"))
        )
        for lc in ctx.of_type(LIFECYCLE)
    )
    if not expires:
        yield "versioned bucket keeps non-current versions forever"


RULES = [
    prod_stateful_protected,
    prod_fsx_backups,
    control_plane_logs,
    log_retention_set,
    flow_logs_on,
    containers_requests_limits,
    gpu_pods_tolerate_and_request,
    versioned_buckets_expire,
]
