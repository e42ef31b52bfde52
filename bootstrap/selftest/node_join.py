"""The node-join check's last step (SELFTEST_NODE_JOIN=true; components/selftest/node_join.py
runs it as a DaemonSet on every GPU node that has not been tested yet): settle the run's own
node (NODE_NAME, the downward API's spec.nodeName, never a node named otherwise).

- PASS: remove the startup taint (contract/node_join.py) and label the node `passed`; jobs may
  land there from now on.
- FAIL: the runner has already quarantined the node for the hardware checks it failed, with the
  reason, as a scheduled run does (selftest/quarantine.py); the taint stays and the node is
  labelled `failed`, so no job lands there whatever the failure was.

- FAIL past the pool's circuit breaker (SELFTEST_NODE_JOIN_MAX_FAILED_SHARE of the nodes that
  SELFTEST_NODE_JOIN_POOL_SELECTOR selects already held `failed`, counting this one): no
  quarantine; the taint goes and the label says `released`, and the report's row is a WARN.
  When most new nodes fail, the check (its image, a floor) is the likelier fault, and holding
  every node would take the pool out.

Either way the node no longer matches the DaemonSet, whose pod there then goes. The node's other
taints are kept as read: a node's taints are one atomic list, which a patch replaces whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract import node_join as join
from contract.env import (
    SELFTEST_NODE_JOIN,
    SELFTEST_NODE_JOIN_MAX_FAILED_SHARE,
    SELFTEST_NODE_JOIN_POOL_SELECTOR,
)
from selftest.kube import ApiServer, KubeError
from selftest.result import CheckResult

ROW = "report.node_join"


def enabled(env: dict[str, str]) -> bool:
    return env.get(SELFTEST_NODE_JOIN, "").lower() == "true"


@dataclass(frozen=True)
class Breaker:
    """The pool's circuit breaker as this FAIL finds it."""

    open: bool
    reason: str


def breaker(env: dict[str, str]) -> Breaker:
    """Open where the pool's nodes held `failed`, with this one, would be more than the share.
    Where the pool cannot be read it stays closed: the node is held, as without a breaker."""
    share = float(env.get(SELFTEST_NODE_JOIN_MAX_FAILED_SHARE) or 1)
    selector = env.get(SELFTEST_NODE_JOIN_POOL_SELECTOR, "")
    try:
        nodes = ApiServer.in_cluster(env).nodes(selector)
    except KubeError as error:
        return Breaker(False, f"pool unread, breaker closed: {error}")
    labels = [(n.get("metadata") or {}).get("labels") or {} for n in nodes]
    failed = sum(1 for lab in labels if lab.get(join.LABEL) == join.FAILED) + 1
    total = max(len(nodes), 1)
    words = f"{failed} of the pool's {total} nodes failed, share {failed / total:.2f}"
    if failed / total > share:
        return Breaker(True, f"breaker open: {words} > {share:g}")
    return Breaker(False, f"breaker closed: {words} <= {share:g}")


def verdict(passed: bool, tripped: Breaker | None = None) -> str:
    if passed:
        return join.PASSED
    return join.RELEASED if tripped is not None and tripped.open else join.FAILED


def settle_patch(node: dict[str, Any], state: str) -> dict[str, Any]:
    """The JSON merge patch that settles `node` (as read) in `state`: its label and, unless it
    is held (FAILED), its taints without the startup taint; its resourceVersion makes the API
    refuse a stale patch."""
    patch: dict[str, Any] = {
        "metadata": {
            "labels": {join.LABEL: state},
            "resourceVersion": node["metadata"]["resourceVersion"],
        }
    }
    if state != join.FAILED:
        taints = (node.get("spec") or {}).get("taints") or []
        patch["spec"] = {"taints": [t for t in taints if t.get("key") != join.TAINT_KEY]}
    return patch


def settle(
    env: dict[str, str], node: str, passed: bool, tripped: Breaker | None = None
) -> CheckResult:
    """Settle `node`; the report's row says what was done: INFO, or WARN where the breaker
    released a failed node or the API refused (the node then stays tainted and the DaemonSet
    runs the check again)."""
    state = verdict(passed, tripped)
    try:
        ApiServer.in_cluster(env).patch_node_as_read(node, lambda n: settle_patch(n, state))
    except KubeError as error:
        return CheckResult(
            ROW, "WARN", 0, "nodes released", reason=f"{node}: could not settle: {error}"
        )
    done = "startup taint kept" if state == join.FAILED else "startup taint removed"
    why = f"; {tripped.reason}" if tripped is not None else ""
    return CheckResult(
        ROW,
        "WARN" if state == join.RELEASED else "INFO",
        int(state != join.FAILED),
        "nodes released",
        reason=f"{node}: {state}, {done}{why}",
    )
