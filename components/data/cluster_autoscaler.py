"""cluster-autoscaler: the upstream chart, pinned, with a Pod Identity role scoped to this
cluster's node groups and a priority expander that prefers reserved capacity."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.base import PlatformComponent
from components.context import StackContext
from components.control.cluster import ClusterHandle
from components.data.gpu_node_group import asg_name_pattern
from components.data.system_node_group import SYSTEM_LABELS
from components.helm import pinned_release
from components.iam import account_id, pod_identity_trust_policy, role_with_policies
from model.config import AutoscalerSettings, GpuNodeGroupSettings
from model.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
# The tag EKS puts on every managed node group's ASG: the write actions need it.
OWNED_TAG = "k8s.io/cluster-autoscaler/{cluster}"
# cluster-autoscaler's AWS README ("IAM Policy") lists these reads. The Service Authorization
# Reference gives every autoscaling and ec2 one below no resource type: IAM accepts them only
# on "*". eks:DescribeNodegroup takes a nodegroup ARN, so it is scoped to this cluster's groups.
UNSCOPABLE_READ_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
)
NODEGROUP_READ_ACTIONS = ("eks:DescribeNodegroup",)
WRITE_ACTIONS = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)

# The ProvisioningRequest CRD, which the chart does not install, from the autoscaler's own
# repository at the tag of the chart release the stack installs: a chart bump (or a stack's
# override, `charts`) moves the CRD with it.
PROVISIONING_REQUEST_CRD = (
    "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-chart-{version}/"
    "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"
)

# --------------------------------------------------------------------------- pure builders


def nodegroups_arn(region: str, account: str, cluster_name: str) -> str:
    """Every managed node group of one cluster: nodegroup/<cluster>/<group>/<uuid>."""
    return f"arn:aws:eks:{region}:{account}:nodegroup/{cluster_name}/*"


def iam_policy(cluster_name: str, region: str, account: str) -> str:
    """Read what IAM cannot narrow; describe only this cluster's node groups; resize and
    terminate only ASGs this cluster owns."""
    owned = f"aws:ResourceTag/{OWNED_TAG.format(cluster=cluster_name)}"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": list(UNSCOPABLE_READ_ACTIONS), "Resource": "*"},
                {
                    "Effect": "Allow",
                    "Action": list(NODEGROUP_READ_ACTIONS),
                    "Resource": nodegroups_arn(region, account, cluster_name),
                },
                {
                    "Effect": "Allow",
                    "Action": list(WRITE_ACTIONS),
                    "Resource": "*",
                    "Condition": {"StringEquals": {owned: "owned"}},
                },
            ],
        }
    )


def expander_priorities(
    env: str, groups: Sequence[GpuNodeGroupSettings], settings: AutoscalerSettings
) -> dict[int, list[str]]:
    """Priority -> ASG name patterns. Reserved capacity first (already paid for), then
    on-demand, then spot; anything unlisted (the system group) last."""
    priorities: dict[int, list[str]] = {}
    for group in groups:
        level = settings.priorities[group.capacity]
        priorities.setdefault(level, []).append(asg_name_pattern(env, group))
    priorities.setdefault(0, []).append(".*")
    return {level: sorted(p) for level, p in sorted(priorities.items(), reverse=True)}


def helm_values(
    env: str,
    cluster_name: str,
    region: str,
    kubernetes_version: str,
    groups: Sequence[GpuNodeGroupSettings],
    settings: AutoscalerSettings,
) -> dict:
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"tag": CLUSTER_AUTOSCALER_IMAGE_TAGS[kubernetes_version]},
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "extraArgs": {
            "expander": "priority",
            "balance-similar-node-groups": True,
            # GPU nodes keep datasets on local NVMe; that must not pin them forever, nor
            # should it block scale-down of an idle node.
            "skip-nodes-with-local-storage": False,
            "scale-down-delay-after-add": f"{settings.scale_down_delay_after_add_minutes}m",
            # Kueue asks for a workload's nodes as one ProvisioningRequest (components/
            # scheduling.py); the CRD comes from PROVISIONING_REQUEST_CRD.
            "enable-provisioning-requests": True,
        },
        # Helm values are JSON: map keys are strings.
        "expanderPriorities": {
            str(level): patterns
            for level, patterns in expander_priorities(env, groups, settings).items()
        },
        "nodeSelector": dict(SYSTEM_LABELS),
    }


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    context: StackContext
    region: str
    cluster: ClusterHandle
    groups: Sequence[GpuNodeGroupSettings]
    settings: AutoscalerSettings
    after: Sequence[pulumi.Resource] = ()


class ClusterAutoscaler(PlatformComponent):
    PLANE = "data"

    def __init__(
        self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        role = role_with_policies(
            f"{args.context.env}-cluster-autoscaler",
            pod_identity_trust_policy(),
            [],
            self,
            inline_policy=account_id(self).apply(
                lambda account: iam_policy(args.context.cluster_name, args.region, account)
            ),
        )
        association = aws.eks.PodIdentityAssociation(
            f"{args.context.env}-cluster-autoscaler",
            aws.eks.PodIdentityAssociationArgs(
                cluster_name=args.cluster.name,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                role_arn=role.arn,
            ),
            self.child(),
        )
        self.provisioning_request_crd = crd = k8s.yaml.v2.ConfigFile(
            f"{args.context.env}-provisioning-request-crd",
            file=PROVISIONING_REQUEST_CRD.format(
                version=args.context.chart("cluster-autoscaler").version
            ),
            opts=self.child(providers=[args.cluster.kubernetes]),
        )
        self.release = pinned_release(
            f"{args.context.env}-cluster-autoscaler",
            "cluster-autoscaler",
            NAMESPACE,
            helm_values(
                args.context.env,
                args.context.cluster_name,
                args.region,
                args.cluster.kubernetes_version,
                args.groups,
                args.settings,
            ),
            self.child(
                provider=args.cluster.kubernetes, depends_on=[association, crd, *args.after]
            ),
            context=args.context,
        )
        self.register_outputs({"release": self.release.name})
