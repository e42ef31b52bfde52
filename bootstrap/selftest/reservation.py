"""The reservation controller: one run reconciles a reserved pool's Kueue flavor to the phase of
its window at the time it runs (contract/reservation.py), whichever of the pool's CronJobs
(components/scheduling/reservation.py) started it.

- The flavor's nominal quota in each ClusterQueue that holds it: the open quota in the open
  phase, 0 in every other. A quota of 0 stops new admissions to the flavor; Kueue tries a
  workload's flavors in the queue's order, so it lands on the next one.
- Draining and closed: every Workload admitted to the flavor gets `spec.active: false`. Kueue
  evicts a deactivated Workload (condition Evicted, reason Deactivated) and its job integration
  stops the pods: SIGTERM, then their terminationGracePeriodSeconds to checkpoint (Kueue
  apis/kueue/v1beta2/workload_types.go, `active`: "Changing active from true to false will
  evict any running workloads"). With `requeue` the run reactivates each one once Kueue no
  longer holds its quota; Kueue requeues a reactivated Workload (kubernetes-sigs/kueue PR 2063,
  condition Requeued, reason ReactivateWorkload), and with the flavor at 0 it is admitted
  elsewhere.
  `hold` leaves it inactive.

Run as `python -m selftest.reservation`; its settings come from the environment (ENV_* in
contract/reservation.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

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
    actions,
)
from selftest.kube import KUEUE_API, MERGE_PATCH, ApiServer

# How long a requeue run waits for Kueue to release the deactivated workloads: their pods'
# grace to checkpoint, and then some.
RELEASE_WAIT_S = 900
POLL_S = 10


def window_of(env: dict[str, str]) -> Window:
    return Window(
        datetime.fromisoformat(env[ENV_START]),
        datetime.fromisoformat(env[ENV_END]),
        int(env[ENV_WARMUP]),
        int(env[ENV_DRAIN]),
        env[ENV_ON_DRAIN],
    )


def set_quota(api: ApiServer, queue: str, flavor: str, quota: dict[str, str] | None) -> None:
    """The flavor's nominal quota in `queue`: `quota`, or 0 of every resource (None)."""
    path = f"{KUEUE_API}/clusterqueues/{queue}"
    cq = api.request("GET", path)
    groups = cq["spec"]["resourceGroups"]
    for group in groups:
        for entry in group["flavors"]:
            if entry["name"] == flavor:
                for resource in entry["resources"]:
                    wanted = "0" if quota is None else quota[resource["name"]]
                    resource["nominalQuota"] = wanted
    # A merge patch replaces a list whole: the groups go back with only the quota changed.
    api.request("PATCH", path, {"spec": {"resourceGroups": groups}}, MERGE_PATCH)


def admitted_to(workload: dict[str, Any], flavor: str) -> bool:
    admission = workload.get("status", {}).get("admission") or {}
    return any(
        flavor in (ps.get("flavors") or {}).values()
        for ps in admission.get("podSetAssignments", [])
    )


def holds_quota(workload: dict[str, Any]) -> bool:
    conditions = workload.get("status", {}).get("conditions", [])
    return any(c["type"] == "QuotaReserved" and c["status"] == "True" for c in conditions)


def reconcile(
    api: ApiServer,
    env: dict[str, str],
    now: datetime,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Make the flavor what the phase at `now` says; returns what it did, one line each."""
    flavor, did = env[ENV_FLAVOR], []
    todo = actions(window_of(env), now)
    for queue, quota in json.loads(env[ENV_QUOTAS]).items():
        set_quota(api, queue, flavor, quota if todo.flavor_open else None)
        did.append(f"{todo.phase}: {flavor} in {queue} {'open' if todo.flavor_open else 'at 0'}")
    if not todo.evict:
        return did
    stopped = []
    for namespace in filter(None, env.get(ENV_NAMESPACES, "").split(",")):
        for wl in api.workloads(namespace):
            if wl["spec"].get("active", True) and admitted_to(wl, flavor):
                name = wl["metadata"]["name"]
                api.patch_workload(namespace, name, {"spec": {"active": False}})
                stopped.append((namespace, name))
                did.append(f"deactivated {namespace}/{name}")
    if not todo.reactivate:
        return did
    waited = 0.0
    while stopped and waited <= RELEASE_WAIT_S:
        for namespace, name in list(stopped):
            if not holds_quota(api.get_workload(namespace, name)):
                api.patch_workload(namespace, name, {"spec": {"active": True}})
                stopped.remove((namespace, name))
                did.append(f"requeued {namespace}/{name}")
        if stopped:
            sleep(POLL_S)
            waited += POLL_S
    did += [f"still held by Kueue, left inactive: {ns}/{n}" for ns, n in stopped]
    return did


def main() -> int:
    env = dict(os.environ)
    for line in reconcile(ApiServer.in_cluster(env), env, datetime.now(UTC)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
