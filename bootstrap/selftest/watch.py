"""The quarantine watcher, `python -m selftest.watch`: the platform's own actor on a job's failed
preflight (components/selftest/access.py deploys it in the self-test's namespace, with
selftest.cordon_on_fail). A preflight runs as the team's pods, which must not patch nodes: the
failing node's local rank 0 writes its verdict as the preflight container's termination message
(quarantine.write_verdict), and this watcher, whose account may list pods in the team namespaces
and get and patch nodes, quarantines the node the failed pod ran on (quarantine.node_fault:
its `spec.nodeName`, never a node the message names otherwise).

It lists the failed pods that carry the preflight label in each namespace of
SELFTEST_WATCH_NAMESPACES every POLL_S seconds and acts once per pod. The taint lands while the
JobSet is still restarting the group: the Job fails first, then every old pod must be gone
(BlockingRecreate) before new ones are created and, with topology-aware scheduling, before
Kueue's node controller and ungater place them; a restarted pod that is placed on the node
before the taint fails its preflight there again, and the next restart keeps off it."""

from __future__ import annotations

import os
import sys
import time

from contract import preflight
from contract.env import SELFTEST_WATCH_NAMESPACES
from selftest import quarantine
from selftest.kube import ApiServer, KubeError

POLL_S = 2.0
SELECTOR = "=".join(preflight.POD_LABEL)


def sweep(env: dict[str, str], api: ApiServer, seen: set[str]) -> list[quarantine.Outcome]:
    """Quarantine the node of every failed preflight not seen before, in every namespace."""
    done = []
    for namespace in filter(None, env.get(SELFTEST_WATCH_NAMESPACES, "").split(",")):
        for pod in api.failed_pods(namespace, SELECTOR):
            uid = pod["metadata"]["uid"]
            if uid in seen:
                continue
            seen.add(uid)
            fault = quarantine.node_fault(pod)
            if fault is not None:
                done.append(quarantine.quarantine(env, *fault))
    return done


def main() -> int:
    env = dict(os.environ)
    api = ApiServer.in_cluster(env)
    seen: set[str] = set()
    while True:
        try:
            for outcome in sweep(env, api, seen):
                print(
                    f"{outcome.node} ({', '.join(outcome.failed)}): {outcome.message}", flush=True
                )
        except KubeError as error:
            print(f"watch: {error}", file=sys.stderr, flush=True)
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main())
