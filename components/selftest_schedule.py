"""The self-test on a schedule, and its history: pure builders for the CronJob of each pool, the
Pushgateway that holds what each run pushes, and the quarantine's ServiceAccount. SelfTest
(components/selftest.py) declares them.

- A CronJob per pool (selftest.schedule.pools) through the job builder: one whole node per run,
  the short check set, the `preemptible` priority (preemption policy Never: it takes only idle
  GPUs and is the first workload Kueue and the scheduler evict), so it never delays training.
- The image pushes each run's figures and check statuses to the Pushgateway (prometheus-community
  chart, pinned in infra/versions.py) under job `gpu-platform-selftest`, grouped by `node`.
  Prometheus scrapes it through the chart's ServiceMonitor with `honorLabels: true`, so the pushed
  `job` and `instance` win over the scrape's own (Pushgateway README, "Configure the Pushgateway
  as a target to scrape"). The Pushgateway keeps them on a volume across restarts.
- The pods run as the self-test's ServiceAccount (components/selftest_access.py) where a run
  reads its node's topology labels or may quarantine its node.
"""

from __future__ import annotations

from typing import Any

from components.base import plane_labels
from components.cron_jobs import Schedule, cron_job
from components.jobs import TrainingJobSpec, spec_for_pool
from components.observability import storage_class
from components.registry_mirror import mirrored
from components.selftest_access import account
from components.storage import SHARED_DATA_MOUNT_PATH
from infra.config import PlatformConfig
from infra.config.selftest_schedule import scheduled_pools
from infra.versions import PUSHGATEWAY_IMAGE_TAG

PART_OF = plane_labels("selftest")
PUSHGATEWAY = "prometheus-pushgateway"
PUSHGATEWAY_PORT = 9091
# The Pushgateway's own data: 2 GiB, the chart's default size, holds far more than one group
# of a few hundred series per node.
PUSHGATEWAY_VOLUME_GIB = 2
PUSHGATEWAY_DATA = "/data/pushgateway.data"
SCHEDULE_PRIORITY = "preemptible"


def pushgateway_url(namespace: str) -> str:
    """The Pushgateway's in-cluster address: the chart names its Service after the release when
    the release name holds the chart's (`prometheus-pushgateway.fullname`), port 9091."""
    return f"http://{PUSHGATEWAY}.{namespace}.svc:{PUSHGATEWAY_PORT}"


def pushgateway_values(cfg: PlatformConfig, node_selector: dict[str, str]) -> dict[str, Any]:
    """The chart's values: scraped with the pushed labels kept, persistent, locked down."""
    ns = cfg.namespaces.monitoring
    volume_class = storage_class(cfg.observability, cfg.provider == "aws")
    return {
        "image": {"tag": PUSHGATEWAY_IMAGE_TAG},
        "serviceMonitor": {
            "enabled": True,
            # The chart's default is a fixed `monitoring`; the stack's namespace may differ.
            "namespace": ns,
            "honorLabels": True,
        },
        # The chart mounts the volume at /data; only --persistence.file makes the server write
        # there (Pushgateway README, "Persistence"), every 5 minutes by default.
        "persistentVolume": {
            "enabled": True,
            "size": f"{PUSHGATEWAY_VOLUME_GIB}Gi",
            **({"storageClass": volume_class} if volume_class else {}),
        },
        "extraArgs": [f"--persistence.file={PUSHGATEWAY_DATA}"],
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"memory": "256Mi"},
        },
        **({"nodeSelector": node_selector} if node_selector else {}),
    }


def schedule_env(cfg: PlatformConfig, pool: str) -> dict[str, str]:
    """What a scheduled run adds: the check set, and a report folder per run (the pod's name,
    expanded by Kubernetes from the downward-API variable the job builder sets first)."""
    return {
        "SELFTEST_CHECKS": cfg.selftest.schedule.checks,
        "SELFTEST_RUN_ID": "$(POD_NAME)",
        "SELFTEST_OUT": f"{SHARED_DATA_MOUNT_PATH}/selftest/schedule/{pool}/$(POD_NAME)",
    }


def history_env(cfg: PlatformConfig) -> dict[str, str]:
    """What every run gets where the history is kept: where to push."""
    return {"SELFTEST_PUSHGATEWAY_URL": pushgateway_url(cfg.namespaces.monitoring)}


def cron_job_name(pool: str) -> str:
    return f"selftest-{pool}"


def schedule_spec(cfg: PlatformConfig, pool: str, env: dict[str, str]) -> TrainingJobSpec:
    """One scheduled run on one whole node of `pool`; `env` is the self-test's for that pool."""
    settings = cfg.selftest
    return spec_for_pool(
        cfg,
        pool,
        name=cron_job_name(pool),
        image=mirrored(settings.image, cfg.images.registry_mirror),
        command=["-m", "selftest"],
        nodes=1,
        standalone=True,
        queue=settings.queue if cfg.scheduling.enabled else None,
        priority_class=SCHEDULE_PRIORITY if cfg.scheduling.enabled else None,
        env={**env, **schedule_env(cfg, pool)},
        active_deadline_seconds=settings.schedule.timeout_minutes * 60,
        labels={**PART_OF, "gpu-platform/selftest-schedule": pool},
        service_account=account(cfg),
        namespace=cfg.namespaces.selftest,
    )


def cron_jobs(cfg: PlatformConfig, env_for_pool) -> list[dict[str, Any]]:
    """A CronJob per scheduled pool; `env_for_pool(pool)` gives the self-test's env there."""
    schedule = Schedule(cfg.selftest.schedule.cron)
    return [
        cron_job(schedule_spec(cfg, pool, env_for_pool(pool)), schedule)
        for pool in scheduled_pools(cfg)
    ]
