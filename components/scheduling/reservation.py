"""What the cluster runs for a reserved pool with a window (gpu_node_groups[].reservation_window):
a CronJob per transition of the window (contract/reservation.py: warming, open, draining,
closed), each running the reservation controller (bootstrap/selftest/reservation.py) in the
self-test's image, which the platform already pins and whose Kubernetes client
(bootstrap/selftest/kube.py) needs nothing more; the controller reconciles to the phase of the
time it runs, so each CronJob only wakes it at the right minute.

Its account may get and patch only the ClusterQueues that hold a windowed flavor (by name), and
list, get and patch Workloads only in the namespaces that submit to them (Workload names are the
jobs', unknown here). It runs in the platform's namespace (namespaces.selftest), never a team's:
any pod of a namespace may run as its accounts."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from components.base import plane_labels
from components.registry_mirror import image_route, mirrored
from components.scheduling.controller import (
    cluster_role,
    controller_pod,
    granted,
    service_account,
)
from components.scheduling.queues import kueue_objects, submitters
from components.vocabulary import BATCH_API
from contract.reservation import (
    ENV_DRAIN,
    ENV_END,
    ENV_FLAVOR,
    ENV_NAMESPACES,
    ENV_ON_DRAIN,
    ENV_QUOTAS,
    ENV_START,
    ENV_WARMUP,
    Window,
)
from model.config import PlatformConfig
from model.config.nodes import GpuNodeGroupSettings
from model.config.pools import windowed

ACCOUNT = "reservation-controller"
PART_OF = plane_labels("scheduling")
# A run that starts more than this late (controller down) is skipped; the next transition's run
# reconciles anyway. Under the shortest gap between two transitions the stack can have (a minute).
STARTING_DEADLINE_SECONDS = 50
# The draining run waits up to RELEASE_WAIT_S (bootstrap/selftest/reservation.py) for Kueue to
# release what it evicted; its Job may run that long and a little more.
RUN_DEADLINE_SECONDS = 1200
RECONCILE_MINUTES = 10


def cron_at(at: datetime) -> str:
    """The cron schedule that fires at `at` (UTC, to the minute). Cron has no year: it fires
    again a year later, when the controller finds the window over and keeps the flavor closed."""
    return f"{at.minute} {at.hour} {at.day} {at.month} *"


def during(window: Window) -> str:
    """Every RECONCILE_MINUTES of the days the window covers: a schedule cron can say, which may
    also fire on the same days of other months the window touches (harmless: outside the window
    the controller keeps the flavor closed). It puts the flavor back within that time where a
    `pulumi up` redeclared it closed."""
    days, months, day = set(), set(), window.start.date()
    while day <= window.end.date():
        days.add(day.day)
        months.add(day.month)
        day += timedelta(days=1)
    return f"*/{RECONCILE_MINUTES} * {_listed(days)} {_listed(months)} *"


def _listed(values: set[int]) -> str:
    return ",".join(str(v) for v in sorted(values))


def flavor_quotas(cfg: PlatformConfig, flavor: str) -> dict[str, dict[str, str]]:
    """ClusterQueue -> the flavor's nominal quota there while its window is open (resource ->
    quantity)."""
    found = {}
    for obj in kueue_objects(cfg, autoscaled=False, open_windows=True):
        if obj["kind"] != "ClusterQueue":
            continue
        for group in obj["spec"].get("resourceGroups", []):
            for entry in group["flavors"]:
                if entry["name"] == flavor:
                    amounts = {r["name"]: r["nominalQuota"] for r in entry["resources"]}
                    found[obj["metadata"]["name"]] = amounts
    return found


def transition_jobs(cfg: PlatformConfig, group: GpuNodeGroupSettings) -> list[dict[str, Any]]:
    settings = group.reservation_window
    assert settings is not None
    window = settings.window()
    quotas = flavor_quotas(cfg, group.name)
    env = {
        ENV_FLAVOR: group.name,
        ENV_START: window.start.isoformat(),
        ENV_END: window.end.isoformat(),
        ENV_WARMUP: str(window.warmup_minutes),
        ENV_DRAIN: str(window.drain_minutes),
        ENV_ON_DRAIN: window.on_drain,
        ENV_QUOTAS: json.dumps(quotas, sort_keys=True),
        ENV_NAMESPACES: ",".join(namespaces(cfg, set(quotas))),
    }
    image = mirrored(cfg.selftest.image, image_route(cfg))
    pod = controller_pod(
        "reconcile", image, "selftest.reservation", env, ACCOUNT, restartPolicy="OnFailure"
    )
    labels = {"app.kubernetes.io/name": ACCOUNT, "gpu-platform/pool": group.name, **PART_OF}
    return [
        {
            "apiVersion": BATCH_API,
            "kind": "CronJob",
            "metadata": {
                "name": f"reservation-{group.name}-{phase}",
                "namespace": cfg.namespaces.selftest,
                "labels": {**labels, "gpu-platform/reservation-phase": phase},
            },
            "spec": {
                "schedule": schedule,
                # Without it the controller reads the schedule in its own local time zone.
                "timeZone": "Etc/UTC",
                "concurrencyPolicy": "Forbid",
                "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "activeDeadlineSeconds": RUN_DEADLINE_SECONDS,
                        "backoffLimit": 3,
                        "template": {"metadata": {"labels": labels}, "spec": pod},
                    },
                },
            },
        }
        for phase, schedule in schedules(window).items()
    ]


def schedules(window: Window) -> dict[str, str]:
    """Each CronJob of the window (its phase, or `reconcile`) -> its cron schedule."""
    return {
        **{phase: cron_at(at) for phase, at in window.transitions().items()},
        "reconcile": during(window),
    }


def namespaces(cfg: PlatformConfig, queues: set[str]) -> list[str]:
    """The namespaces whose LocalQueues point at `queues`: where their Workloads are."""
    return sorted({t.name for t in submitters(cfg) if t.cluster_queue in queues})


def reservation_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The controller's account, its roles and the CronJobs of every windowed pool."""
    groups = windowed(cfg)
    if not groups:
        return []
    namespace = cfg.namespaces.selftest
    queues = sorted({q for g in groups for q in flavor_quotas(cfg, g.name)})
    queue_rules = [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"],
                    "resourceNames": queues, "verbs": ["get", "patch"]}]  # fmt: skip
    workload_rules = [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
                       "verbs": ["get", "list", "patch"]}]  # fmt: skip
    workloads = f"{ACCOUNT}-workloads"
    objects = [
        service_account(ACCOUNT, namespace, PART_OF),
        cluster_role(ACCOUNT, queue_rules, PART_OF),
        *granted(ACCOUNT, ACCOUNT, namespace, PART_OF),
        cluster_role(workloads, workload_rules, PART_OF),
        # The Workloads only where the windowed queues' teams submit: a RoleBinding each.
        *granted(workloads, ACCOUNT, namespace, PART_OF, namespaces(cfg, set(queues))),
    ]
    for group in groups:
        objects += transition_jobs(cfg, group)
    return objects
