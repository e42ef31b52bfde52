"""The critical path of a first `pulumi up` (plan/critical_path.py): the longest chain
through the plan's dependency graph, weighted by typical create times, and what it showed: the
FSx file system waited for the node-side Lustre rules, which need the EKS cluster's security
group, so it was created after the cluster instead of beside it."""

from __future__ import annotations

import pytest

from model.config.node_join import canary_pools
from plan.critical_path import CREATE_TIMES, chains, critical_path, waits_for
from plan.model import Plan, PlannedResource
from tests.conftest import STACKS, find, planned, stack_config
from tests.helpers.canary_stacks import CANARY_STACKS, canary_env_and_config, canary_plan

# (resources in the chain, minutes) per shipped stack, with the create times of
# plan/critical_path.py. Before the file system stopped waiting for the node-side rules,
# burst's, dev's and staging's chain was the FSx one (cluster role, secrets key, EKS cluster, a
# node-side Lustre rule, the file system, its S3 association: 6 resources, 30.75 minutes); the
# Helm chain below now decides every AWS stack. onprem's was 20 minutes while the Pushgateway
# was the self-test's child, declared after all the self-test tests (Kueue among them): its
# release waited for Kueue's. Declared after the monitoring release alone (it needs only the
# ServiceMonitor CRD), it installs beside Kueue, and Kueue's chain to the self-test decides.
# onprem's monitoring volumes are CephFS: the monitoring release now waits for the Rook operator,
# the CSI drivers and the class first (8 resources, 17.25 minutes while it did not).
# prod and burst name a self-test image (their reservation windows' controller runs in it): the
# Helm chain to Kueue's admission check (10 resources, 30 minutes) goes on through the Capacity
# Block pool's canary Job (10), the group it gates (4), the group's autoscaler tag (0.25), the
# quarantine watcher (0.25) and the post-deploy self-test JobSet (10): 15 resources, 54.5.
SHIPPED_CHAINS = {
    "burst": (15, 54.5),
    "dev": (10, 30.0),
    "onprem": (11, 23.5),
    "prod": (15, 54.5),
    "staging": (10, 30.0),
}

# When each shipped stack's file system is ready: its security group and own rules (0.25 min
# each, after the VPC) and FSx's 10 minutes. On main it came after the EKS cluster: cluster role
# and secrets key, the cluster's 15 minutes, a node-side rule, then FSx: 25.75 minutes.
FSX_READY_MINUTES = {"burst": 10.75, "dev": 10.75, "prod": 10.75, "staging": 10.75}

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
CLUSTER = "aws:eks/cluster:Cluster"


@pytest.mark.parametrize("stack", sorted(SHIPPED_CHAINS))
def test_shipped_stack_chain(stack):
    path = critical_path(planned(stack))
    assert (len(path.chain), path.minutes) == SHIPPED_CHAINS[stack]


def _before(graph: dict[str, set[str]], urn: str) -> set[str]:
    """Everything `urn` waits for, directly or not."""
    seen, todo = set(), [urn]
    while todo:
        for d in graph[todo.pop()] - seen:
            seen.add(d)
            todo.append(d)
    return seen


@pytest.mark.parametrize("stack", [s for s in STACKS if stack_config(s).storage.fsx is not None])
def test_file_system_is_created_beside_the_cluster(stack):
    """FSx checks at creation only that its own group passes Lustre between its servers (FSx
    for Lustre User Guide, "File system access control with Amazon VPC"); nothing it needs
    then comes from the EKS cluster, so it must not wait for it."""
    plan = planned(stack)
    graph = waits_for(plan)
    (fs,) = plan.of_type(FSX)
    before = [plan.by_urn[u] for u in _before(graph, fs.urn)]
    assert not [r.name for r in before if r.type == CLUSTER]
    rules = {
        plan.by_urn[u].name for u in graph[fs.urn] if plan.by_urn[u].type.startswith("aws:vpc/")
    }
    if stack in FSX_READY_MINUTES:
        assert chains(plan)[fs.urn].minutes == FSX_READY_MINUTES[stack]
    assert rules == {
        f"{stack}-fsx-in-fsx-988",
        f"{stack}-fsx-in-fsx-1018-1023",
        f"{stack}-fsx-out-fsx-988",
        f"{stack}-fsx-out-fsx-1018-1023",
    }


def test_every_create_time_names_its_source():
    for token, time in CREATE_TIMES.items():
        assert time.minutes > 0, token
        assert time.source.startswith("estimated:") or "#" in time.source or ".md" in time.source


def _resource(name: str, type_: str, deps=(), parent="", custom=True) -> PlannedResource:
    return PlannedResource(
        urn=f"urn:{name}",
        type=type_,
        name=name,
        parent=parent,
        inputs={},
        dependencies=[f"urn:{d}" for d in deps],
        protect=False,
        custom=custom,
    )


def test_a_dependency_on_a_component_waits_for_all_its_resources():
    """Pulumi: depending on a component waits for every resource under it; the longest chain
    wins over the one with more resources."""
    plan = Plan(
        "t",
        "p",
        [
            _resource("group", "gpu-platform:x:Group", custom=False),
            _resource("cluster", CLUSTER, parent="urn:group"),
            _resource("role", "aws:iam/role:Role", parent="urn:group"),
            _resource("a", "aws:iam/role:Role"),
            _resource("b", "aws:iam/role:Role", ["a"]),
            _resource("c", "aws:iam/role:Role", ["b"]),
            _resource("fs", FSX, ["group"]),
        ],
        {},
    )
    assert waits_for(plan)["urn:fs"] == {"urn:cluster", "urn:role"}
    path = critical_path(plan)
    assert [r.name for r in path.chain] == ["cluster", "fs"]
    assert path.minutes == 25  # 15 (EKS cluster) + 10 (FSx), the table's cited figures


@pytest.mark.parametrize("stack", CANARY_STACKS)
def test_on_the_first_up_a_pools_node_group_waits_for_its_canary(stack):
    """A tested pool's node group comes after its canary Job (components/selftest/canary.py),
    which waits for a node and the check: the first `up` of such a stack is longer by the
    canary's run, and the plan's critical path counts it as no quick API call."""
    plan = canary_plan(stack)
    env, cfg = canary_env_and_config(stack)
    paths = chains(plan)
    for pool in canary_pools(cfg):
        main = find(plan, "aws:eks/nodeGroup:NodeGroup", f"{env}-{pool.name}")
        job = find(plan, "kubernetes:batch/v1:Job", f"{env}-job-canary-{pool.name}")
        assert job in paths[main.urn].chain
        assert paths[main.urn].minutes > paths[job.urn].minutes
        assert "canary" in CREATE_TIMES["kubernetes:batch/v1:Job"].source
