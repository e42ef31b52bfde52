"""The idle reclaimer, `python -m selftest.reclaim`: gives an idle job's GPUs back to its cohort
where the stack asks (scheduling.idle_reclaim; components/selftest/reclaim.py deploys it in the
self-test's namespace). Every POLL_S seconds it asks Prometheus which jobs kept every GPU under
the idle threshold for the stack's whole window (SELFTEST_RECLAIM_QUERY: `namespace` and
`job_name`, the JobSet), finds each one's Kueue Workload in the team namespaces it may read (the
one a JobSet of that name owns), and deactivates it when it is admitted, in a reclaimable
ClusterQueue or priority class, and below the spared (production) priority.

Deactivating is one merge patch, `spec.active: false`: "Changing active from true to false will
evict any running workloads" (Kueue v0.19.2 apis/kueue/v1beta2/workload_types.go,
WorkloadSpec.Active). Kueue then evicts it (condition Evicted, reason Deactivated), releases its
quota to the cohort and suspends the JobSet, whose pods are deleted with their grace period:
SIGTERM, on which trainkit writes a checkpoint (docs/training.md). A deactivated workload is
never admitted again until someone sets `spec.active: true` (docs/scheduling.md, "Idle GPUs
given back"): the reclaimer never does, so a job whose code waits on something outside it does
not come back to idle again."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from contract.env import (
    SELFTEST_PROMETHEUS_URL,
    SELFTEST_RECLAIM_NAMESPACES,
    SELFTEST_RECLAIM_PRIORITY_CLASSES,
    SELFTEST_RECLAIM_QUERY,
    SELFTEST_RECLAIM_QUEUES,
    SELFTEST_RECLAIM_SPARED_PRIORITY,
)
from selftest.kube import ApiServer, KubeError
from selftest.metrics import prometheus_series

POLL_S = 60.0
DEACTIVATE = {"spec": {"active": False}}


@dataclass(frozen=True)
class Outcome:
    namespace: str
    job: str
    workload: str | None
    deactivated: bool
    why: str


def _names(env: dict[str, str], key: str) -> set[str]:
    return set(filter(None, env.get(key, "").split(",")))


def owned_by(workload: dict, job: str) -> bool:
    """Kueue names a JobSet's Workload after it and owns it by it (its ownerReferences)."""
    return any(
        ref.get("kind") == "JobSet" and ref.get("name") == job
        for ref in workload["metadata"].get("ownerReferences") or []
    )


def decide(env: dict[str, str], workload: dict) -> tuple[bool, str]:
    """Whether to deactivate an idle job's workload, and why (or why not)."""
    spec, status = workload.get("spec") or {}, workload.get("status") or {}
    if spec.get("active") is False:
        return False, "already deactivated"
    queue = (status.get("admission") or {}).get("clusterQueue")
    if not queue:
        return False, "not admitted: it holds no quota"
    spared = env.get(SELFTEST_RECLAIM_SPARED_PRIORITY)
    priority = spec.get("priority") or 0
    if spared and priority >= int(spared):
        return False, f"priority {priority} is production's ({spared} or above): never reclaimed"
    klass = spec.get("priorityClassName") or ""
    if queue in _names(env, SELFTEST_RECLAIM_QUEUES):
        return True, f"idle in reclaimable ClusterQueue {queue}"
    if klass in _names(env, SELFTEST_RECLAIM_PRIORITY_CLASSES):
        return True, f"idle at reclaimable priority class {klass}"
    return False, f"ClusterQueue {queue} and priority class {klass or '(none)'} are not reclaimed"


def sweep(env: dict[str, str], api: ApiServer) -> list[Outcome]:
    """Deactivate every idle job's workload that the stack lets the reclaimer take."""
    namespaces = _names(env, SELFTEST_RECLAIM_NAMESPACES)
    idle = sorted(
        {
            (s["metric"].get("namespace", ""), s["metric"].get("job_name", ""))
            for s in prometheus_series(env[SELFTEST_PROMETHEUS_URL], env[SELFTEST_RECLAIM_QUERY])
        }
    )
    done, listed = [], {}
    for namespace, job in idle:
        if namespace not in namespaces or not job:
            continue
        if namespace not in listed:
            listed[namespace] = api.workloads(namespace)
        found = [w for w in listed[namespace] if owned_by(w, job)]
        if not found:
            done.append(Outcome(namespace, job, None, False, "no Workload owned by the JobSet"))
            continue
        for workload in found:
            name = workload["metadata"]["name"]
            act, why = decide(env, workload)
            if act:
                api.patch_workload(namespace, name, DEACTIVATE)
            done.append(Outcome(namespace, job, name, act, why))
    return done


def main(argv: list[str]) -> int:
    """Sweep every POLL_S seconds; `--once`: one sweep, exit 1 if it failed (by hand:
    `kubectl exec deploy/idle-reclaimer -- python -m selftest.reclaim --once`)."""
    env = dict(os.environ)
    api = ApiServer.in_cluster(env)
    while True:
        try:
            for o in sweep(env, api):
                verb = "deactivated" if o.deactivated else "left"
                print(f"{o.namespace}/{o.job} ({o.workload}): {verb}: {o.why}", flush=True)
        except (KubeError, OSError, ValueError) as error:
            print(f"reclaim: {error}", file=sys.stderr, flush=True)
            if "--once" in argv:
                return 1
        if "--once" in argv:
            return 0
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
