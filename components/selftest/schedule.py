"""The self-test on a schedule, and its history: pure builders for the CronJob of each pool and
the quarantine's ServiceAccount. SelfTest (components/selftest/job.py) declares them.

- A CronJob per pool (selftest.schedule.pools) through the job builder: one whole node per run,
  the short check set, never preempting anyone, so it never delays training.
- Only nodes already up (unless selftest.schedule.provision_nodes), where the cluster-autoscaler
  is ours: a run must never start a GPU node from zero. Its pods take PriorityClass
  `selftest-idle-nodes`, below the autoscaler's expendable cutoff (-10 by default, left as it
  is in components/data/cluster_autoscaler.py): "Pods with priority lower than this cutoff don't
  trigger scale-ups" (cluster-autoscaler FAQ, "How does Cluster Autoscaler work with Pod Priority
  and Preemption?", at cluster-autoscaler-1.36.1). And it is queued in ClusterQueue
  `selftest-idle-nodes`, which has no ProvisioningRequest check (a ProvisioningRequest asks the
  autoscaler for nodes whatever the pods' priority): no quota of its own, it borrows what the cohort
  leaves idle and yields it to any queue that reclaims it. On a pool whose flavor places by topology
  Kueue admits it only onto an idle node that exists; elsewhere it is admitted and waits for an idle
  node until its deadline. A pool that gets no push for twice the schedule's longest gap alerts
  (components/observability/alerts.py, SelfTestStale).
- The image pushes each run's figures and check statuses to the stack's Pushgateway
  (components/observability/pushgateway.py) under job `gpu-platform-selftest`, grouped by `node`.
- The pods run as the self-test's ServiceAccount (components/selftest/access.py) where a run
  reads its node's topology labels or may quarantine its node.
"""

from __future__ import annotations

from typing import Any

from components.base import plane_labels
from components.registry_mirror import image_route, mirrored
from components.scheduling.cron_jobs import Schedule, cron_job
from components.scheduling.job_spec import TrainingJobSpec, spec_for_pool
from components.scheduling.kueue import (
    cluster_queue,
    counts_cpu_and_memory,
    node_offer,
    node_size,
    quota,
)
from components.scheduling.queues import workload_priority_class
from components.selftest.access import account
from components.vocabulary import KUEUE_API, pushgateway_url
from contract.env import SELFTEST_CHECKS, SELFTEST_OUT, SELFTEST_PUSHGATEWAY_URL, SELFTEST_RUN_ID
from contract.mounts import SHARED_DATA_MOUNT_PATH
from model.config import PlatformConfig
from model.config.scheduling import Priority, autoscaled
from model.config.selftest_schedule import scheduled_pools

PART_OF = plane_labels("selftest")
SCHEDULE_PRIORITY = "preemptible"
# Below cluster-autoscaler's default --expendable-pods-priority-cutoff of -10 (FAQ, "How does
# Cluster Autoscaler work with Pod Priority and Preemption?"): no node is added for it.
IDLE_PRIORITY = Priority(
    "selftest-idle-nodes",
    -100,
    "Never",
    "Scheduled self-test runs: only on GPU nodes already up and idle; the cluster-autoscaler "
    "adds no node for them (below its expendable cutoff), and they evict nobody.",
)
# The ClusterQueue (and the training namespace's LocalQueue) such runs wait in.
IDLE_QUEUE = IDLE_PRIORITY.name


def idle_nodes_only(cfg: PlatformConfig) -> bool:
    """Scheduled runs must not make the autoscaler start a node: it is ours, and the stack
    did not ask for provisioning (selftest.schedule.provision_nodes)."""
    return autoscaled(cfg) and not cfg.selftest.schedule.provision_nodes


def schedule_env(cfg: PlatformConfig, pool: str) -> dict[str, str]:
    """What a scheduled run adds: the check set, and a report folder per run (the pod's name,
    expanded by Kubernetes from the downward-API variable the job builder sets first)."""
    return {
        SELFTEST_CHECKS: cfg.selftest.schedule.checks,
        SELFTEST_RUN_ID: "$(POD_NAME)",
        SELFTEST_OUT: f"{SHARED_DATA_MOUNT_PATH}/selftest/schedule/{pool}/$(POD_NAME)",
    }


def history_env(cfg: PlatformConfig) -> dict[str, str]:
    """What every run gets where the history is kept: where to push."""
    return {SELFTEST_PUSHGATEWAY_URL: pushgateway_url(cfg.namespaces.monitoring)}


def cron_job_name(pool: str) -> str:
    return f"selftest-{pool}"


def schedule_spec(cfg: PlatformConfig, pool: str, env: dict[str, str]) -> TrainingJobSpec:
    """One scheduled run on one whole node of `pool`; `env` is the self-test's for that pool."""
    settings = cfg.selftest
    return spec_for_pool(
        cfg,
        pool,
        name=cron_job_name(pool),
        image=mirrored(settings.image, image_route(cfg)),
        command=["-m", "selftest"],
        nodes=1,
        standalone=True,
        queue=schedule_queue(cfg),
        priority_class=schedule_priority(cfg),
        env={**env, **schedule_env(cfg, pool)},
        active_deadline_seconds=settings.schedule.timeout_minutes * 60,
        labels={**PART_OF, "gpu-platform/selftest-schedule": pool},
        service_account=account(cfg),
        namespace=cfg.namespaces.selftest,
    )


def schedule_queue(cfg: PlatformConfig) -> str | None:
    if not cfg.scheduling.enabled:
        return None
    return IDLE_QUEUE if idle_nodes_only(cfg) else cfg.selftest.queue


def schedule_priority(cfg: PlatformConfig) -> str | None:
    """The runs' PriorityClass: below the autoscaler's cutoff even without Kueue, where no
    node may be added for them."""
    if idle_nodes_only(cfg):
        return IDLE_PRIORITY.name
    return SCHEDULE_PRIORITY if cfg.scheduling.enabled else None


def idle_priority_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The PriorityClass of runs on idle nodes and, under Kueue, its WorkloadPriorityClass."""
    if not idle_nodes_only(cfg):
        return []
    p = IDLE_PRIORITY
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": p.name, "labels": dict(PART_OF)},
            "value": p.value,
            "preemptionPolicy": p.preemption_policy,
            "globalDefault": False,
            "description": p.description,
        }
    ]
    if cfg.scheduling.enabled:
        objects.append(workload_priority_class(p))
    return objects


def idle_queue_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The ClusterQueue scheduled runs wait in, and its LocalQueue in the self-test's namespace:
    the scheduled pools' flavors at a nominal quota of 0, so a run takes only what the cohort
    lends (idle quota, reclaimed by its owner at will), and no admission check, so Kueue never
    asks the autoscaler for a node on its behalf."""
    if not (idle_nodes_only(cfg) and cfg.scheduling.enabled):
        return []
    counted = counts_cpu_and_memory(cfg)
    pools = [p for p in cfg.gpu_pools if p.name in scheduled_pools(cfg)]
    flavors = {
        p.name: quota(
            node_offer(p, node_size(p, cfg.scheduling.flavor(p.name)) if counted else None),
            0,
            p.gpus_per_node,
        )
        for p in pools
    }
    namespace = cfg.namespaces.selftest
    queue = cluster_queue(IDLE_QUEUE, cfg.scheduling.cohort, flavors, [], [namespace])
    queue["metadata"]["labels"] = dict(PART_OF)
    local = {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": IDLE_QUEUE, "namespace": namespace, "labels": dict(PART_OF)},
        "spec": {"clusterQueue": IDLE_QUEUE},
    }
    return [queue, local]


def cron_jobs(cfg: PlatformConfig, env_for_pool) -> list[dict[str, Any]]:
    """A CronJob per scheduled pool; `env_for_pool(pool)` gives the self-test's env there."""
    schedule = Schedule(cfg.selftest.schedule.cron)
    return [
        cron_job(schedule_spec(cfg, pool, env_for_pool(pool)), schedule)
        for pool in scheduled_pools(cfg)
    ]
