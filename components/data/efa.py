"""The AWS EFA device plugin: advertises `vpc.amazonaws.com/efa` on the nodes of EFA groups,
and nowhere else (on a node without EFA devices it crash-loops)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.base import PlatformComponent
from components.context import StackContext
from components.control.cluster import ClusterHandle
from components.helm import pinned_release
from components.vocabulary import GPU_NODE_DAEMONSET_TOLERATIONS
from model.config import GpuNodeGroupSettings
from model.versions import EFA_DEVICE_PLUGIN_IMAGE_TAG, eks_image_registry

NAMESPACE = "kube-system"
FABRIC_LABEL = "gpu-platform/fabric"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The plugin's repository in each region's EKS registry (the chart's values.yaml, v0.5.30).
EFA_DEVICE_PLUGIN_IMAGE_PATH = "eks/aws-efa-k8s-device-plugin"

# --------------------------------------------------------------------------- pure builders


def efa_groups(groups: Sequence[GpuNodeGroupSettings]) -> list[GpuNodeGroupSettings]:
    return [g for g in groups if g.efa]


def helm_values(groups: Sequence[GpuNodeGroupSettings], region: str) -> dict:
    """The chart ANDs `nodeSelector` with a node affinity on `supportedInstanceLabels` (one
    term per key, `In` the values). Select the fabric label only EFA groups carry, and narrow
    the instance types to those groups' own, all of which the chart's default list holds.
    The image comes from EKS's registry in the stack's `region`: the chart's default is
    us-west-2's, which a node elsewhere pulls across regions (or, without a route out, not at
    all). A registry mirror, where the stack has one, replaces it
    (components/registry_mirror.py)."""
    efa = efa_groups(groups)
    return {
        "image": {
            "repository": f"{eks_image_registry(region)}/{EFA_DEVICE_PLUGIN_IMAGE_PATH}",
            "tag": EFA_DEVICE_PLUGIN_IMAGE_TAG,
        },
        "nodeSelector": {FABRIC_LABEL: "efa"},
        "supportedInstanceLabels": {
            "keys": [INSTANCE_TYPE_LABEL],
            "values": sorted({t for g in efa for t in g.instance_types}),
        },
        # The chart tolerates only CriticalAddonsOnly; EFA groups carry the GPU taint.
        "tolerations": [dict(t) for t in GPU_NODE_DAEMONSET_TOLERATIONS],
    }


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class EfaDevicePluginArgs:
    context: StackContext
    cluster: ClusterHandle
    groups: Sequence[GpuNodeGroupSettings]
    # aws.region: the EKS registry the plugin's image is pulled from.
    region: str
    after: Sequence[pulumi.Resource] = ()


class EfaDevicePlugin(PlatformComponent):
    PLANE = "data"

    def __init__(
        self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        self.release = pinned_release(
            f"{args.context.env}-efa-device-plugin",
            "aws-efa-k8s-device-plugin",
            NAMESPACE,
            helm_values(args.groups, args.region),
            self.child(provider=args.cluster.kubernetes, depends_on=list(args.after)),
            context=args.context,
        )
        self.register_outputs({"release": self.release.name})
