"""A distributed training job on one GPU pool, as a plain Kubernetes object: an Indexed Job whose
pods find each other through the platform's rendezvous Service, and run the command under
torchrun.

- One pod per node: `completionMode: Indexed`, completions = parallelism = nodes. Each pod's
  hostname is `<job>-<index>` and, with `subdomain: rendezvous`, it resolves as
  `<job>-<index>.rendezvous` through the headless Service the platform declares in every
  training namespace (components/scheduling/rendezvous.py), so a Job MultiKueue copies alone to a
  worker still finds its peers; torchrun's rendezvous master is index 0 on port 29500 and each pod's
  node rank is its completion index.
- Admitted through Kueue: the LocalQueue label, the WorkloadPriorityClass label, and the Job
  created suspended, so that Kueue starts it once the whole job fits (Kueue's
  pkg/controller/constants: QueueLabel `kueue.x-k8s.io/queue-name`, WorkloadPriorityClassLabel
  `kueue.x-k8s.io/priority-class`; unchanged through v0.19.2).
- Requests what the pool's nodes offer (components/gpu_operator.pool_report): GPUs, the
  fabric's devices (EFA or the RDMA resource), 2 MiB hugepages, memory, and whole CPU cores per
  GPU (the pool's `cpus_per_gpu`), every one with requests = limits: the Guaranteed QoS class,
  which the static CPU manager the GPU nodes run pins to CPUs of their own;
  a memory-backed /dev/shm for NCCL and data loaders; the storage plane's volumes; the pool's
  NCCL ConfigMap as environment; on RDMA pools the `rdma` Multus network.
- Scraped when it serves metrics: a container port named `metrics` and the pod label
  `gpu-platform/metrics: training`, which the platform's one PodMonitor selects in every training
  namespace (components/observability.training_pod_monitor).
- Locked down to Pod Security `restricted`, the level every team namespace enforces by
  default: non-root, read-only root file system (writable /tmp as an emptyDir), no privilege
  escalation, every capability dropped, RuntimeDefault seccomp, no hostPath (the NVMe cache is
  an emptyDir; components/storage/volumes.py).

- On a schedule: `cron_job(spec, ...)` wraps the same Job in a CronJob. The CronJob controller
  names each Job it creates, so no pod can know a peer's name in advance: a scheduled job is one
  node, and torchrun's rendezvous stays on it (`--standalone`), with no subdomain.

Everything here is pure: `render(spec)` returns the Job as a dict, validated in tests
against the Kubernetes schema. `python -m jobs` submits through it, a recipe's job and a team's own
(docs/training.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from components.data.gpu_operator import advertised_resources
from components.data.nccl import configmap_name
from components.scheduling.multikueue import burst_managed_by
from components.scheduling.rendezvous import LABEL as RENDEZVOUS_LABEL
from components.scheduling.rendezvous import PORT as RENDEZVOUS_PORT
from components.scheduling.rendezvous import SERVICE as RENDEZVOUS_SERVICE
from components.scheduling.rendezvous import master_address as index_zero
from components.scheduling.topology import placement
from components.storage.volumes import (
    NvmeCache,
    pool_cache,
    training_volume_mounts,
    training_volumes,
)
from components.vocabulary import (
    BATCH_API,
    COMPLETION_INDEX_LABEL,
    EFA_RESOURCE,
    GPU_RESOURCE,
    GPU_TOLERATION,
    METRICS_LABEL,
    METRICS_PORT_NAME,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    RDMA_NETWORK,
    rdma_resource,
)
from contract.env import (
    CPU_LIMIT_MILLICORES,
    CPU_REQUEST_MILLICORES,
    MEMORY_LIMIT_MIB,
    MEMORY_REQUEST_MIB,
    NODE_NAME,
    POD_NAME,
    POD_NAMESPACE,
)
from model.config import GpuPool, PlatformConfig
from model.config.fabric import RDMA_FABRICS

MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# Where the image side serves a trainer's Prometheus metrics, on each pod's local rank 0: the
# recipes (recipes/metrics.py) and trainkit, which teams' own scripts use.
TRAINING_METRICS_PORT = 8000
# The image's non-root user (bootstrap/Dockerfile); any non-root uid works for other images.
RUN_AS = 1000


@dataclass(frozen=True)
class TrainingJobSpec:
    """What a team decides about its job; the pool decides the rest."""

    name: str
    namespace: str
    image: str
    # What torchrun runs: `["-m", "package"]` or `["train.py", "--flag"]`.
    command: Sequence[str]
    pool: GpuPool
    # What backs nvme-cache on the pool's nodes (components/storage.nvme_cache).
    cache: NvmeCache
    nodes: int = 1
    gpus_per_node: int | None = None
    # The LocalQueue; None submits straight to the scheduler, not through Kueue.
    queue: str | None = "default"
    priority_class: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    # The pool's RDMA resource name (components/vocabulary.rdma_resource) on RDMA pools.
    rdma_resource: str | None = None
    memory_gib_per_gpu: int = 16
    backoff_limit: int = 0
    active_deadline_seconds: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    extra_volumes: Sequence[dict[str, Any]] = ()
    extra_mounts: Sequence[dict[str, Any]] = ()
    # Where the trainer serves Prometheus metrics; None: not scraped.
    metrics_port: int | None = None
    # terminationGracePeriodSeconds: time between SIGTERM and SIGKILL for a checkpoint on
    # eviction or preemption; None keeps Kubernetes' 30 s.
    termination_grace_period_seconds: int | None = None
    # One node, rendezvous on it: no peers to find, so no subdomain (cron_job's Jobs).
    standalone: bool = False
    # The pods' ServiceAccount; None: the namespace's `default`.
    service_account: str | None = None
    # Kueue's topology-aware placement of the pods (components/topology.placement).
    placement: dict[str, str] = field(default_factory=dict)
    # spec.managedBy: `kueue.x-k8s.io/multikueue` for a job whose queue bursts, so that only
    # MultiKueue runs it (components/multikueue.MANAGED_BY).
    managed_by: str | None = None

    @property
    def gpus(self) -> int:
        return self.gpus_per_node or self.pool.gpus_per_node


def master_address(spec: TrainingJobSpec) -> str:
    """Index 0's stable name through the namespace's rendezvous Service."""
    return index_zero(spec.name)


def torchrun_args(spec: TrainingJobSpec) -> list[str]:
    """torchrun's static rendezvous on index 0; the node rank is the pod's completion index,
    which Kubernetes substitutes from the container's environment ($(VAR) expansion). A
    standalone job rendezvouses on its own node (torchrun docs, `--standalone`)."""
    if spec.standalone:
        return ["torchrun", "--standalone", "--nnodes=1", f"--nproc-per-node={spec.gpus}",
                *spec.command]  # fmt: skip
    return [
        "torchrun",
        f"--nnodes={spec.nodes}",
        f"--nproc-per-node={spec.gpus}",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        f"--master-addr={master_address(spec)}",
        f"--master-port={RENDEZVOUS_PORT}",
        *spec.command,
    ]


def fabric_devices(spec: TrainingJobSpec) -> dict[str, int]:
    """EFA devices in the share of the node's GPUs the pod takes (all of them on a whole
    node), or one RDMA device: the shared device plugin hands every selected HCA to a pod that
    asks for one."""
    pool = spec.pool
    if pool.efa_interfaces:
        return {EFA_RESOURCE: max(1, pool.efa_interfaces * spec.gpus // pool.gpus_per_node)}
    if pool.fabric in RDMA_FABRICS and spec.rdma_resource:
        return {spec.rdma_resource: 1}
    return {}


def cpu_request(spec: TrainingJobSpec) -> str | None:
    """The pool's whole cores per GPU times the GPUs the pod takes: an integer, so that the
    static CPU manager gives a Guaranteed pod CPUs of its own ("Control CPU Management Policies
    on the Node": exclusive CPUs go only to Guaranteed pods' containers with integer CPU
    requests). A pod on shared GPUs (time-slicing, MPS, MIG) takes its slice's share of them
    in millicores: Guaranteed still, on the shared CPUs. None where the pool does not say."""
    per_gpu = spec.pool.cpus_per_gpu
    if per_gpu is None:
        return None
    slices = advertised_resources(spec.pool).get(GPU_RESOURCE, spec.pool.gpus_per_node)
    per_slice = Fraction(per_gpu * spec.pool.gpus_per_node, slices)
    if per_slice.denominator == 1:
        return str(per_slice.numerator * spec.gpus)
    return f"{math.floor(1000 * per_slice * spec.gpus)}m"


def resources(spec: TrainingJobSpec) -> dict[str, dict[str, Any]]:
    """Requests equal to limits: the Guaranteed QoS class ("Configure Quality of Service for
    Pods": every container's CPU and memory requests equal their limits), which extended
    resources and hugepages require anyway."""
    cpu = cpu_request(spec)
    wanted: dict[str, Any] = {
        **({"cpu": cpu} if cpu else {}),
        "memory": f"{spec.memory_gib_per_gpu * spec.gpus}Gi",
        GPU_RESOURCE: spec.gpus,
        **fabric_devices(spec),
    }
    if spec.pool.hugepages_2mi and fabric_devices(spec):
        # The node's reserved pages in the pod's share of its GPUs, so that pods sharing a
        # node each fit: 2 MiB a page.
        pages = spec.pool.hugepages_2mi * spec.gpus // spec.pool.gpus_per_node
        wanted["hugepages-2Mi"] = f"{2 * pages}Mi"
    return {"requests": dict(wanted), "limits": dict(wanted)}


def shm_volume(spec: TrainingJobSpec) -> dict[str, Any]:
    """/dev/shm in memory, half the pod's memory: NCCL's shared-memory transport and data
    loader workers use it, and the container runtime's 64 MiB default is far too small."""
    return {
        "name": "dshm",
        "emptyDir": {
            "medium": "Memory",
            "sizeLimit": f"{spec.memory_gib_per_gpu * spec.gpus // 2}Gi",
        },
    }


def security_context() -> dict[str, Any]:
    """Pod Security `restricted` (Kubernetes "Pod Security Standards"), on every pool. No
    IPC_LOCK on fabric pools: a capability added to a non-root container lands in its bounding
    set but not in its effective set (Kubernetes has no ambient capabilities), so it never let
    the trainer pin memory; it only made `baseline` refuse the pod. Verbs memory registration
    needs the node's memlock limit instead (issue 25 item 10)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


DOWNWARD_API_ENV = {
    NODE_NAME: "spec.nodeName",
    POD_NAME: "metadata.name",
    POD_NAMESPACE: "metadata.namespace",
}
# The container's own requests and limits (downward API `resourceFieldRef`, in the divisor's
# unit): what the self-test judges the QoS class by (bootstrap/selftest/inventory.py), and what
# a trainer sizes its data loader workers and threads by.
RESOURCE_ENV = {
    CPU_REQUEST_MILLICORES: ("requests.cpu", "1m"),
    CPU_LIMIT_MILLICORES: ("limits.cpu", "1m"),
    MEMORY_REQUEST_MIB: ("requests.memory", "1Mi"),
    MEMORY_LIMIT_MIB: ("limits.memory", "1Mi"),
}
# Every variable `container` sets itself: a job's own `env` must not name them again.
RESERVED_ENV = ("JOB_COMPLETION_INDEX", *DOWNWARD_API_ENV, *RESOURCE_ENV, "HOME")


def container(spec: TrainingJobSpec) -> dict[str, Any]:
    env = [
        {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": f"metadata.labels['{COMPLETION_INDEX_LABEL}']"}
            },
        },
        # Who and where the pod is, for metrics and logs that name it (downward API).
        *(
            {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
            for name, path in DOWNWARD_API_ENV.items()
        ),
        *(
            {
                "name": name,
                "valueFrom": {"resourceFieldRef": {"resource": field, "divisor": divisor}},
            }
            for name, (field, divisor) in RESOURCE_ENV.items()
        ),
        # A read-only root: caches (torch, triton, matplotlib) go under the writable /tmp.
        {"name": "HOME", "value": "/tmp"},
        *({"name": k, "value": v} for k, v in sorted(spec.env.items())),
    ]
    return {
        "name": "trainer",
        "image": spec.image,
        "command": torchrun_args(spec),
        "env": env,
        "envFrom": [{"configMapRef": {"name": configmap_name(spec.pool)}}],
        **({"ports": ports(spec)} if ports(spec) else {}),
        "resources": resources(spec),
        "securityContext": security_context(),
        "volumeMounts": [
            *training_volume_mounts(),
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "tmp", "mountPath": "/tmp"},
            *spec.extra_mounts,
        ],
    }


def ports(spec: TrainingJobSpec) -> list[dict[str, Any]]:
    found = [] if spec.standalone else [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT}]
    if spec.metrics_port is not None:
        found.append({"name": METRICS_PORT_NAME, "containerPort": spec.metrics_port})
    return found


def pod_labels(spec: TrainingJobSpec) -> dict[str, str]:
    labels = dict(spec.labels)
    if not spec.standalone:
        labels.update(RENDEZVOUS_LABEL)
    if spec.metrics_port is not None:
        labels.update(METRICS_LABEL)
    return labels


def pod_annotations(spec: TrainingJobSpec) -> dict[str, str]:
    found = dict(spec.placement)
    if spec.pool.fabric in RDMA_FABRICS:
        found[MULTUS_ANNOTATION] = RDMA_NETWORK
    return found


def pod_template(spec: TrainingJobSpec) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(spec.pool.node_selector),
        "tolerations": [dict(GPU_TOLERATION)],
        "securityContext": {"fsGroup": RUN_AS, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container(spec)],
        "volumes": [
            *training_volumes(spec.cache),
            shm_volume(spec),
            {"name": "tmp", "emptyDir": {}},
            *spec.extra_volumes,
        ],
    }
    if not spec.standalone:
        pod["subdomain"] = RENDEZVOUS_SERVICE
    if spec.service_account:
        pod["serviceAccountName"] = spec.service_account
    if spec.priority_class:
        pod["priorityClassName"] = spec.priority_class
    if spec.termination_grace_period_seconds is not None:
        pod["terminationGracePeriodSeconds"] = spec.termination_grace_period_seconds
    meta: dict[str, Any] = {"labels": pod_labels(spec)}
    if pod_annotations(spec):
        meta["annotations"] = pod_annotations(spec)
    return {"metadata": meta, "spec": pod}


def job_labels(spec: TrainingJobSpec) -> dict[str, str]:
    labels = dict(spec.labels)
    if spec.queue:
        labels[QUEUE_LABEL] = spec.queue
        if spec.priority_class:
            labels[PRIORITY_LABEL] = spec.priority_class
    return labels


def job(spec: TrainingJobSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": spec.nodes,
        "parallelism": spec.nodes,
        "backoffLimit": spec.backoff_limit,
        # Kueue unsuspends it once admitted; without a queue it starts at once.
        "suspend": spec.queue is not None,
        # A preempted or evicted pod is no failure of the job: it is recreated, without
        # spending the backoff limit (Kubernetes docs, "Pod failure policy").
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                }
            ]
        },
        "template": pod_template(spec),
    }
    if spec.active_deadline_seconds:
        body["activeDeadlineSeconds"] = spec.active_deadline_seconds
    if spec.managed_by:
        body["managedBy"] = spec.managed_by
    meta: dict[str, Any] = {
        "name": spec.name,
        "namespace": spec.namespace,
        "labels": job_labels(spec),
    }
    if spec.annotations:
        meta["annotations"] = dict(spec.annotations)
    return {"apiVersion": BATCH_API, "kind": "Job", "metadata": meta, "spec": body}


def render(spec: TrainingJobSpec) -> list[dict[str, Any]]:
    """What a submitter applies: the Job alone. Everything its pods name exists in its namespace
    on every cluster it may run on, the rendezvous Service among them (tests/controllers/
    references.py)."""
    return [job(spec)]


def spec_for_pool(cfg: PlatformConfig, pool_name: str, **choices: Any) -> TrainingJobSpec:
    """A job on one of the stack's pools, in the training namespace unless `namespace` is
    given; `choices` are TrainingJobSpec's fields (name, image, command, nodes, ...)."""
    pool = next(p for p in cfg.gpu_pools if p.name == pool_name)
    rdma = rdma_resource(cfg.fabric) if cfg.fabric is not None else None
    choices.setdefault("namespace", cfg.namespaces.training)
    choices.setdefault("placement", placement(cfg, pool))
    choices.setdefault("managed_by", burst_managed_by(cfg, choices["namespace"]))
    return TrainingJobSpec(
        pool=pool, cache=pool_cache(cfg, pool_name), rdma_resource=rdma, **choices
    )
