"""What every node group kind shares: the node role, the root volume, instance metadata
options and nodeadm user data."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2
import pulumi
import pulumi_aws as aws
import yaml

from components.base import PlatformComponent
from components.context import StackContext
from components.iam import role_with_policies, service_trust_policy
from model.catalog import InstanceType
from model.config import GpuTuningSettings, KubeletSettings, Scaling
from model.config.nodes import ROOT_VOLUME_IOPS, ROOT_VOLUME_THROUGHPUT_MBPS
from model.config.repair import NodeRepairSettings, repair_overrides

NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
)
SSM_POLICY = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
NODEADM_CONTENT_TYPE = "application/node.eks.aws"
SHELL_CONTENT_TYPE = "text/x-shellscript"
NVIDIA_SMI = "/usr/bin/nvidia-smi"
_BOUNDARY = "//gpu-platform//"
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)

# --------------------------------------------------------------------------- pure builders


def node_config(
    instance: InstanceType, kubelet: KubeletSettings, max_pods: int, fast_pull: bool = False
) -> dict:
    """The nodeadm NodeConfig our user data adds; EKS appends the cluster's own part.

    Local NVMe becomes one RAID0 array exactly when the type has instance storage.
    `fast_pull` (images.fast_pull) turns on SOCI parallel pull: the gate alone makes nodeadm
    write containerd's and the snapshotter's config (../shared/PINS.md, "Fast image start-up").
    """
    config = {
        "maxPods": max_pods,
        "cpuManagerPolicy": kubelet.cpu_manager_policy,
        "topologyManagerPolicy": kubelet.topology_manager_policy,
        "topologyManagerScope": kubelet.topology_manager_scope,
        "systemReserved": dict(sorted(kubelet.system_reserved.items())),
        "kubeReserved": dict(sorted(kubelet.kube_reserved.items())),
    }
    spec: dict = {"kubelet": {"config": config}}
    if fast_pull:
        spec["featureGates"] = {"FastImagePull": True}
    if instance.has_instance_storage:
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


def nvidia_smi_commands(tuning: GpuTuningSettings) -> list[str]:
    """The `nvidia-smi` calls that apply `tuning` to every GPU of the node."""
    commands = []
    if tuning.persistence_mode:
        commands.append(f"{NVIDIA_SMI} -pm 1")
    if tuning.compute_mode == "exclusive-process":
        commands.append(f"{NVIDIA_SMI} -c EXCLUSIVE_PROCESS")
    if tuning.power_limit_watts is not None:
        commands.append(f"{NVIDIA_SMI} -pl {tuning.power_limit_watts}")
    if tuning.application_clocks is not None:
        clocks = tuning.application_clocks
        commands.append(f"{NVIDIA_SMI} -ac {clocks.memory_mhz},{clocks.graphics_mhz}")
    return commands


def boot_script(
    hugepages_2mi: int, tuning: GpuTuningSettings, unlimited_memlock: bool = False
) -> str | None:
    """The shell part a GPU node runs before its kubelet starts: EFA hugepages, no memlock
    limit for containers, GPU tuning. None when there is nothing to do.

    The memlock limit goes on containerd's unit (`LimitMEMLOCK=infinity`), which containers
    inherit, and not into nodeadm's `containerd.baseRuntimeSpec`. At the pinned AMI
    (awslabs/amazon-eks-ami v20260724) nodeadm merges that field into its default spec with
    `util.Merge` (nodeadm/internal/containerd/base_runtime_spec.go, nodeadm/internal/util/
    merge.go): it decodes both into `map[string]interface{}`, so every number becomes a float64,
    and mergo replaces lists whole. RLIM_INFINITY (18446744073709551615) comes out as
    18446744073709552000, which containerd cannot read into the spec's uint64, so its CRI plugin
    fails to load the base spec (containerd v2.3.4 plugins/cri/runtime/plugin.go,
    loadOCISpec). And an `rlimits` list there would also drop the AMI's RLIMIT_NOFILE.
    tests/helpers/container_rlimits.py models all of this."""
    commands = nvidia_smi_commands(tuning)
    if not hugepages_2mi and not unlimited_memlock and not commands:
        return None
    return _TEMPLATES.get_template("gpu-boot.sh.j2").render(
        hugepages_2mi=hugepages_2mi, unlimited_memlock=unlimited_memlock, commands=commands
    )


def user_data(node_configs: list[dict], scripts: list[str] = ()) -> str:
    """MIME multipart user data: one nodeadm part per NodeConfig first (nodeadm reads them
    before cloud-init runs anything), then one shell part per script."""
    parts = [
        {
            "content_type": NODEADM_CONTENT_TYPE,
            "body": "---\n" + yaml.dump(c, Dumper=yaml.CSafeDumper, sort_keys=False),
        }
        for c in node_configs
    ]
    parts += [{"content_type": SHELL_CONTENT_TYPE, "body": script} for script in scripts]
    return _TEMPLATES.get_template("user-data.mime.j2").render(boundary=_BOUNDARY, parts=parts)


def encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def root_volume(size_gib: int) -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    """Encrypted gp3 root volume; /dev/xvda is the AL2023 AMI's root device."""
    return aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
        device_name="/dev/xvda",
        ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
            volume_size=size_gib,
            volume_type="gp3",
            iops=ROOT_VOLUME_IOPS,
            throughput=ROOT_VOLUME_THROUGHPUT_MBPS,
            encrypted="true",
            delete_on_termination="true",
        ),
    )


def imdsv2_only() -> aws.ec2.LaunchTemplateMetadataOptionsArgs:
    """IMDSv2 required, one hop: pods (which use Pod Identity) cannot reach node credentials.

    Deliberate, and kept: a pod's IMDS request crosses a second hop and goes unanswered, so
    nothing in a pod may discover its region or instance identity there. Every component that
    needs one gets it passed in (cluster-autoscaler's awsRegion, the FSx CSI driver's region).
    """
    return aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled",
        http_tokens="required",
        http_put_response_hop_limit=1,
    )


def tag_specifications(tags: dict[str, str]) -> list[aws.ec2.LaunchTemplateTagSpecificationArgs]:
    return [
        aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
        for kind in ("instance", "volume", "network-interface")
    ]


def node_repair_config(
    repair: NodeRepairSettings, reboot_only: bool
) -> aws.eks.NodeGroupNodeRepairConfigArgs:
    """`nodeRepairConfig` of one managed node group. Unset thresholds stay unset, so EKS
    applies its own defaults rather than a copy of them that could go stale."""
    if not repair.enabled:
        return aws.eks.NodeGroupNodeRepairConfigArgs(enabled=False)
    overrides = [
        aws.eks.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs(
            node_monitoring_condition=o.condition,
            node_unhealthy_reason=o.reason,
            repair_action=o.action,
            min_repair_wait_time_mins=o.wait_minutes,
        )
        for o in repair_overrides(repair, reboot_only)
    ]
    return aws.eks.NodeGroupNodeRepairConfigArgs(
        enabled=True,
        max_unhealthy_node_threshold_percentage=repair.max_unhealthy_percentage,
        max_unhealthy_node_threshold_count=repair.max_unhealthy_count,
        max_parallel_nodes_repaired_percentage=repair.max_parallel_percentage,
        max_parallel_nodes_repaired_count=repair.max_parallel_count,
        node_repair_config_overrides=overrides or None,
    )


# ------------------------------------------------------------------------ shared declaration


@dataclass
class ManagedNodeGroupSpec:
    """What tells one managed node group from another; the rest is common to every kind."""

    name: str
    cluster_name: pulumi.Input[str]
    # The cluster's version output, so a control-plane upgrade rolls the nodes after it.
    kubernetes_version: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]
    security_group_ids: Sequence[pulumi.Input[str]]
    ami_type: str
    capacity_type: str
    instance_types: Sequence[str]
    scaling: Scaling
    root_volume_gib: int
    user_data: str
    labels: dict[str, str]
    tags: dict[str, str]
    node_repair: aws.eks.NodeGroupNodeRepairConfigArgs
    taints: Sequence[dict[str, str]] = ()
    network_interfaces: Sequence[dict] | None = None
    placement_group: pulumi.Input[str] | None = None
    capacity_reservation: dict[str, str] | None = None
    capacity_block: bool = False
    # EKS's updateStrategy; None keeps its default (new instances before old ones go).
    update_strategy: str | None = None
    # The EKS AMI release (releaseVersion); None: EKS's latest for the version.
    release_version: str | None = None
    after: Sequence[pulumi.Resource] = ()

    @property
    def launch_template_instance_type(self) -> str | None:
        """EKS user guide, "Capacity Blocks for managed node groups": the launch template of a
        Capacity Block group names the instance type, and the node group then names none."""
        return self.instance_types[0] if self.capacity_block else None

    @property
    def node_group_instance_types(self) -> list[str] | None:
        return None if self.capacity_block else list(self.instance_types)


_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
_ReservationTarget = (
    aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs
)


def declare_node_group(owner: PlatformComponent, spec: ManagedNodeGroupSpec) -> aws.eks.NodeGroup:
    """A launch template and the managed node group that uses it, as children of `owner`."""
    reservation = None
    if spec.capacity_reservation:
        target = (
            aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                **spec.capacity_reservation
            )
        )
        reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=target
        )
    interfaces = None
    if spec.network_interfaces:
        interfaces = [
            aws.ec2.LaunchTemplateNetworkInterfaceArgs(**i) for i in spec.network_interfaces
        ]
    launch_template = aws.ec2.LaunchTemplate(
        spec.name,
        aws.ec2.LaunchTemplateArgs(
            description=f"managed node group {spec.name}",
            instance_type=spec.launch_template_instance_type,
            update_default_version=True,
            metadata_options=imdsv2_only(),
            block_device_mappings=[root_volume(spec.root_volume_gib)],
            # With interfaces laid out, security groups go on each interface instead.
            vpc_security_group_ids=None if interfaces else list(spec.security_group_ids),
            network_interfaces=interfaces,
            placement=(
                aws.ec2.LaunchTemplatePlacementArgs(group_name=spec.placement_group)
                if spec.placement_group is not None
                else None
            ),
            capacity_reservation_specification=reservation,
            instance_market_options=(
                aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
                if spec.capacity_block
                else None
            ),
            user_data=encoded(spec.user_data),
            tag_specifications=tag_specifications({**spec.tags, "Name": spec.name}),
        ),
        owner.child(),
    )
    return aws.eks.NodeGroup(
        spec.name,
        aws.eks.NodeGroupArgs(
            cluster_name=spec.cluster_name,
            node_group_name=spec.name,
            node_role_arn=spec.node_role_arn,
            subnet_ids=list(spec.subnet_ids),
            version=spec.kubernetes_version,
            release_version=spec.release_version,
            ami_type=spec.ami_type,
            capacity_type=spec.capacity_type,
            instance_types=spec.node_group_instance_types,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=spec.scaling.min_size,
                max_size=spec.scaling.max_size,
                desired_size=spec.scaling.desired,
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=launch_template.id, version=launch_template.latest_version.apply(str)
            ),
            labels=spec.labels,
            taints=[
                aws.eks.NodeGroupTaintArgs(
                    key=t["key"], value=t["value"], effect=_TAINT_EFFECTS[t["effect"]]
                )
                for t in spec.taints
            ],
            update_config=aws.eks.NodeGroupUpdateConfigArgs(
                max_unavailable=1, update_strategy=spec.update_strategy
            ),
            node_repair_config=spec.node_repair,
            tags=spec.tags,
        ),
        # cluster-autoscaler owns the desired size once the group exists. The group's name is
        # fixed (the autoscaler's tags, the deploy policy and the docs name it), so a
        # replacement must delete the old group first: created first, the new one would collide
        # on the name. The plan says the group is then without nodes until the new one's join.
        owner.child(
            depends_on=list(spec.after),
            ignore_changes=["scalingConfig.desiredSize"],
            delete_before_replace=True,
        ),
    )


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class NodeRoleArgs:
    context: StackContext
    ssm_access: bool
    # components/data/pull_through_cache.py puller_policy, where the stack has the cache.
    inline_policy: str | None = None


class NodeRole(PlatformComponent):
    """The IAM role every managed node group uses: join the cluster and pull images, nothing
    more (the VPC CNI has its own Pod Identity role). EKS makes the instance profile for each
    managed node group from this role; a launch template for one must not name its own."""

    PLANE = "data"

    def __init__(self, name: str, args: NodeRoleArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        policies = [*NODE_POLICIES, *([SSM_POLICY] if args.ssm_access else [])]
        self.role = role_with_policies(
            f"{args.context.env}-node",
            service_trust_policy("ec2.amazonaws.com"),
            policies,
            self,
            inline_policy=args.inline_policy,
        )
        self.register_outputs({"arn": self.role.arn})
