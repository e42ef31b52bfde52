"""The node-join check (components/selftest/node_join.py): a DaemonSet per pool that runs the
self-test's node set on each untested node, within the pool's time limit, as an account that may
only get and patch nodes, and the config that turns it on."""

from __future__ import annotations

import pytest

from components.selftest.node_join import join_env
from model.config import parse_config
from model.config.node_join import joins_tested, pools_tested_on_join
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import make_project
from tests.helpers.bad_stacks import NS, assert_refused, aws
from tests.helpers.selftest_stacks import FSX, IMAGE, MIG, P5, env_of

# contract/node_join.py, as docs/selftest.md ("When a node joins") tells an admin to set them.
STARTUP_TAINT_KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join"
JOIN_LABEL = "gpu-platform/node-join"


@pytest.fixture(scope="module")
def joined(tmp_path_factory):
    """An AWS stack with an image (node-join on by default): an EFA pool and a MIG pool, the
    check's limit set to 20 minutes."""
    stack = aws(gpu_node_groups=[P5, MIG], storage=FSX,
                selftest={"image": IMAGE, "node_join": {"timeout_minutes": 20}})  # fmt: skip
    root = make_project(tmp_path_factory.mktemp("node-join"), {"nj": stack})
    return build_plan(run_program("nj", root))


def _objects(plan, kind):
    return {
        o["metadata"]["name"]: o
        for o in plan.kubernetes_objects()
        if o["kind"] == kind and "node-join" in o["metadata"]["name"]
    }


def test_a_daemonset_per_whole_gpu_pool_on_its_untested_nodes_only(joined):
    (ds,) = _objects(joined, "DaemonSet").values()
    assert ds["metadata"]["name"] == "node-join-h100"
    assert ds["metadata"]["namespace"] == "gpu-platform-selftest"
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform/node-group": "h100", JOIN_LABEL: "pending"}
    assert pod["restartPolicy"] == "Always"
    assert pod["serviceAccountName"] == "node-join"
    assert {"key": STARTUP_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    # No activeDeadlineSeconds in a DaemonSet's pods: the limit is the container's, in seconds.
    assert "activeDeadlineSeconds" not in pod
    (container,) = pod["containers"]
    assert container["command"][:3] == ["timeout", "--kill-after=60", "1200"]
    env = env_of(pod)
    assert env["SELFTEST_NODE_JOIN"] == "true"
    assert env["SELFTEST_CHECKS"] == "short"
    # A FAIL quarantines, whatever selftest.cordon_on_fail (left false here) says.
    assert env["SELFTEST_CORDON_ON_FAIL"] == "true"
    assert env["SELFTEST_CORDON_LABEL"] == "gpu-platform/selftest-failed"
    # The circuit breaker: the pool's nodes, and the default share (0.5).
    assert env["SELFTEST_NODE_JOIN_POOL_SELECTOR"] == "gpu-platform/node-group=h100"
    assert env["SELFTEST_NODE_JOIN_MAX_FAILED_SHARE"] == "0.5"


def test_a_pool_with_its_own_limit_gets_it(tmp_path):
    """selftest.node_join.pool_timeout_minutes: 90 minutes is 5400 s for that pool alone."""
    other = {**P5, "name": "h100-b", "efa": False}
    join = {"pool_timeout_minutes": {"h100-b": 90}}
    stack = aws(gpu_node_groups=[P5, other], storage=FSX,
                selftest={"image": IMAGE, "node_join": join})  # fmt: skip
    plan = build_plan(run_program("nj", make_project(tmp_path, {"nj": stack})))
    limits = {
        name: ds["spec"]["template"]["spec"]["containers"][0]["command"][2]
        for name, ds in _objects(plan, "DaemonSet").items()
    }
    assert limits == {"node-join-h100": "1800", "node-join-h100-b": "5400"}


def test_its_account_may_get_list_and_patch_nodes_and_nothing_else(joined):
    """Kubernetes RBAC cannot name nodes that do not exist yet (resourceNames is a fixed list):
    the verbs and the resource are the narrowest it allows. `list`: the circuit breaker counts
    the pool's nodes."""
    (role,) = _objects(joined, "ClusterRole").values()
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}
    ]
    (binding,) = _objects(joined, "ClusterRoleBinding").values()
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "node-join", "namespace": "gpu-platform-selftest"}
    ]
    assert not _objects(joined, "Role") and not _objects(joined, "RoleBinding")


def test_only_the_tested_groups_join_tainted_and_labelled(joined):
    groups = {g.name: g.inputs for g in joined.of_type("aws:eks/nodeGroup:NodeGroup")}
    startup = {"key": STARTUP_TAINT_KEY, "value": "pending", "effect": "NO_SCHEDULE"}
    assert startup in groups["nj-h100"]["taints"]
    assert groups["nj-h100"]["labels"][JOIN_LABEL] == "pending"
    # A MIG pool has no node-join run (the self-test measures whole GPUs): no taint to wait on.
    assert startup not in groups["nj-a100-mig"]["taints"]
    assert JOIN_LABEL not in groups["nj-a100-mig"]["labels"]


def test_it_follows_the_image_unless_set():
    def cfg(selftest):
        stack = aws(gpu_node_groups=[P5, MIG], selftest=selftest)
        raw = {k.removeprefix(f"{NS}:"): v for k, v in stack.items() if k.startswith(f"{NS}:")}
        return parse_config(raw, "stack.yaml")

    assert not joins_tested(cfg({}))
    assert joins_tested(cfg({"image": IMAGE}))
    assert not joins_tested(cfg({"image": IMAGE, "node_join": {"enabled": False}}))
    assert [p.name for p in pools_tested_on_join(cfg({"image": IMAGE}))] == ["h100"]


REFUSED = [
    *(
        pytest.param(
            aws(
                gpu_node_groups=[P5],
                selftest={"image": IMAGE, "node_join": {"max_failed_share": share}},
            ),
            f"{NS}:selftest.node_join.max_failed_share",
            text,
            valid,
            id=f"share-{share}",
        )
        for share, text, valid in [
            (0, "0", "greater than 0"),
            (1.5, "1.5", "less than or equal to 1"),
        ]
    ),
    pytest.param(
        aws(
            gpu_node_groups=[P5],
            selftest={"image": IMAGE, "node_join": {"pool_timeout_minutes": {"h100": 500}}},
        ),
        f"{NS}:selftest.node_join.pool_timeout_minutes.h100",
        "500",
        "less than or equal to 240",
        id="pool-limit-too-long",
    ),
    pytest.param(
        aws(
            gpu_node_groups=[P5],
            selftest={"image": IMAGE, "node_join": {"pool_timeout_minutes": {"a100": 60}}},
        ),
        f"{NS}:selftest.node_join.pool_timeout_minutes",
        "a100",
        "h100",
        id="pool-limit-of-no-pool",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"node_join": {"enabled": True}}),
        f"{NS}:selftest.node_join.enabled",
        "selftest.image is not set",
        "give the image's digest",
        id="enabled-without-image",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "node_join": {"timeout_minutes": 2}}),
        f"{NS}:selftest.node_join.timeout_minutes",
        "2",
        "5",
        id="limit-too-short",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), REFUSED)
def test_bad_node_join_exits_2_naming_the_key(tmp_path, monkeypatch, capsys, stack, path, value,
                                              valid):  # fmt: skip
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_a_node_join_check_quarantines_on_a_fail_even_where_scheduled_runs_only_report():
    # docs/selftest.md, "When a node joins": a node that fails before its first job must never
    # take one, whatever selftest.cordon_on_fail says of scheduled runs.
    stack = aws(
        gpu_node_groups=[P5], storage=FSX, selftest={"image": IMAGE, "cordon_on_fail": False}
    )
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in stack.items()}, "Pulumi.nj.yaml")
    (pool,) = pools_tested_on_join(cfg)
    env = join_env(cfg, pool, {"SELFTEST_CORDON_ON_FAIL": "false", "KEPT": "1"})
    assert env["SELFTEST_CORDON_ON_FAIL"] == "true"
    assert env["SELFTEST_NODE_JOIN"] == "true"
    assert env["SELFTEST_CHECKS"] == "short"
    assert env["KEPT"] == "1"
