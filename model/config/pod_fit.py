"""What one training pod asks of a node, held against what one node of its pool offers, so that
a stack whose biggest pod cannot fit any node is refused before anything is declared: the
scheduler would leave that pod Pending for ever, and a blocking self-test would wait for it until
`pulumi up` times out.

The biggest pod takes every GPU of a node (components/scheduling/training_job.py renders it):
`cpus_per_gpu` whole CPUs and MEMORY_GIB_PER_GPU GiB per GPU, the node's GPUs, and on EFA groups
the node's 2 MiB hugepages. A node offers, on AWS, the instance's vCPUs and memory (the catalog)
less the kubelet's reservations, the eviction threshold, the hugepages carved out of memory and
the DaemonSets' CPUs; on an existing cluster, the CPUs and memory its Kueue flavor states
(scheduling.flavors[].cpus_per_node, memory_gib_per_node), where it states them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from model.config.base import FieldProblem, FieldProblems, cpu_quantity
from model.config.nodes import DAEMONSET_CPUS

if TYPE_CHECKING:
    from model.config import PlatformConfig

# Memory a training pod takes per GPU it takes (and half of it as /dev/shm).
MEMORY_GIB_PER_GPU = 16
GIB = 2**30
# The kubelet's default hard eviction threshold on Linux (Kubernetes docs, "Node-pressure
# Eviction": memory.available<100Mi): allocatable memory leaves it out too.
EVICTION_MEMORY = cpu_quantity("100Mi")


def check_pods_fit(cfg: PlatformConfig) -> None:
    problems = _aws_problems(cfg) if cfg.provider == "aws" else _existing_problems(cfg)
    if problems:
        raise FieldProblems(problems)


def _aws_problems(cfg: PlatformConfig) -> list[FieldProblem]:
    found = []
    for i, group in enumerate(cfg.gpu_node_groups):
        kubelet = group.kubelet
        reserved = sum(
            cpu_quantity(r["memory"])
            for r in (kubelet.system_reserved, kubelet.kube_reserved)
            if "memory" in r
        )
        for row in group.instances:
            hugepages = 2 * 2**20 * (group.hugepages_2mi if group.efa else 0)
            offer = Fraction(row.memory_gib * GIB) - reserved - EVICTION_MEMORY - hugepages
            asked = MEMORY_GIB_PER_GPU * row.gpus
            if asked * GIB > offer:
                found.append(
                    FieldProblem(
                        f"gpu_node_groups[{i}].instance_types",
                        f"{row.name}: a training pod on its {row.gpus} GPU(s) takes {asked} GiB "
                        f"of memory ({MEMORY_GIB_PER_GPU} GiB a GPU), and the node offers pods "
                        f"{float(offer / GIB):.1f} GiB ({row.memory_gib} GiB less the kubelet's "
                        "reservations, eviction threshold and hugepages): give an instance type "
                        f"with at least {MEMORY_GIB_PER_GPU} GiB per GPU to spare",
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
        if memory is not None and MEMORY_GIB_PER_GPU * gpus > memory:
            found.append(
                FieldProblem(
                    f"existing.gpu_pools[{i}].gpus_per_node",
                    f"{gpus}: a training pod on all of them takes {MEMORY_GIB_PER_GPU * gpus} "
                    f"GiB of memory ({MEMORY_GIB_PER_GPU} GiB a GPU), more than the node's "
                    f"{memory} GiB ({where}: memory_gib_per_node)",
                )
            )
    return found
