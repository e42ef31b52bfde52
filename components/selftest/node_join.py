"""The node-join check (selftest.node_join): no job on an untested node. Every new GPU node joins
with the startup taint and the label of contract/node_join.py (the node groups set both on AWS,
components/data/gpu_node_group.py; the admin on an existing cluster, docs/selftest.md). A
DaemonSet per pool, in the self-test's namespace, selects the pool's nodes that still carry the
label as `pending` and runs the scheduled runs' check set (`short`: inventory, PCIe and NVLink,
ECC and XID, DCGM, an intra-node collective, the NVMe array) on the whole node, as the job builder
lays a standalone run out (components/selftest/schedule.py), pushing its result where the
history is kept. The image (bootstrap/selftest/node_join.py) then:

- on PASS removes the startup taint from its own node and labels it `passed`;
- on FAIL quarantines the node with the reason, as a scheduled run does
  (bootstrap/selftest/quarantine.py), keeps the taint and labels it `failed`.

Either way the node no longer matches the DaemonSet, whose pod there goes. A DaemonSet pod may
have no activeDeadlineSeconds (the API refuses it outside restartPolicy Never and OnFailure), so
the pool's time limit is the container's: `timeout` stops the run and the pod starts it again; a
node still tainted after the limit alerts (components/observability/alerts.py, NodeJoinStuck).

A circuit breaker (selftest.node_join.max_failed_share): where the pool's nodes already held
for a failed check would pass the share with one more, a FAIL releases the node instead of
quarantining it, so a bad image or floor cannot take the pool out.

Its account may `get`, `list` (the breaker counts the pool's nodes) and `patch` nodes, nothing
else. Kubernetes RBAC cannot narrow that to the node a pod runs on: `resourceNames` is a fixed
list, and the nodes that join are not known in advance (Kubernetes docs, "Using RBAC Authorization",
"Referring to resources"). The account lives in the self-test's namespace, where no team's pods
run, and the image patches only the node of the downward API's spec.nodeName."""

from __future__ import annotations

from typing import Any

from components.registry_mirror import image_route, mirrored
from components.scheduling.controller import cluster_role, granted, service_account
from components.scheduling.job_claims import claim_templates
from components.scheduling.job_spec import TrainingJobSpec, spec_for_pool
from components.scheduling.training_job import pod_template
from components.selftest.access import CORDON_LABEL, PART_OF
from components.selftest.schedule import history_env
from components.vocabulary import GPU_TOLERATION, NODE_JOIN_TOLERATION
from contract import node_join as join
from contract.env import (
    SELFTEST_CHECKS,
    SELFTEST_CORDON_LABEL,
    SELFTEST_CORDON_ON_FAIL,
    SELFTEST_DCGM_LEVEL,
    SELFTEST_NODE_JOIN,
    SELFTEST_NODE_JOIN_MAX_FAILED_SHARE,
    SELFTEST_NODE_JOIN_POOL_SELECTOR,
    SELFTEST_OUT,
    SELFTEST_RUN_ID,
)
from contract.mounts import SHARED_DATA_MOUNT_PATH
from model.config import GpuPool, PlatformConfig
from model.config.node_join import (
    join_dcgm_level,
    join_timeout_minutes,
    joins_tested,
    pools_tested_on_join,
)

ACCOUNT = "node-join"
ROLE = "gpu-platform-node-join"
# Read the node as it is and patch it (its taints are one list, which a patch replaces whole),
# and list the pool's nodes for the circuit breaker.
RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
CHECKS = "short"
# What the container's time limit adds to the run's: torchrun's agent lets its workers stop.
KILL_AFTER_S = 60


def daemon_set_name(pool: str) -> str:
    return f"node-join-{pool}"


def join_env(cfg: PlatformConfig, pool: GpuPool, env: dict[str, str]) -> dict[str, str]:
    """`env`, the self-test's for one node of `pool`, run as a node-join check: quarantine on a
    FAIL whatever selftest.cordon_on_fail says (a node that fails before its first job must
    never take one) unless the pool's breaker is open, a report folder per pod."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_selector.items()))
    return {
        **env,
        # Its result is pushed like any run's, to the stack's Pushgateway (every stack has one,
        # which admits the self-test's namespace wherever new nodes are tested).
        **history_env(cfg),
        SELFTEST_CHECKS: CHECKS,
        SELFTEST_RUN_ID: "$(POD_NAME)",
        SELFTEST_OUT: f"{SHARED_DATA_MOUNT_PATH}/selftest/node-join/{pool.name}/$(POD_NAME)",
        SELFTEST_NODE_JOIN: "true",
        SELFTEST_CORDON_ON_FAIL: "true",
        SELFTEST_CORDON_LABEL: CORDON_LABEL,
        SELFTEST_NODE_JOIN_POOL_SELECTOR: selector,
        SELFTEST_NODE_JOIN_MAX_FAILED_SHARE: str(cfg.selftest.node_join.max_failed_share),
        # DCGM's diagnostic at the pool's level, not the short set's quick checks: a node is
        # tested once, before its first job.
        SELFTEST_DCGM_LEVEL: str(join_dcgm_level(cfg, pool.name)),
    }


def whole_node_spec(
    cfg: PlatformConfig, pool: GpuPool, name: str, env: dict[str, str], **options: Any
) -> TrainingJobSpec:
    """The self-test on one whole new node of `pool`, in the self-test's namespace, as the job
    builder lays out a one-node run: the node-join check's and the canary's (canary.py)."""
    return spec_for_pool(
        cfg,
        pool.name,
        name=name,
        image=mirrored(cfg.selftest.image, image_route(cfg)),
        command=["-m", "selftest"],
        nodes=1,
        standalone=True,
        env=env,
        namespace=cfg.namespaces.selftest,
        **options,
    )


def join_spec(cfg: PlatformConfig, pool: GpuPool, env: dict[str, str]) -> TrainingJobSpec:
    return whole_node_spec(
        cfg,
        pool,
        daemon_set_name(pool.name),
        join_env(cfg, pool, env),
        labels={**PART_OF, "gpu-platform/node-join-pool": pool.name},
        service_account=ACCOUNT,
    )


def daemon_set(cfg: PlatformConfig, pool: GpuPool, env: dict[str, str]) -> dict[str, Any]:
    """The pool's check: the job builder's pod for one whole node, on the pool's untested nodes
    only, tolerating the startup taint (no job does), restarted until it settles the node."""
    spec = join_spec(cfg, pool, env)
    template = pod_template(spec)
    pod = template["spec"]
    pod["restartPolicy"] = "Always"  # the only one a DaemonSet's pods may have
    pod["nodeSelector"] = {**pod["nodeSelector"], join.LABEL: join.PENDING}
    pod["tolerations"] = [dict(GPU_TOLERATION), dict(NODE_JOIN_TOLERATION)]
    (container,) = pod["containers"]
    limit = join_timeout_minutes(cfg, pool.name) * 60
    container["command"] = [
        "timeout", f"--kill-after={KILL_AFTER_S}", str(limit), *container["command"]
    ]  # fmt: skip
    selector = {"gpu-platform/node-join-pool": pool.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": dict(spec.labels),
        },
        "spec": {
            "selector": {"matchLabels": selector},
            # A pod is replaced only on a node it has not settled yet; never all at once.
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": template,
        },
    }


def node_join_objects(cfg: PlatformConfig, env_for_pool) -> list[dict[str, Any]]:
    """The check's account, its ClusterRole and binding, and a DaemonSet per tested pool (after
    its claim template on a DRA pool);
    `env_for_pool(pool)` gives the self-test's env there. None where new nodes are not
    tested."""
    if not joins_tested(cfg):
        return []
    namespace = cfg.namespaces.selftest
    objects = [
        service_account(ACCOUNT, namespace, PART_OF),
        cluster_role(ROLE, RULES, PART_OF),
        *granted(ROLE, ACCOUNT, namespace, PART_OF),
    ]
    for pool in pools_tested_on_join(cfg):
        env = env_for_pool(pool.name)
        # On a DRA pool the check's pods claim the node's GPUs through a template of its own.
        objects += [*claim_templates(join_spec(cfg, pool, env)), daemon_set(cfg, pool, env)]
    return objects
