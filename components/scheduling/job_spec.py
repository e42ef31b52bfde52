"""What a training job is before it is rendered: what a team decides about it (TrainingJobSpec),
the self-test's preflight its pods may run first, and what a stack makes of a job on one of its
pools (spec_for_pool: the namespace, placement, caches and volumes it gives every job there).
components/scheduling/training_job.py
renders it into the JobSet and its pods; components/scheduling/job_claims.py into the devices it
claims through DRA."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from components.scheduling.multikueue import burst_managed_by
from components.scheduling.topology import placement
from components.storage.volumes import NvmeCache, pool_cache, shared_data_claim_name
from components.vocabulary import pushgateway_url, rdma_resource
from model.config import GpuPool, PlatformConfig
from model.config.scheduling import JobSettings
from model.dra import resource_api_version


@dataclass(frozen=True)
class Preflight:
    """The self-test's preflight check set (`python -m selftest --checks preflight`), run as
    every pod's init container on the job's own nodes and GPUs: the image that holds the
    self-test and what it expects of the pool (components/selftest/preflight.py)."""

    image: str
    env: dict[str, str]


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
    # The claim behind the shared-data volume (components/storage/volumes.shared_data_claim_name).
    shared_data_claim: str
    nodes: int = 1
    gpus_per_node: int | None = None
    # The LocalQueue; None submits straight to the scheduler, not through Kueue.
    queue: str | None = "default"
    priority_class: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    # The pool's RDMA resource name (components/vocabulary.rdma_resource) on RDMA pools.
    rdma_resource: str | None = None
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
    # Restarts and hang detection (scheduling.jobs).
    jobs: JobSettings = field(default_factory=JobSettings)
    # Where trainkit pushes the job's goodput; None: not pushed.
    pushgateway_url: str | None = None
    # The preflight each pod of a multi-node job runs before it trains; None: none.
    preflight: Preflight | None = None
    # The `resource.k8s.io` version the cluster serves (model/dra.resource_api_version of the
    # stack's minor): what a DRA pool's claim template is written in.
    resource_api: str = resource_api_version("1.34")

    @property
    def gpus(self) -> int:
        return self.gpus_per_node or self.pool.gpus_per_node


def spec_for_pool(cfg: PlatformConfig, pool_name: str, **choices: Any) -> TrainingJobSpec:
    """A job on one of the stack's pools, in the training namespace unless `namespace` is
    given; `choices` are TrainingJobSpec's fields (name, image, command, nodes, ...)."""
    pool = next(p for p in cfg.gpu_pools if p.name == pool_name)
    rdma = rdma_resource(cfg.fabric) if cfg.fabric is not None else None
    choices.setdefault("namespace", cfg.namespaces.training)
    choices.setdefault("placement", placement(cfg, pool, nodes=choices.get("nodes", 1)))
    choices.setdefault("managed_by", burst_managed_by(cfg, choices["namespace"]))
    choices.setdefault("jobs", cfg.scheduling.jobs)
    # Every stack runs one (components/observability/pushgateway.py), which keeps the goodput.
    choices.setdefault("pushgateway_url", pushgateway_url(cfg.namespaces.monitoring))
    if pool.gpu_allocation == "dra":  # served from the minors DRA pools are allowed on
        choices.setdefault("resource_api", resource_api_version(cfg.cluster.kubernetes_version))
    return TrainingJobSpec(
        pool=pool,
        cache=pool_cache(cfg, pool_name),
        shared_data_claim=shared_data_claim_name(cfg),
        rdma_resource=rdma,
        **choices,
    )
