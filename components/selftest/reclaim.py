"""The idle reclaimer (scheduling.idle_reclaim; issue 40 §3): a Deployment in
namespaces.selftest that runs `python -m selftest.reclaim` in the self-test image, which the
platform already pins and mirrors and which holds the in-cluster API client (selftest/kube.py)
and the Prometheus client (selftest/metrics.py) it needs; a small module there rather than a
new image to build, scan and pin. A Deployment that sleeps between sweeps, like the quarantine
watcher (components/selftest/access.py), rather than a CronJob: a CronJob's Job in the platform's
namespace would be one more Job for Kueue to leave alone.

Least privilege: its own ServiceAccount, and one ClusterRole that may `list` and `patch`
Kueue Workloads, bound by a RoleBinding in each team namespace it may reclaim in only: those
whose team's ClusterQueue is reclaimable, or every team namespace where a priority class is
(any team may submit at it). RBAC cannot narrow a patch to one field (`spec.active`): the
namespaces are the narrowing, and the reclaimer's code sends only that patch
(bootstrap/selftest/reclaim.py, DEACTIVATE).
"""

from __future__ import annotations

from typing import Any

from components.observability.idle import idle_jobs_query
from components.scheduling.controller import (
    cluster_role,
    controller_deployment,
    controller_pod,
    granted,
    service_account,
)
from components.selftest.access import PART_OF, team_namespaces, watcher_image
from components.vocabulary import prometheus_service
from contract.env import (
    SELFTEST_PROMETHEUS_URL,
    SELFTEST_RECLAIM_NAMESPACES,
    SELFTEST_RECLAIM_PRIORITY_CLASSES,
    SELFTEST_RECLAIM_QUERY,
    SELFTEST_RECLAIM_QUEUES,
    SELFTEST_RECLAIM_SPARED_PRIORITY,
)
from model.config import PlatformConfig
from model.config.idle_reclaim import PRODUCTION_PRIORITY_CLASS
from model.config.scheduling import PRIORITIES

RECLAIMER = "idle-reclaimer"
RECLAIMER_ROLE = "gpu-platform-idle-reclaimer"
RECLAIM_RULES = [
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list", "patch"]}
]
RECLAIMER_LABELS = {"app.kubernetes.io/name": RECLAIMER, **PART_OF}


def reclaim_namespaces(cfg: PlatformConfig) -> list[str]:
    """The team namespaces whose workloads the reclaimer may deactivate."""
    reclaim = cfg.scheduling.idle_reclaim
    if reclaim is None:
        return []
    if reclaim.priority_classes:
        return team_namespaces(cfg)
    queues = set(reclaim.cluster_queues)
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    return sorted({t.name for t in teams if t.cluster_queue in queues})


def reclaimer_env(cfg: PlatformConfig) -> dict[str, str]:
    reclaim = cfg.scheduling.idle_reclaim
    assert reclaim is not None
    env = {
        SELFTEST_PROMETHEUS_URL: prometheus_service(cfg).url,
        SELFTEST_RECLAIM_QUERY: idle_jobs_query(cfg, reclaim.after_minutes),
        SELFTEST_RECLAIM_NAMESPACES: ",".join(reclaim_namespaces(cfg)),
        SELFTEST_RECLAIM_QUEUES: ",".join(reclaim.cluster_queues),
        SELFTEST_RECLAIM_PRIORITY_CLASSES: ",".join(reclaim.priority_classes),
    }
    if not reclaim.allow_production:
        production = next(p for p in PRIORITIES if p.name == PRODUCTION_PRIORITY_CLASS)
        env[SELFTEST_RECLAIM_SPARED_PRIORITY] = str(production.value)
    return env


def reclaimer_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The reclaimer's account, its role, a binding in each namespace it reclaims in, and its
    Deployment; none where the stack does not ask for it."""
    image = watcher_image(cfg)
    if cfg.scheduling.idle_reclaim is None or image is None:
        return []
    namespace = cfg.namespaces.selftest
    objects = [
        service_account(RECLAIMER, namespace, PART_OF),
        cluster_role(RECLAIMER_ROLE, RECLAIM_RULES, PART_OF),
        *granted(RECLAIMER_ROLE, RECLAIMER, namespace, PART_OF, reclaim_namespaces(cfg)),
    ]
    pod = controller_pod("reclaim", image, "selftest.reclaim", reclaimer_env(cfg), RECLAIMER)
    objects.append(controller_deployment(RECLAIMER, namespace, RECLAIMER_LABELS, pod))
    return objects
