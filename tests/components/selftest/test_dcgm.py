"""DCGM's diagnostic in every in-cluster self-test run (bootstrap/selftest/dcgm.py): each pod that
runs the hardware group is told where its own node's DCGM host engine is, the engine it names is
the one the pinned GPU Operator runs, and the pool's level fits the node-join check's limit."""

from __future__ import annotations

import pytest

from components.data.gpu_operator import helm_values
from model.config import parse_config
from model.config.node_join import join_dcgm_level
from tests.conftest import SHIPPED_STACKS, planned, project_plan, stack_config
from tests.controllers.pod_security import pod_templates
from tests.helpers.bad_stacks import NS, assert_refused, aws
from tests.helpers.gpu_operator_policy import cluster_policy
from tests.helpers.selftest_stacks import FSX, IMAGE, P5

# gpu-operator v26.7.0 assets/state-dcgm/0500_service.yaml: the standalone host engine's Service
# `nvidia-dcgm`, port 5555, `internalTrafficPolicy: Local` (a client reaches the engine on its
# own node, Kubernetes docs "Service Internal Traffic Policy"); 0400_dcgm.yml: its DaemonSet's
# container listens on 5555 with no hostPort, so the Service is the only way in.
ENGINE_SERVICE = "nvidia-dcgm"
ENGINE_PORT = 5555
# bootstrap/selftest/runner.py CHECK_SETS: `short` and `full` run the hardware group, `preflight`
# (inventory, agreement, collectives) does not; unset, a run is `full`.
WITH_HARDWARE = {"short", "full"}
KINDS = {"JobSet", "CronJob", "DaemonSet", "Job"}

# An AWS stack with every self-test run on (the post-deploy JobSet, a schedule, the node-join
# DaemonSets) and the operator in a namespace of its own (STYLE.md §14): the address must follow
# it, not the default's spelling.
EVERY_RUN = "dcgm"
EVERY_RUN_STACK = aws(
    gpu_node_groups=[P5, {**P5, "name": "h100-b", "efa": False}],
    storage=FSX,
    gpu_operator={"namespace": "nvidia-gpu"},
    selftest={
        "image": IMAGE,
        "schedule": {"cron": "0 */4 * * *"},
        "node_join": {"pool_dcgm_level": {"h100-b": 1}},
    },
)


def every_run_plan():
    return project_plan(EVERY_RUN, {EVERY_RUN: EVERY_RUN_STACK})


def every_run_config():
    raw = {k.removeprefix(f"{NS}:"): v for k, v in EVERY_RUN_STACK.items()}
    return parse_config(raw, f"Pulumi.{EVERY_RUN}.yaml")


def selftest_containers(plan) -> list[tuple[str, dict]]:
    """Every container of the plan's pods that runs `-m selftest`, init containers included."""
    found = []
    for obj in plan.kubernetes_objects():
        for _, pod in pod_templates(obj):
            for c in [*pod.get("initContainers", []), *pod.get("containers", [])]:
                command = c.get("command") or []
                if any(command[i : i + 2] == ["-m", "selftest"] for i in range(len(command))):
                    found.append((f"{obj['kind']} {obj['metadata']['name']}/{c['name']}", c))
    return found


def check_set(container: dict) -> str:
    command = container["command"]
    if "--checks" in command:
        return command[command.index("--checks") + 1]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    return env.get("SELFTEST_CHECKS") or "full"


def runs_hardware(container: dict) -> bool:
    checks = check_set(container)
    return checks in WITH_HARDWARE or "hardware" in checks.split(",")


PLANS = [
    *(pytest.param(s, lambda s=s: planned(s), lambda s=s: stack_config(s), id=s)
      for s in SHIPPED_STACKS),
    pytest.param(EVERY_RUN, every_run_plan, every_run_config, id=EVERY_RUN),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "plan_of", "config_of"), PLANS)
def test_every_selftest_pod_running_the_hardware_group_names_its_nodes_dcgm_engine(
    stack, plan_of, config_of
):
    namespace = config_of().gpu_operator.namespace
    wrong = {}
    for what, container in selftest_containers(plan_of()):
        if not runs_hardware(container):
            continue
        env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}
        address = env.get("SELFTEST_DCGM_HOSTENGINE")
        if address != f"{ENGINE_SERVICE}.{namespace}.svc:{ENGINE_PORT}":
            wrong[what] = address
    assert wrong == {}, f"{stack}: runs whose dcgmi diag would SKIP or ask another node: {wrong}"


def test_the_sweep_sees_every_kind_of_run():
    """The stack above runs the post-deploy JobSet, a CronJob per pool, a node-join DaemonSet
    per pool and, on AWS, a canary Job per pool: the sweep must find each, or it proves nothing
    of that kind."""
    kinds = {what.split(" ")[0] for what, c in selftest_containers(every_run_plan())
             if runs_hardware(c)}  # fmt: skip
    assert kinds == KINDS


@pytest.mark.parametrize("stack", [*SHIPPED_STACKS, EVERY_RUN])
def test_the_engine_the_address_names_is_the_one_the_pinned_operator_runs(stack):
    """The chart at the pin copies `dcgm.enabled` into the ClusterPolicy, whose true makes the
    operator deploy the nvidia-dcgm DaemonSet and Service (assets/state-dcgm); false (the
    chart's default) leaves only the exporter's embedded engine, which nothing else reaches."""
    cfg = every_run_config() if stack == EVERY_RUN else stack_config(stack)
    vals = helm_values(cfg.gpu_pools, cfg.gpu_operator, cfg.provider == "aws")
    dcgm = cluster_policy(vals)["spec"]["dcgm"]
    assert dcgm["enabled"] is True
    # In the pod's own network, as the Service expects (chart default `dcgm.hostNetwork: false`):
    # on AWS the node monitoring agent's dcgm-server already holds the node's port 5555
    # (aws/eks-node-monitoring-agent v1.7.0 templates/dcgm-daemonset.yaml, hostPort 5555).
    assert dcgm.get("hostNetwork") in (None, False)


def test_a_node_join_run_takes_its_pools_level_and_the_others_the_default():
    """selftest.node_join.dcgm_level defaults to 2 (the medium validation); h100-b sets 1."""
    daemon_sets = {
        o["metadata"]["name"]: o
        for o in every_run_plan().kubernetes_objects()
        if o["kind"] == "DaemonSet" and o["metadata"]["name"].startswith("node-join-")
    }
    levels = {}
    for name, ds in daemon_sets.items():
        (container,) = ds["spec"]["template"]["spec"]["containers"]
        levels[name] = {e["name"]: e.get("value") for e in container["env"]}["SELFTEST_DCGM_LEVEL"]
    assert levels == {"node-join-h100": "2", "node-join-h100-b": "1"}
    assert join_dcgm_level(every_run_config(), "h100") == 2


def test_the_post_deploy_and_scheduled_runs_keep_their_check_sets_level():
    """Only the runs of the node-join set on a new node (the node-join check, the canary) set a
    level, the pool's; the others run their set's (short 1, full 2)."""
    found = {
        what: {e["name"]: e.get("value") for e in c["env"]}
        for what, c in selftest_containers(every_run_plan())
    }
    joining = {w for w in found if w.startswith(("DaemonSet node-join-", "Job canary-"))}
    assert {w.split(" ")[0] for w in joining} == {"DaemonSet", "Job"}
    for what, env in found.items():
        assert ("SELFTEST_DCGM_LEVEL" in env) == (what in joining), what
    # A pool's canary is diagnosed as deeply as its new nodes are.
    level = {w.split(" ")[1].split("/")[0]: found[w]["SELFTEST_DCGM_LEVEL"] for w in joining}
    for name, value in level.items():
        if name.startswith("canary-"):
            assert value == level["node-join-" + name.removeprefix("canary-")], name


REFUSED = [
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "node_join": {"dcgm_level": 3}}),
        f"{NS}:selftest.node_join.dcgm_level",
        "level 3 on pool h100",
        "selftest.node_join.timeout_minutes more than 30 minutes",
        id="level-3-in-the-default-30-minutes",
    ),
    pytest.param(
        aws(
            gpu_node_groups=[P5],
            selftest={
                "image": IMAGE,
                "node_join": {"pool_dcgm_level": {"h100": 3}, "pool_timeout_minutes": {"h100": 20}},
            },
        ),
        f"{NS}:selftest.node_join.pool_dcgm_level.h100",
        "the node's whole check only 20",
        "selftest.node_join.pool_timeout_minutes.h100 more than 30 minutes",
        id="a-pools-level-3-in-its-own-20-minutes",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "node_join": {"timeout_minutes": 8}}),
        f"{NS}:selftest.node_join.dcgm_level",
        "up to 10 minutes",
        "or a lower level",
        id="the-default-level-in-8-minutes",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "node_join": {"dcgm_level": 4}}),
        f"{NS}:selftest.node_join.dcgm_level",
        "4",
        "less than or equal to 3",
        id="level-4",
    ),
    pytest.param(
        aws(
            gpu_node_groups=[P5],
            selftest={"image": IMAGE, "node_join": {"pool_dcgm_level": {"h100": 0}}},
        ),
        f"{NS}:selftest.node_join.pool_dcgm_level.h100",
        "0",
        "greater than or equal to 1",
        id="pool-level-0",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), REFUSED)
def test_a_level_the_pools_limit_cannot_hold_is_refused(tmp_path, monkeypatch, capsys, stack,
                                                        path, value, valid):  # fmt: skip
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_level_3_fits_a_pool_that_gives_it_more_than_30_minutes():
    stack = aws(gpu_node_groups=[P5], selftest={
        "image": IMAGE, "node_join": {"dcgm_level": 3, "timeout_minutes": 45}})  # fmt: skip
    raw = {k.removeprefix(f"{NS}:"): v for k, v in stack.items()}
    assert join_dcgm_level(parse_config(raw, "Pulumi.ok.yaml"), "h100") == 3
