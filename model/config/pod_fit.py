"""What one training pod asks of a node, held against what one node of its pool offers, so that
a stack whose biggest pod cannot fit any node is refused before anything is declared: the
scheduler would leave that pod Pending for ever, and a blocking self-test would wait for it until
`pulumi up` times out.

A training pod takes, per GPU, `cpus_per_gpu` whole CPUs and the node's memory per GPU: what one
node offers pods, shared out among its GPUs in whole GiB (`memory_gib_per_gpu`), so that a pod
on every GPU of a node fits it and a 1-GPU pod on a node of 1,152 GiB and 8 GPUs is not held to
the 16 GiB a small node affords. A node offers, on AWS, the instance's vCPUs and memory (the
catalog) less the kubelet's reservations, the eviction threshold, the hugepages carved out of
memory and the DaemonSets' share; on an existing cluster, the CPUs and memory its Kueue flavor
states (scheduling.flavors[].cpus_per_node, memory_gib_per_node) less the same, with the
platform's default kubelet reservations, where it states them, and MIN_MEMORY_GIB_PER_GPU a GPU
where it does not. A pool whose nodes leave less than MIN_MEMORY_GIB_PER_GPU a GPU is refused.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

from model.config.base import FieldProblem, FieldProblems, cpu_quantity
from model.config.nodes import DAEMONSET_CPUS, DAEMONSET_MEMORY_GIB, KubeletSettings

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.nodes import GpuNodeGroupSettings

# The least memory a training pod is given per GPU: its process, its data loaders and half of it
# as /dev/shm. A node that leaves less is refused; one that leaves more gives it all.
MIN_MEMORY_GIB_PER_GPU = 16
GIB = 2**30
# The kubelet's default hard eviction threshold on Linux (Kubernetes docs, "Node-pressure
# Eviction": memory.available<100Mi): allocatable memory leaves it out too.
EVICTION_MEMORY = cpu_quantity("100Mi")


def pod_memory(node_memory_gib: int, kubelet: KubeletSettings, hugepages_2mi: int = 0) -> Fraction:
    """Bytes of memory one node offers training pods: its memory less the kubelet's
    reservations and eviction threshold (allocatable), the hugepages carved out of it, and the
    DaemonSets' share."""
    reserved = sum(
        cpu_quantity(r["memory"])
        for r in (kubelet.system_reserved, kubelet.kube_reserved)
        if "memory" in r
    )
    kept = reserved + EVICTION_MEMORY + 2 * 2**20 * hugepages_2mi + DAEMONSET_MEMORY_GIB * GIB
    return Fraction(node_memory_gib * GIB) - kept


def per_gpu_gib(offer: Fraction, gpus: int) -> int:
    """The node's memory for pods, shared out among its GPUs in whole GiB."""
    return math.floor(offer / gpus / GIB)


def group_memory_gib_per_gpu(group: GpuNodeGroupSettings) -> int:
    """Memory a training pod takes per GPU in the group: the least any of its instance types
    affords, since the autoscaler may start any of them."""
    hugepages = group.hugepages_2mi if group.efa else 0
    return min(
        per_gpu_gib(pod_memory(row.memory_gib, group.kubelet, hugepages), row.gpus)
        for row in group.instances
    )


def existing_memory_gib_per_gpu(memory_gib_per_node: int | None, gpus: int) -> int:
    """An existing pool's: from the node memory its flavor states, as a kubelet with the
    platform's default reservations leaves it; MIN_MEMORY_GIB_PER_GPU where it states none."""
    if memory_gib_per_node is None:
        return MIN_MEMORY_GIB_PER_GPU
    return per_gpu_gib(pod_memory(memory_gib_per_node, KubeletSettings()), gpus)


def check_pods_fit(cfg: PlatformConfig) -> None:
    problems = _aws_problems(cfg) if cfg.provider == "aws" else _existing_problems(cfg)
    if problems:
        raise FieldProblems(problems)


def _aws_problems(cfg: PlatformConfig) -> list[FieldProblem]:
    found = []
    for i, group in enumerate(cfg.gpu_node_groups):
        kubelet = group.kubelet
        for row in group.instances:
            offer = pod_memory(row.memory_gib, kubelet, group.hugepages_2mi if group.efa else 0)
            least = MIN_MEMORY_GIB_PER_GPU * row.gpus
            if per_gpu_gib(offer, row.gpus) < MIN_MEMORY_GIB_PER_GPU:
                found.append(
                    FieldProblem(
                        f"gpu_node_groups[{i}].instance_types",
                        f"{row.name}: a training pod on its {row.gpus} GPU(s) takes at least "
                        f"{least} GiB of memory ({MIN_MEMORY_GIB_PER_GPU} GiB a GPU), and the "
                        f"node offers pods {float(offer / GIB):.1f} GiB ({row.memory_gib} GiB "
                        "less the kubelet's reservations, eviction threshold, hugepages and "
                        f"{DAEMONSET_MEMORY_GIB} GiB for DaemonSets): give an instance type with "
                        f"at least {MIN_MEMORY_GIB_PER_GPU} GiB per GPU to spare",
                    )
                )
            cpus = row.vcpus - kubelet.reserved_cpus - DAEMONSET_CPUS
            if group.cpus_per_gpu * row.gpus > cpus:
                found.append(
                    FieldProblem(
                        f"gpu_node_groups[{i}].instance_types",
                        f"{row.name}: a training pod takes {group.cpus_per_gpu * row.gpus} CPUs "
                        f"of the {cpus} the node offers pods",
                    )
                )
    return found


def _existing_problems(cfg: PlatformConfig) -> list[FieldProblem]:
    found = []
    for i, pool in enumerate(cfg.existing.gpu_pools if cfg.existing else ()):
        flavor = cfg.scheduling.flavor(pool.name)
        gpus, where = pool.gpus_per_node, f"scheduling.flavors (pool {pool.name})"
        if pool.cpus_per_gpu is not None and flavor.cpus_per_node is not None:
            most = flavor.cpus_per_node // gpus
            if pool.cpus_per_gpu > most:
                found.append(
                    FieldProblem(
                        f"existing.gpu_pools[{i}].cpus_per_gpu",
                        f"{pool.cpus_per_gpu}: a training pod on all {gpus} GPUs would ask "
                        f"{pool.cpus_per_gpu * gpus} CPUs of a {flavor.cpus_per_node}-CPU node "
                        f"({where}: cpus_per_node); give 1 to {most}",
                    )
                )
        memory = flavor.memory_gib_per_node
        least = MIN_MEMORY_GIB_PER_GPU
        if memory is not None and existing_memory_gib_per_gpu(memory, gpus) < least:
            found.append(
                FieldProblem(
                    f"existing.gpu_pools[{i}].gpus_per_node",
                    f"{gpus}: a training pod on all of them takes at least "
                    f"{MIN_MEMORY_GIB_PER_GPU * gpus} GiB of memory ({MIN_MEMORY_GIB_PER_GPU} GiB "
                    f"a GPU), more than the node's {memory} GiB ({where}: memory_gib_per_node) "
                    "leaves pods after the kubelet's default reservations and "
                    f"{DAEMONSET_MEMORY_GIB} GiB for DaemonSets",
                )
            )
    return found
