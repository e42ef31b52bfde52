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
- Quarantine (selftest.cordon_on_fail): cordoning (spec.unschedulable) and labelling a node are
  one node `patch`, granted only then, by a ClusterRole of its own.

The account and every run live in namespaces.selftest, the platform's own namespace, which no
team's pods share (issue 25 item 11).

The job builder sets NODE_NAME (downward API spec.nodeName) on every pod: the node to read and
to cordon."""

from __future__ import annotations

from typing import Any

from components.base import plane_labels
from components.vocabulary import QUARANTINE_LABEL
from contract.env import SELFTEST_CORDON_LABEL, SELFTEST_CORDON_ON_FAIL, SELFTEST_TOPOLOGY_LABELS
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
CORDON_RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}]


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
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace, "labels": PART_OF},
        }
    ]
    if reads_topology(cfg):
        objects += _role(READER_ROLE, READ_RULES, name, namespace)
    if cfg.selftest.cordon_on_fail:
        objects += _role(CORDON_ROLE, CORDON_RULES, name, namespace)
    return objects


def _role(role: str, rules: list[dict], account_name: str, namespace: str) -> list[dict]:
    rbac = "rbac.authorization.k8s.io/v1"
    metadata = {"name": role, "labels": PART_OF}
    return [
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": metadata, "rules": rules},
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account_name,
                          "namespace": namespace}],
        },
    ]  # fmt: skip
