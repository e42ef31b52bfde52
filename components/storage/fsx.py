"""FSx for Lustre: the shared file system on AWS, its S3 data repository, and the FSx CSI driver
that mounts it in training pods as the static volume behind the `shared-data` claim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.base import PlatformComponent
from components.context import StackContext
from components.control.cluster import ClusterHandle
from components.helm import pinned_release
from components.iam import account_id, pod_identity_trust_policy, role_with_policies
from components.kms import fsx_key_policy, rotated_kms_key
from components.storage.fsx_csi import (
    CSI_CONTROLLER_SA,
    dynamic_provisioning_policy,
    fsx_csi_values,
)
from components.storage.volumes import (
    PART_OF,
    SHARED_DATA,
    SharedData,
    declare_claim,
    shared_data_claim,
)
from model.config import DataRepositorySettings, FsxSettings

CSI_DRIVER = "fsx.csi.aws.com"
CSI_NAMESPACE = "kube-system"
# The static PersistentVolume behind the training namespace's claim (cluster-scoped, so it names
# the backend); another namespace's is `<PV_NAME>-<namespace>`.
PV_NAME = "fsx-shared-data"
# Lustre: 988 carries LNet; 1018-1023 are the privileged ports clients and servers connect from.
LUSTRE_PORTS: tuple[tuple[int, int], ...] = ((988, 988), (1018, 1023))

# --------------------------------------------------------------------------- pure builders

Peer = Literal["fsx", "nodes"]


@dataclass(frozen=True)
class SgRule:
    """One security-group rule: on `group`, `direction` traffic to/from `peer`."""

    group: Peer
    direction: Literal["ingress", "egress"]
    peer: Peer
    from_port: int
    to_port: int

    @property
    def name(self) -> str:
        ports = (
            str(self.from_port)
            if self.from_port == self.to_port
            else (f"{self.from_port}-{self.to_port}")
        )
        way = "in" if self.direction == "ingress" else "out"
        return f"{self.group}-{way}-{self.peer}-{ports}"

    @property
    def needed_at_creation(self) -> bool:
        """FSx refuses to create a file system whose groups do not pass Lustre traffic between
        its own servers (FSx for Lustre User Guide, "Creating an FSx for Lustre file system
        fails": "... do not permit Lustre LNET network traffic on port 988"; the rules, 988 and
        1018-1023 within the group, in "File system access control with Amazon VPC"); the
        rules towards the nodes matter only once a client mounts it."""
        return self.group == "fsx" and self.peer == "fsx"

    @property
    def description(self) -> str:
        way = "from" if self.direction == "ingress" else "to"
        return f"Lustre {self.from_port}-{self.to_port} {way} {self.peer}"


def lustre_security_group_rules() -> list[SgRule]:
    """Lustre traffic between the file system and its clients (the nodes), both ways: the file
    system's group admits the nodes and itself (its servers talk to each other), and sends to
    both, since a group declared here starts with no egress; the nodes' group admits the file
    system, whose servers connect back to clients."""
    rules = []
    for low, high in LUSTRE_PORTS:
        for peer in ("nodes", "fsx"):
            rules.append(SgRule("fsx", "ingress", peer, low, high))
            rules.append(SgRule("fsx", "egress", peer, low, high))
        rules.append(SgRule("nodes", "ingress", "fsx", low, high))
    return rules


def data_repository_path(bucket: str, prefix: str) -> str:
    """The S3 side of the association: s3://bucket/prefix/ (the whole bucket for prefix "")."""
    return f"s3://{bucket}/{prefix}"


# Multipart uploads a client abandoned (an interrupted export) are billed until aborted.
ABORT_INCOMPLETE_UPLOADS_DAYS = 7


def bucket_lifecycle_rules(
    repo: DataRepositorySettings,
) -> list[aws.s3.BucketLifecycleConfigurationRuleArgs]:
    """Versioning keeps every overwritten object; expire the old versions after the configured
    days, and abort abandoned multipart uploads, over the whole bucket (an empty filter)."""
    return [
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="expire-old-versions-and-abandoned-uploads",
            status="Enabled",
            filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(),
            noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                noncurrent_days=repo.noncurrent_version_expiration_days
            ),
            abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                days_after_initiation=ABORT_INCOMPLETE_UPLOADS_DAYS
            ),
        )
    ]


def association_s3(repo: DataRepositorySettings) -> aws.fsx.DataRepositoryAssociationS3Args:
    return aws.fsx.DataRepositoryAssociationS3Args(
        auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(
            events=list(repo.auto_import_events)
        ),
        auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(
            events=list(repo.auto_export_events)
        ),
    )


def lustre_file_system_args(
    env: str,
    fsx: FsxSettings,
    subnet_id: pulumi.Input[str],
    security_group_id: pulumi.Input[str],
    kms_key_arn: pulumi.Input[str] | None,
) -> aws.fsx.LustreFileSystemArgs:
    persistent = fsx.deployment_type.startswith("PERSISTENT")
    backups = fsx.automatic_backup_retention_days
    return aws.fsx.LustreFileSystemArgs(
        # The provider takes one subnet as a string: Lustre lives in one zone.
        subnet_ids=subnet_id,
        security_group_ids=[security_group_id],
        deployment_type=fsx.deployment_type,
        storage_type="SSD",
        storage_capacity=fsx.storage_capacity_gib,
        per_unit_storage_throughput=fsx.throughput_tier if persistent else None,
        data_compression_type=fsx.data_compression,
        file_system_type_version=fsx.lustre_version,
        kms_key_id=kms_key_arn,
        automatic_backup_retention_days=backups if persistent else None,
        daily_automatic_backup_start_time=fsx.daily_automatic_backup_start_time
        if backups
        else None,
        copy_tags_to_backups=True if backups else None,
        skip_final_backup=not backups if persistent else None,
        tags={"Name": f"{env}-fsx"},
    )


def volume_name(namespace: str, first: bool) -> str:
    return PV_NAME if first else f"{PV_NAME}-{namespace}"


def volume_handle(fs_id: pulumi.Input[str], namespace: str, first: bool) -> pulumi.Input[str]:
    """The file system id for the training namespace's volume (as it always was), `<id>/<ns>`
    for another's. A static volume binds one claim (kubernetes pv_controller.go), so each
    namespace's claim has a volume of its own on the same file system. The driver mounts
    `<dnsname>@tcp:/<mountname>` from the volume attributes and uses the handle only as the key
    of its in-flight operations (aws-fsx-csi-driver pkg/driver/node.go, NodePublishVolume; no
    NodeStage), while the kubelet names a CSI volume by driver and handle: distinct handles keep
    two namespaces' pods on one node from sharing one volume's bookkeeping."""
    return fs_id if first else pulumi.Output.concat(fs_id, "/", namespace)


def lustre_volume(
    fs_id: pulumi.Input[str],
    dns_name: pulumi.Input[str],
    mount_name: pulumi.Input[str],
    size_gib: int,
    mount_options: Sequence[str],
    claim_namespace: str,
) -> k8s.core.v1.PersistentVolumeSpecArgs:
    """The static volume for an existing file system: the CSI handle names it (`fs_id`, see
    volume_handle), the attributes say where to mount it from; the claim reference reserves it
    for `shared-data` in `claim_namespace`."""
    return k8s.core.v1.PersistentVolumeSpecArgs(
        capacity={"storage": f"{size_gib}Gi"},
        access_modes=["ReadWriteMany"],
        volume_mode="Filesystem",
        persistent_volume_reclaim_policy="Retain",
        storage_class_name="",
        mount_options=list(mount_options),
        claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=claim_namespace, name=SHARED_DATA),
        csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
            driver=CSI_DRIVER,
            volume_handle=fs_id,
            volume_attributes={"dnsname": dns_name, "mountname": mount_name},
        ),
    )


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class FsxLustreArgs:
    context: StackContext
    fsx: FsxSettings
    # `storage.fsx.zone`, or the GPU nodes' zone (model/config.default_fsx_zone).
    zone: str
    region: str
    # Its name (the CSI driver's Pod Identity association) and the nodes' security group.
    cluster: ClusterHandle
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    # Every namespace jobs run in, the training namespace first: each gets its `shared-data`.
    claim_namespaces: Sequence[str]
    # Declared first: the Pod Identity agent (for the driver) and the claims' namespaces.
    after: Sequence[pulumi.Resource] = ()


class FsxLustre(PlatformComponent):
    """FSx for Lustre in the GPU nodes' zone, with its security group, an optional KMS key and S3
    data repository, the FSx CSI driver, and the static `shared-data` volume and claim."""

    PLANE = "storage"

    def __init__(self, name: str, args: FsxLustreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        env, fsx = args.context.env, args.fsx

        sg = aws.ec2.SecurityGroup(
            f"{env}-fsx-sg",
            aws.ec2.SecurityGroupArgs(
                vpc_id=args.vpc_id,
                description="FSx for Lustre: Lustre ports to and from nodes and its own servers",
                tags={"Name": f"{env}-fsx"},
            ),
            self.child(),
        )
        groups = {"fsx": sg.id, "nodes": args.cluster.security_group_id}
        at_creation = []
        for rule in lustre_security_group_rules():
            kind = (
                (aws.vpc.SecurityGroupIngressRule, aws.vpc.SecurityGroupIngressRuleArgs)
                if rule.direction == "ingress"
                else (aws.vpc.SecurityGroupEgressRule, aws.vpc.SecurityGroupEgressRuleArgs)
            )
            declared = kind[0](
                f"{env}-{rule.name}",
                kind[1](
                    security_group_id=groups[rule.group],
                    referenced_security_group_id=groups[rule.peer],
                    ip_protocol="tcp",
                    from_port=rule.from_port,
                    to_port=rule.to_port,
                    description=rule.description,
                ),
                self.child(),
            )
            if rule.needed_at_creation:
                at_creation.append(declared)

        kms_key_arn: pulumi.Input[str] | None = fsx.kms_key_arn
        if fsx.create_kms_key:
            key = rotated_kms_key(
                f"{env}-fsx-key",
                f"FSx for Lustre data at rest ({env})",
                f"gpu-platform-{env}-fsx",
                self,
                args.context.protect,
                account_id(self).apply(lambda account: fsx_key_policy(account, args.region)),
            )
            kms_key_arn = key.arn

        self.file_system = aws.fsx.LustreFileSystem(
            f"{env}-fsx",
            lustre_file_system_args(env, fsx, args.subnet_id, sg.id, kms_key_arn),
            # Its own group's rules first: a file system whose servers cannot reach each other
            # fails to create. Not the node rules: they need the EKS cluster's security group,
            # and waiting for them would build the file system after the cluster, not beside it.
            self.child(protect=args.context.protect, depends_on=at_creation),
        )

        self.bucket: aws.s3.Bucket | None = None
        self.association: aws.fsx.DataRepositoryAssociation | None = None
        if fsx.data_repository is not None:
            self._data_repository(env, fsx.data_repository, args.context.protect)

        csi = self._csi_driver(args)
        claims = []
        for i, ns in enumerate(args.claim_namespaces):
            # The training namespace's keep the names they always had: no replacement.
            suffix = "" if i == 0 else f"-in-{ns}"
            pv = k8s.core.v1.PersistentVolume(
                f"{env}-shared-data-pv{suffix}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=volume_name(ns, i == 0), labels=PART_OF),
                spec=lustre_volume(
                    volume_handle(self.file_system.id, ns, i == 0),
                    self.file_system.dns_name,
                    self.file_system.mount_name,
                    fsx.storage_capacity_gib,
                    fsx.mount_options,
                    ns,
                ),
                opts=self.child(depends_on=[csi]),
            )
            claims.append(
                declare_claim(
                    self,
                    f"{env}-shared-data{suffix}",
                    shared_data_claim(
                        ns,
                        fsx.storage_capacity_gib,
                        storage_class="",
                        volume_name=volume_name(ns, i == 0),
                    ),
                    after=[pv, *args.after],
                )
            )
        claim = claims[0]
        self.shared = SharedData(claim, fsx.expected_throughput_mbps)
        self.outputs = {
            "storage_fsx_id": self.file_system.id,
            "storage_fsx_zone": args.zone,
            "storage_fsx_dns_name": self.file_system.dns_name,
            **self.shared.outputs(),
        }
        self.register_outputs(
            {
                "mount_name": self.file_system.mount_name,
                "security_group_id": sg.id,
                **self.outputs,
            }
        )

    def _data_repository(self, env: str, repo: DataRepositorySettings, protect: bool) -> None:
        bucket = aws.s3.Bucket(
            f"{env}-fsx-data",
            # Without a name, Pulumi derives a unique one from the logical name.
            aws.s3.BucketArgs(bucket=repo.bucket_name, force_destroy=False),
            self.child(protect=protect),
        )
        versioning = aws.s3.BucketVersioning(
            f"{env}-fsx-data",
            aws.s3.BucketVersioningInitArgs(
                bucket=bucket.id,
                versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(
                    status="Enabled"
                ),
            ),
            self.child(),
        )
        settings = [
            versioning,
            aws.s3.BucketPublicAccessBlock(
                f"{env}-fsx-data",
                aws.s3.BucketPublicAccessBlockArgs(
                    bucket=bucket.id,
                    block_public_acls=True,
                    block_public_policy=True,
                    ignore_public_acls=True,
                    restrict_public_buckets=True,
                ),
                self.child(),
            ),
            aws.s3.BucketLifecycleConfiguration(
                f"{env}-fsx-data",
                aws.s3.BucketLifecycleConfigurationArgs(
                    bucket=bucket.id, rules=bucket_lifecycle_rules(repo)
                ),
                # Rules on non-current versions go after versioning (the provider's
                # BucketLifecycleConfiguration docs).
                self.child(depends_on=[versioning]),
            ),
            aws.s3.BucketServerSideEncryptionConfiguration(
                f"{env}-fsx-data",
                aws.s3.BucketServerSideEncryptionConfigurationInitArgs(
                    bucket=bucket.id,
                    rules=[
                        aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                            apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                                sse_algorithm="AES256"
                            ),
                        )
                    ],
                ),
                self.child(),
            ),
        ]
        path = (
            data_repository_path(repo.bucket_name, repo.s3_prefix)
            if repo.bucket_name
            else bucket.bucket.apply(lambda name: data_repository_path(name, repo.s3_prefix))
        )
        self.bucket = bucket
        self.association = aws.fsx.DataRepositoryAssociation(
            f"{env}-fsx-data",
            aws.fsx.DataRepositoryAssociationArgs(
                file_system_id=self.file_system.id,
                data_repository_path=path,
                file_system_path=repo.file_system_path,
                batch_import_meta_data_on_create=repo.import_metadata_on_create,
                delete_data_in_filesystem=False,
                s3=association_s3(repo),
            ),
            self.child(depends_on=settings),
        )

    def _csi_driver(self, args: FsxLustreArgs) -> k8s.helm.v3.Release:
        """The driver's chart; a Pod Identity role only for dynamic provisioning, since the
        static volume needs no AWS call (components/storage/fsx_csi.py)."""
        env, dynamic = args.context.env, args.fsx.csi_provisioning == "dynamic"
        after = list(args.after)
        if dynamic:
            policy = pulumi.Output.all(args.cluster.name, self.file_system.arn).apply(
                lambda v: dynamic_provisioning_policy(v[0], v[1])
            )
            role = role_with_policies(
                f"{env}-fsx-csi", pod_identity_trust_policy(), [], self, policy
            )
            after = [
                aws.eks.PodIdentityAssociation(
                    f"{env}-fsx-csi",
                    aws.eks.PodIdentityAssociationArgs(
                        cluster_name=args.cluster.name,
                        namespace=CSI_NAMESPACE,
                        service_account=CSI_CONTROLLER_SA,
                        role_arn=role.arn,
                    ),
                    self.child(depends_on=after),
                )
            ]
        return pinned_release(
            f"{env}-fsx-csi",
            "aws-fsx-csi-driver",
            CSI_NAMESPACE,
            fsx_csi_values(args.region, args.cluster.name, dynamic),
            self.child(depends_on=after),
            context=args.context,
        )
