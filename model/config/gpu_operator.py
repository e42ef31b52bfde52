"""The GPU software config: the NVIDIA GPU Operator, on every provider.

The operator runs the device plugin (with the per-node sharing configs the pools name), the MIG
manager, GPU Feature Discovery, Node Feature Discovery and the cluster's one DCGM exporter. On
AWS the AL2023 NVIDIA AMI brings the driver and the container toolkit; on an existing cluster
the admin's nodes may or may not have them, so the operator installs them when told to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from model.config.base import DnsLabel, FieldProblem, Settings
from model.config.references import K8S_NAMESPACE, names

if TYPE_CHECKING:
    from model.config import PlatformConfig

# The node labels by which the operator picks a node's device-plugin config and MIG layout. The
# platform derives them from `gpu_sharing`; a hand-set one could name a config nobody defines.
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# The GPU Operator runs its device plugin only where this label is `true`, and writes `true`
# only where it is missing or empty (gpu-operator v26.7.0 assets/state-device-plugin/
# 0500_daemonset.yaml nodeSelector; controllers/state_manager.go addGPUStateLabels): `false` on
# a DRA pool's nodes keeps the device plugin off them (model/dra.py).
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
DEVICE_PLUGIN_OFF = "false"
# What the MIG manager says of the layout it last applied: pending, rebooting, success or
# failed (NVIDIA/mig-parted deployments/gpu-operator reconfigure-mig.sh, which the mig-manager
# image runs; NVIDIA GPU Operator docs, "GPU Operator with MIG").
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
# The GPU Operator's ClusterPolicy `mig.strategy` (NVIDIA GPU Operator docs, "GPU Operator with
# MIG"): one value for the whole cluster, read by every MIG node's device plugin and GFD.
MigStrategy = Literal["single", "mixed"]
MIG_STRATEGIES: tuple[MigStrategy, ...] = ("single", "mixed")


class GpuOperatorSettings(Settings):
    """NVIDIA GPU Operator (chart gpu-operator, pinned in model/versions.py)."""

    namespace: Annotated[DnsLabel, names(K8S_NAMESPACE)] = Field(
        "gpu-operator",
        description="Namespace of the operator and its DaemonSets (created privileged: the "
        "driver, toolkit and MIG manager pods need host access).",
    )
    install_driver: bool = Field(
        False,
        description="provider existing only: let the operator install the NVIDIA driver on "
        "GPU nodes that have none. Off: the nodes already run a driver. The AL2023 NVIDIA AMI "
        "on AWS ships one, so there it stays off.",
    )
    install_toolkit: bool = Field(
        False,
        description="provider existing only: let the operator install the NVIDIA container "
        "toolkit. Off: the nodes' container runtime already has it (the AL2023 NVIDIA AMI "
        "does).",
    )
    mig_strategy: MigStrategy = Field(
        "single",
        description="How every MIG pool (gpu_sharing.mode mig) is cut and advertised; the "
        "operator's mig.strategy is one for the whole cluster. `single` cuts every GPU into "
        "seven 1g slices, each advertised as nvidia.com/gpu; `mixed` uses the GPU Operator's "
        "all-balanced layout (two 1g, one 2g, one 3g per GPU), advertised as "
        "nvidia.com/mig-<profile>.",
    )


def moved_mig_strategy(value: object) -> FieldProblem:
    """The error for `gpu_sharing.mig_strategy`, the per-pool key this setting replaced."""
    write = value if value in MIG_STRATEGIES else " or ".join(MIG_STRATEGIES)
    return FieldProblem(
        "mig_strategy",
        "moved to gpu_operator.mig_strategy, because the GPU Operator's mig.strategy is one "
        "setting for the whole cluster; remove it from this pool and write it once as "
        f"gpu_operator: {{mig_strategy: {write}}} (got {value!r})",
    )


def check_gpu_operator(cfg: PlatformConfig) -> None:
    """Rules that span the GPU Operator settings and the GPU pools."""
    settings = cfg.gpu_operator
    if cfg.provider == "aws":
        for key in ("install_driver", "install_toolkit"):
            if getattr(settings, key):
                raise FieldProblem(
                    f"gpu_operator.{key}",
                    "true, but the AL2023 NVIDIA AMI the GPU node groups run already ships the "
                    "driver and the container toolkit, and a second copy breaks the node; "
                    "only provider existing takes it",
                )
        for i, group in enumerate(cfg.gpu_node_groups):
            for label in (DEVICE_PLUGIN_LABEL, MIG_CONFIG_LABEL):
                if label in group.labels:
                    raise FieldProblem(
                        f"gpu_node_groups[{i}].labels",
                        f"sets {label}, which the platform derives from gpu_sharing so that it "
                        "always names a configuration the GPU Operator defines; remove it and "
                        "set gpu_sharing (mode, replicas) and gpu_operator.mig_strategy instead",
                    )
