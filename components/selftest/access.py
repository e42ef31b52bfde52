"""What the self-test's pods may ask of the Kubernetes API, as pure builders: a ServiceAccount
with one ClusterRole per need, each granting one verb on nodes (nodes are cluster-scoped, so
only a ClusterRole can; Kubernetes docs, "Using RBAC Authorization").

- Topology (issue 21): the downward API cannot expose a node's labels, so a run reads its own
  node (`get`, GET /api/v1/nodes/$NODE_NAME) to record which topology domain each rank ran in
  and to name it on the cross-node busbw check. The labels it reports are the Kueue Topology
  levels its pool's nodes are to carry (model/config/scheduling.wanted_topology), in
  SELFTEST_TOPOLOGY_LABELS, also before Kueue places by them: on an existing cluster the run
  names each node that lacks one, which is what the admin checks before setting
  scheduling.topology_labels_applied. A pool without levels gets neither the variable nor the
  permission.
- Quarantine (selftest.cordon_on_fail): cordoning (spec.unschedulable), labelling and tainting
  a node are one node `patch` of the node as read (`get`: its taints are one list, which a patch
  replaces whole), granted only then, by a ClusterRole of its own.
- The quarantine watcher, wherever a job may run a preflight (a self-test image and GPU pools):
  without it a restarted group goes back to the node its preflight failed on. The preflight runs
  as the team's pods, and a team's pods must never patch nodes, so the platform acts on their
  verdict. A Deployment in namespaces.selftest runs `python -m selftest.watch` in the self-test
  image as an account of its own, which may `list` pods in the team namespaces only (a
  RoleBinding in each to one ClusterRole) and `get` and `patch` nodes: it quarantines the node a
  failed preflight pod ran on, as the self-test does (bootstrap/selftest/watch.py). A team can at
  most get a node its own pod ran on quarantined, which a FAILing preflight there would do
  anyway.

The account and every run live in namespaces.selftest, the platform's own namespace, which no
team's pods share (issue 25 item 11).

The job builder sets NODE_NAME (downward API spec.nodeName) on every pod: the node to read and
to cordon."""

from __future__ import annotations

from typing import Any

from components.base import plane_labels
from components.registry_mirror import image_route, mirrored
from components.scheduling.controller import (
    cluster_role,
    controller_deployment,
    controller_pod,
    granted,
    service_account,
)
from components.vocabulary import QUARANTINE_LABEL
from contract.env import (
    SELFTEST_CORDON_LABEL,
    SELFTEST_CORDON_ON_FAIL,
    SELFTEST_TOPOLOGY_LABELS,
    SELFTEST_WATCH_NAMESPACES,
)
from model.config import GpuPool, PlatformConfig
from model.config.scheduling import wanted_topology
from model.config.selftest import selftest_pool
from model.config.selftest_schedule import scheduled_pools

PART_OF = plane_labels("selftest")
ACCOUNT = "selftest"
READER_ROLE = "gpu-platform-selftest-node-reader"
CORDON_ROLE = "gpu-platform-selftest-cordon"
# The node label a failing node gets, valued with the failed check (docs/monitoring.md).
CORDON_LABEL = QUARANTINE_LABEL
READ_RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
CORDON_RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
WATCHER = "quarantine-watcher"
WATCHER_ROLE = "gpu-platform-quarantine-watcher"
PREFLIGHT_READER_ROLE = "gpu-platform-preflight-reader"
LIST_PODS = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
WATCHER_LABELS = {"app.kubernetes.io/name": WATCHER, **PART_OF}


def run_pools(cfg: PlatformConfig) -> list[GpuPool]:
    """The pools some self-test run lands on: the post-deploy run's and the scheduled ones."""
    names = set(scheduled_pools(cfg))
    if cfg.selftest.resolved_mode(cfg.production) != "off":
        names.add(selftest_pool(cfg).name)
    return [pool for pool in cfg.gpu_pools if pool.name in names]


def reads_topology(cfg: PlatformConfig) -> bool:
    return any(wanted_topology(cfg, pool) is not None for pool in run_pools(cfg))


def account(cfg: PlatformConfig) -> str | None:
    """The ServiceAccount every self-test pod runs as; None where none may call the API."""
    needed = reads_topology(cfg) or (cfg.selftest.cordon_on_fail and run_pools(cfg))
    return ACCOUNT if needed else None


def access_env(cfg: PlatformConfig, pool: GpuPool) -> dict[str, str]:
    """The labels a run on `pool` reports, broadest first, and whether it cordons."""
    env = {}
    named = wanted_topology(cfg, pool)
    if named is not None:
        env[SELFTEST_TOPOLOGY_LABELS] = ",".join(named[1])
    if cfg.selftest.cordon_on_fail:
        env[SELFTEST_CORDON_ON_FAIL] = "true"
        env[SELFTEST_CORDON_LABEL] = CORDON_LABEL
    return env


def access_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The ServiceAccount and, for each need, a ClusterRole and its binding to the account."""
    name = account(cfg)
    if name is None:
        return []
    # The platform's own namespace (namespaces.selftest), never a team's: a pod may run as any
    # ServiceAccount of its namespace (Kubernetes docs, "Service Accounts"), so a team sharing
    # the namespace could patch every node of the cluster.
    namespace = cfg.namespaces.selftest
    objects = [service_account(name, namespace, PART_OF)]
    if reads_topology(cfg):
        objects += [cluster_role(READER_ROLE, READ_RULES, PART_OF),
                    *granted(READER_ROLE, name, namespace, PART_OF)]  # fmt: skip
    if cfg.selftest.cordon_on_fail:
        objects += [cluster_role(CORDON_ROLE, CORDON_RULES, PART_OF),
                    *granted(CORDON_ROLE, name, namespace, PART_OF)]  # fmt: skip
    return objects


def access_all(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """Everything the self-test's runs and the quarantine watcher call the API as."""
    return access_objects(cfg) + watcher_objects(cfg)


def watcher_image(cfg: PlatformConfig) -> str | None:
    """The image the watcher runs, where it runs: the self-test's, without which no job runs a
    preflight (components/selftest/preflight.py)."""
    return mirrored(cfg.selftest.image, image_route(cfg)) if cfg.gpu_pools else None


def team_namespaces(cfg: PlatformConfig) -> list[str]:
    return sorted({t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)})


def watcher_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The watcher's account, its roles and its Deployment; none where it does not run."""
    image = watcher_image(cfg)
    if image is None:
        return []
    namespace = cfg.namespaces.selftest
    objects = [
        service_account(WATCHER, namespace, PART_OF),
        cluster_role(WATCHER_ROLE, CORDON_RULES, PART_OF),
        *granted(WATCHER_ROLE, WATCHER, namespace, PART_OF),
        cluster_role(PREFLIGHT_READER_ROLE, LIST_PODS, PART_OF),
        *granted(PREFLIGHT_READER_ROLE, WATCHER, namespace, PART_OF, team_namespaces(cfg)),
    ]
    env = {
        SELFTEST_CORDON_LABEL: CORDON_LABEL,
        SELFTEST_WATCH_NAMESPACES: ",".join(team_namespaces(cfg)),
    }
    pod = controller_pod("watch", image, "selftest.watch", env, WATCHER)
    objects.append(controller_deployment(WATCHER, namespace, WATCHER_LABELS, pod))
    return objects
