"""NCCL and libfabric settings per GPU pool: one ConfigMap `nccl-<pool>` in every namespace jobs
run in (the training namespace and each team's), which training pods load with `envFrom`, so a
job never guesses its fabric, whichever namespace it runs in.

A silent fall-back to TCP sockets is the commonest multi-node failure (FACTS.md): every pool
names its transport explicitly and logs what NCCL picked (NCCL_DEBUG=INFO).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base import PlatformComponent, plane_labels
from components.context import StackContext
from model.catalog import EFA_RDMA_READ
from model.config import GpuPool, PlatformConfig

PART_OF = plane_labels("data")
# Values filled per pool from config or the catalog rather than fixed per fabric.
HCA = "<hca>"
GID_INDEX = "<gid_index>"

# Fabric -> the environment every pod of such a pool gets.
NCCL_ENV: dict[str, dict[str, str]] = {
    "efa": {
        # aws-ofi-nccl (the NCCL plugin on the AL2023 NVIDIA AMI) talks to EFA through libfabric;
        # AWS EFA user guide, "Get started with EFA and NCCL": FI_PROVIDER=efa.
        "FI_PROVIDER": "efa",
        # NCCL docs, "Environment variables": a leading ^ excludes interfaces; lo and docker*
        # never carry inter-node traffic.
        "NCCL_SOCKET_IFNAME": "^lo,docker",
    },
    "infiniband": {
        # NCCL docs, NCCL_IB_HCA: a prefix selects every device it begins, "mlx5" all ConnectX.
        "NCCL_IB_HCA": HCA,
        # Multus names a pod's first additional interface net1 (multus-cni docs, "How to use"):
        # the RDMA network, so bootstrap traffic stays on the fabric.
        "NCCL_SOCKET_IFNAME": "net1",
    },
    "roce": {
        "NCCL_IB_HCA": HCA,
        # NCCL docs, NCCL_IB_GID_INDEX: RoCE needs the GID of the RoCE v2 entry (from config).
        "NCCL_IB_GID_INDEX": GID_INDEX,
        "NCCL_SOCKET_IFNAME": "net1",
    },
    "tcp": {
        # NCCL docs, NCCL_IB_DISABLE=1: no InfiniBand verbs, sockets only; said, not fallen into.
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "^lo,docker",
    },
}
# Every fabric. NCCL docs: NCCL_P2P_DISABLE=0 keeps NVLink / PCIe peer-to-peer on inside a
# node; NCCL_DEBUG=INFO logs the transport chosen, which is how a TCP fall-back is seen.
NCCL_COMMON: dict[str, str] = {"NCCL_P2P_DISABLE": "0", "NCCL_DEBUG": "INFO"}
# aws-ofi-nccl: GPUDirect RDMA over EFA, only where the instance's EFA supports RDMA read.
EFA_DEVICE_RDMA = {"FI_EFA_USE_DEVICE_RDMA": "1"}
# NCCL docs, NCCL_IB_HCA: with no device named, every mlx5 (ConnectX) device.
DEFAULT_HCA = "mlx5"

# --------------------------------------------------------------------------- pure builders


def configmap_name(pool: GpuPool) -> str:
    return f"nccl-{pool.name}"


def nccl_env(pool: GpuPool, cfg: PlatformConfig) -> dict[str, str]:
    """The environment of `pool`'s training pods, from the one table."""
    env = {**NCCL_ENV[pool.fabric], **NCCL_COMMON}
    if (
        pool.fabric == "efa"
        and pool.instance_types
        and all(t in EFA_RDMA_READ for t in pool.instance_types)
    ):
        env.update(EFA_DEVICE_RDMA)
    fabric = cfg.fabric
    if HCA in env.values():
        hcas = fabric.hca_names if fabric is not None else []
        env["NCCL_IB_HCA"] = ",".join(hcas) or DEFAULT_HCA
    if GID_INDEX in env.values():
        env["NCCL_IB_GID_INDEX"] = str(fabric.gid_index)
    return dict(sorted(env.items()))


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class NcclSettingsArgs:
    context: StackContext
    cfg: PlatformConfig
    # Every namespace jobs run in, the training namespace first.
    namespaces: Sequence[str]


class NcclSettings(PlatformComponent):
    """One `nccl-<pool>` ConfigMap per GPU pool in each namespace jobs run in; the stack output
    names the training namespace's."""

    PLANE = "data"

    def __init__(
        self, name: str, args: NcclSettingsArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        names: dict[str, Any] = {}
        first = args.namespaces[0]
        for pool in args.cfg.gpu_pools:
            for ns in args.namespaces:
                # The training namespace's keep the names they always had: no replacement.
                logical = f"{args.context.env}-nccl-{pool.name}" + (
                    "" if ns == first else f"-in-{ns}"
                )
                cm = k8s.core.v1.ConfigMap(
                    logical,
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=configmap_name(pool), namespace=ns, labels=PART_OF
                    ),
                    data=nccl_env(pool, args.cfg),
                    opts=self.child(),
                )
                if ns == first:
                    names[pool.name] = pulumi.Output.concat(
                        cm.metadata.namespace, "/", cm.metadata.name
                    )
        self.outputs = {"nccl_configmaps": names}
        self.register_outputs(self.outputs)
