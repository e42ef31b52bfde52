"""The node-join check, image side (bootstrap/selftest/node_join.py): a run with
SELFTEST_NODE_JOIN=true settles its own node through the in-cluster API (a TLS stand-in here). A
PASS removes the startup taint and only it; a FAIL quarantines the node as a scheduled run does,
keeps the taint and labels the node `failed`, so the check's DaemonSet leaves it."""

from __future__ import annotations

import re
import sys
import urllib.parse

from selftest import node_join

from tests.helpers.kube_api import ApiServer, node
from tests.helpers.selftest_process import run

NODE_PATH = "/api/v1/nodes/node-a"
# cluster-autoscaler FAQ.md, "Startup taints" (the prefix), at cluster-autoscaler-1.35.0; the
# name after it is the platform's (docs/selftest.md, "When a node joins").
STARTUP_TAINT = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
    "value": "pending",
    "effect": "NoSchedule",
}
# The GPU taint every GPU node keeps (components/data/gpu_node_group.py).
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
JOIN_LABEL = "gpu-platform/node-join"
NEW_NODE = {
    **node("node-a", {JOIN_LABEL: "pending"}),
    "spec": {"taints": [GPU_TAINT, STARTUP_TAINT]},
}
NEW_NODE["metadata"]["resourceVersion"] = "815"
ANSWERS = {("GET", NODE_PATH): (200, NEW_NODE), ("PATCH", NODE_PATH): (200, {"kind": "Node"})}
ON = {"SELFTEST_NODE_JOIN": "true"}


def test_a_pass_removes_the_startup_taint_from_its_node_and_keeps_the_others(tmp_path):
    with ApiServer(tmp_path, ANSWERS) as api:
        row = node_join.settle({**api.env(), **ON}, "node-a", passed=True)
    (read, (method, path, headers, body)) = api.received
    assert read[:2] == ("GET", NODE_PATH)
    assert (method, path) == ("PATCH", NODE_PATH)
    assert headers["Content-Type"] == "application/merge-patch+json"
    # A node's taints are one atomic list (core/v1 NodeSpec): the patch gives the whole list.
    assert body == {
        "metadata": {"labels": {JOIN_LABEL: "passed"}, "resourceVersion": "815"},
        "spec": {"taints": [GPU_TAINT]},
    }
    assert (row.name, row.status, row.value) == ("report.node_join", "INFO", 1)


def test_a_node_that_changed_in_between_is_read_again(tmp_path):
    conflict = {"kind": "Status", "code": 409, "message": "the object has been modified"}
    answers = {**ANSWERS, ("PATCH", NODE_PATH): (409, conflict)}
    with ApiServer(tmp_path, answers) as api:
        row = node_join.settle(api.env(), "node-a", passed=True)
    assert [m for m, *_ in api.received] == ["GET", "PATCH"] * 3
    assert row.status == "WARN" and "HTTP 409" in row.reason


POOL = "gpu-platform/node-group=h100"
POOL_PATH = "/api/v1/nodes?" + urllib.parse.urlencode({"labelSelector": POOL})
QUARANTINE = {"SELFTEST_CORDON_ON_FAIL": "true",
              "SELFTEST_CORDON_LABEL": "gpu-platform/selftest-failed"}  # fmt: skip
BREAKER = {"SELFTEST_NODE_JOIN_POOL_SELECTOR": POOL, "SELFTEST_NODE_JOIN_MAX_FAILED_SHARE": "0.5"}


def pool_of(*states: str) -> dict:
    """The pool's nodes as the API lists them, each labelled with its node-join state."""
    return {"kind": "NodeList", "items": [node(f"n{i}", {JOIN_LABEL: s}) for i, s in
                                          enumerate(states)]}  # fmt: skip


def failing_run(tmp_path, pool: dict):
    """8 GPUs expected on this CPU: inventory.gpu_count FAILs, a fault of the node."""
    out = tmp_path / "out"
    answers = {**ANSWERS, ("GET", POOL_PATH): (200, pool)}
    with ApiServer(tmp_path / "api", answers) as api:
        done = run([sys.executable, "-m", "selftest", "--out", str(out), "--checks", "inventory",
                    "--expected-gpus", "8"],
                   RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", NODE_NAME="node-a",
                   **api.env(), **QUARANTINE, **BREAKER, **ON)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    return done, [body for method, _, _, body in api.received if method == "PATCH"]


def test_a_failing_run_quarantines_its_node_and_keeps_the_startup_taint(tmp_path):
    """Breaker closed: with this one, 1 of the pool's 4 nodes failed (0.25 <= 0.5)."""
    done, (cordon, settled) = failing_run(tmp_path, pool_of("pending", "passed", "passed",
                                                            "passed"))  # fmt: skip
    assert cordon["metadata"]["labels"] == {"gpu-platform/selftest-failed": "inventory.gpu_count"}
    assert cordon["spec"]["unschedulable"] is True
    # When and why, in the same patch (contract/quarantine.py): RFC 3339 UTC, then the checks.
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ inventory\.gpu_count",
        cordon["metadata"]["annotations"]["gpu-platform/quarantined"],
    )
    assert STARTUP_TAINT in cordon["spec"]["taints"]
    assert settled == {"metadata": {"labels": {JOIN_LABEL: "failed"}, "resourceVersion": "815"}}
    assert "node-a: failed, startup taint kept; breaker closed: 1 of the pool's 4" in done.stdout


def test_past_the_pools_share_a_failing_run_releases_its_node_unquarantined(tmp_path):
    """Breaker open: with this one, 2 of the pool's 3 nodes failed (0.67 > 0.5): a bad image
    must not hold the whole pool. No quarantine; the taint goes; the row is a WARN."""
    done, patches = failing_run(tmp_path, pool_of("pending", "failed", "passed"))
    assert patches == [
        {"metadata": {"labels": {JOIN_LABEL: "released"}, "resourceVersion": "815"},
         "spec": {"taints": [GPU_TAINT]}},
    ]  # fmt: skip
    assert "node-a: released, startup taint removed; breaker open: 2 of the pool's 3" in (
        done.stdout
    )
