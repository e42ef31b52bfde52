"""The node-join check's last step (SELFTEST_NODE_JOIN=true; components/selftest/node_join.py
runs it as a DaemonSet on every GPU node that has not been tested yet): settle the run's own
node (NODE_NAME, the downward API's spec.nodeName, never a node named otherwise).

- PASS: remove the startup taint (contract/node_join.py) and label the node `passed`; jobs may
  land there from now on.
- FAIL: the runner has already quarantined the node for the hardware checks it failed, with the
  reason, as a scheduled run does (selftest/quarantine.py); the taint stays and the node is
  labelled `failed`, so no job lands there whatever the failure was.

Either way the node no longer matches the DaemonSet, whose pod there then goes. The node's other
taints are kept as read: a node's taints are one atomic list, which a patch replaces whole."""

from __future__ import annotations

from typing import Any

from contract import node_join as join
from contract.env import SELFTEST_NODE_JOIN
from selftest.kube import ApiServer, KubeError
from selftest.result import CheckResult

ROW = "report.node_join"


def enabled(env: dict[str, str]) -> bool:
    return env.get(SELFTEST_NODE_JOIN, "").lower() == "true"


def settle_patch(node: dict[str, Any], passed: bool) -> dict[str, Any]:
    """The JSON merge patch that settles `node` (as read): its label, and on a PASS its taints
    without the startup taint; its resourceVersion makes the API refuse a stale patch."""
    patch: dict[str, Any] = {
        "metadata": {
            "labels": {join.LABEL: join.PASSED if passed else join.FAILED},
            "resourceVersion": node["metadata"]["resourceVersion"],
        }
    }
    if passed:
        taints = (node.get("spec") or {}).get("taints") or []
        patch["spec"] = {"taints": [t for t in taints if t.get("key") != join.TAINT_KEY]}
    return patch


def settle(env: dict[str, str], node: str, passed: bool) -> CheckResult:
    """Settle `node`; the report's row says what was done, WARN where the API refused (the node
    then stays tainted and the run is retried by the DaemonSet)."""
    verdict = join.PASSED if passed else join.FAILED
    try:
        ApiServer.in_cluster(env).patch_node_as_read(node, lambda n: settle_patch(n, passed))
    except KubeError as error:
        return CheckResult(
            ROW, "WARN", 0, "nodes released", reason=f"{node}: could not settle: {error}"
        )
    done = "startup taint removed" if passed else "startup taint kept"
    return CheckResult(
        ROW, "INFO", int(passed), "nodes released", reason=f"{node}: {verdict}, {done}"
    )
