"""Team access (STYLE.md §17): a model of RBAC and EKS access policies (tests/controllers/rbac.py)
run over what the stacks declare and the Kueue and JobSet charts render: each team's people may
submit, see and cancel their jobs in their own namespace, and do nothing in another team's
namespace, the platform's or kube-system; `edit` alone would not let them submit a JobSet."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from components.scheduling.training_job import render
from jobs.common import SubmitError
from jobs.team import TeamJob, plan_job
from model.config import PlatformConfig
from plan.model import Plan
from tests.conftest import STACKS, planned, rendered, stack_config
from tests.controllers.rbac import Cluster, Grant, allowed, eks_grants
from tests.helpers.team_stacks import (
    AUDITORS,
    AWS_TEAMS_STACK,
    BESIDE_TEAM_STACKS,
    ONPREM_TEAMS_STACK,
    TEAM_STACKS,
    team_config,
    team_plan,
)

# The Kueue 0.19.2 and JobSet 0.12.0 charts' ClusterRoles, the same whatever a stack's values:
# rendered from ../shared/helm on a stack that installs both.
CHARTS_STACK = "staging"
# What `python -m jobs` does to a team's job: `kubectl apply` (get, create, patch), cancel and
# resubmit (delete), status (get, list).
SUBMIT_VERBS = ("get", "list", "create", "patch", "delete")
JOBSETS = ("jobset.x-k8s.io", "jobsets")
# A team job's image, digest-pinned as `jobs submit` asks.
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/llm/train@sha256:" + "e" * 64


@functools.cache
def chart_objects() -> tuple[dict, ...]:
    return tuple(obj for _, obj in rendered(CHARTS_STACK).objects())


def of(stack: str) -> tuple[Plan, PlatformConfig]:
    if stack in (*TEAM_STACKS, *BESIDE_TEAM_STACKS):
        return team_plan(stack), team_config(stack)
    return planned(stack), stack_config(stack)


def cluster_of(plan: Plan) -> Cluster:
    return Cluster([*chart_objects(), *plan.kubernetes_objects()])


def people(stack: str) -> list[tuple[str, str, str, list[Grant]]]:
    """(team, role, who, what they hold) for every principal and group a team names."""
    plan, cfg = of(stack)
    cluster = cluster_of(plan)
    found = []
    for team in cfg.scheduling.teams:
        for grant in team.access:
            for arn in grant.principal_arns:
                found.append((team.name, grant.role, arn, eks_grants(cluster, plan.resources, arn)))
            for group in grant.groups:
                found.append((team.name, grant.role, group, cluster.group_grants([group])))
    return found


def other_namespaces(cfg: PlatformConfig, team: str, who: str) -> list[str]:
    """Every namespace but the team's own (and those where `who` is given a role by another
    team), kube-system and default among them."""
    theirs = {
        t.name
        for t in cfg.scheduling.teams
        for g in t.access
        if who in (*g.principal_arns, *g.groups)
    }
    everything = {*cfg.namespaces.model_dump().values(), *(t.name for t in cfg.scheduling.teams)}
    return sorted((everything | {"kube-system", "default"}) - theirs - {team})


@pytest.mark.parametrize("stack", [*STACKS, *TEAM_STACKS, *BESIDE_TEAM_STACKS])
def test_each_teams_people_may_submit_jobs_in_their_namespace_and_nowhere_else(stack):
    _, cfg = of(stack)
    for team, role, who, grants in people(stack):
        for verb in SUBMIT_VERBS:
            may = role == "edit" or verb in ("get", "list")
            assert allowed(grants, verb, *JOBSETS, team) == may, (stack, team, role, who, verb)
        # Why a job waits: its Kueue Workload and the team's LocalQueue.
        assert allowed(grants, "get", "kueue.x-k8s.io", "workloads", team), (stack, who)
        assert allowed(grants, "list", "kueue.x-k8s.io", "localqueues", team), (stack, who)
        for ns in other_namespaces(cfg, team, who):
            for verb in ("get", "create", "delete"):
                for group, resource in (JOBSETS, ("", "pods"), ("", "secrets"), ("batch", "jobs")):
                    assert not allowed(grants, verb, group, resource, ns), (
                        f"{stack}: {who} of team {team} may {verb} {resource} in {ns}"
                    )


@pytest.mark.parametrize("stack", TEAM_STACKS)
def test_no_teams_people_may_read_nodes_least_privilege_over_the_ledgers_quarantines(stack):
    """Nodes are cluster-scoped (no namespace holds them), and a team's rights are its
    namespace's: `jobs status` with a team's kubeconfig reads no quarantine and says so
    (jobs/platform_ledger.py). Granting `get nodes` would show every team every node's labels
    and annotations; this pins that it has not been granted by the way."""
    for team, role, who, grants in people(stack):
        for verb in ("get", "list"):
            assert not allowed(grants, verb, "", "nodes", None), (stack, team, role, who, verb)


def test_the_fixture_stacks_give_people_of_both_kinds_and_both_roles():
    # The sweep above is empty on the shipped stacks, whose teams name nobody: the fixtures must
    # hold every kind of grant the code maps, or the sweep proves nothing.
    found = {(stack, role) for stack in TEAM_STACKS for _, role, _, _ in people(stack)}
    assert found == {
        (AWS_TEAMS_STACK, "edit"),
        (AWS_TEAMS_STACK, "view"),
        (ONPREM_TEAMS_STACK, "edit"),
        (ONPREM_TEAMS_STACK, "view"),
    }
    # One principal with a role in two teams: one access entry, an association per role.
    plan, _ = of(AWS_TEAMS_STACK)
    entries = [
        r
        for r in plan.of_type("aws:eks/accessEntry:AccessEntry")
        if r.inputs["principalArn"] == AUDITORS
    ]
    assert [sorted(e.inputs["kubernetesGroups"]) for e in entries] == [
        ["gpu-platform:llm:view", "gpu-platform:vision:edit"]
    ]
    scopes = {
        r.inputs["policyArn"]: r.inputs["accessScope"]
        for r in plan.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
        if r.inputs["principalArn"] == AUDITORS
    }
    # EKS user guide, "Associate access policies with access entries": access scope
    # `namespace` with the namespaces it holds in.
    assert scopes == {
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy": {
            "type": "namespace",
            "namespaces": ["llm"],
        },
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy": {
            "type": "namespace",
            "namespaces": ["vision"],
        },
    }


def test_kubernetes_edit_alone_would_not_let_a_team_submit_a_jobset():
    # Why the platform binds its own jobs role: Kueue 0.19.2's chart labels its JobSet viewer
    # role (templates/rbac/jobset_viewer_role.yaml: get, list, watch) for aggregation to
    # `edit`, and not its JobSet editor role (jobset_editor_role.yaml); JobSet 0.12.0's chart
    # labels neither (templates/rbac/jobset_editor_role.yaml). The EKS access policies name no
    # custom resource.
    edit = Grant(Cluster(chart_objects()).role_rules("edit"), frozenset({"team"}))
    assert allowed([edit], "get", *JOBSETS, "team")
    assert not allowed([edit], "create", *JOBSETS, "team")


AWS_PLANS = [s for s in [*STACKS, *TEAM_STACKS] if of(s)[1].provider == "aws"]


@pytest.mark.parametrize("stack", AWS_PLANS)
def test_every_access_policy_association_is_replaced_old_one_first(stack):
    # EKS holds one association per principal and policy (terraform-provider-aws
    # internal/service/eks/access_policy_association.go: every argument ForceNew, the id joins
    # cluster, principal and policy): a new scope created before the old one's delete would be
    # disassociated with it, and the principal left without access.
    associations = of(stack)[0].of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert associations
    assert [r.name for r in associations if not r.delete_before_replace] == []


@pytest.mark.parametrize("stack", AWS_PLANS)
def test_eks_authentication_mode_admits_access_entries(stack):
    # EKS user guide, "Change authentication mode to use access entries": access entries need
    # API or API_AND_CONFIG_MAP.
    plan, _ = of(stack)
    (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["accessConfig"]["authenticationMode"] in ("API", "API_AND_CONFIG_MAP")


def applied_resources(cfg: PlatformConfig, team: str) -> set[tuple[str, str]]:
    """(API group, resource) of each object `python -m jobs submit` applies for the team's job
    on each of the stack's pools, at one node and at the pool's most, as rendered. The
    resource is the kind's plural as Kubernetes names it: `jobsets` and `computedomains` (the
    CRDs' names.plural), `resourceclaimtemplates` (resource.k8s.io)."""
    found = set()
    for pool in cfg.gpu_pools:
        for nodes in sorted({1, pool.max_nodes}):
            job = TeamJob(image=IMAGE, command=["python", "train.py"], nodes=nodes)
            try:
                spec = plan_job(cfg, replace(job, pool=pool.name, team=team))
            except SubmitError:
                continue
            for obj in render(spec):
                found.add((obj["apiVersion"].rpartition("/")[0], f"{obj['kind'].lower()}s"))
    return found


# The team stacks with GPU pools (the on-prem one has none: nothing of a job is applied there).
@pytest.mark.parametrize("stack", [AWS_TEAMS_STACK, *BESIDE_TEAM_STACKS])
def test_each_teams_editors_may_submit_everything_their_jobs_are_applied_with(stack):
    """A DRA pool's job is applied with a claim template of its own, a GB200 job of several
    nodes with a ComputeDomain (components/scheduling/job_claims.py); neither Kubernetes' `edit`
    (its aggregate-to-edit rules name only built-in groups, none of them resource.k8s.io) nor
    the DRA driver's chart (no aggregation labels) nor EKS's AmazonEKSEditPolicy grants them,
    so the platform's jobs role must, or `jobs submit` is forbidden at its second object."""
    _, cfg = of(stack)
    for team, role, who, grants in people(stack):
        resources = applied_resources(cfg, team)
        assert (*JOBSETS[:1], "jobsets") in resources
        for group, resource in resources:
            for verb in SUBMIT_VERBS:
                may = role == "edit" or verb in ("get", "list")
                assert allowed(grants, verb, group, resource, team) == may, (
                    f"{stack}: {who} ({role} of {team}) may{'' if may else ' not'} {verb} "
                    f"{group}/{resource}"
                )


def test_the_fixtures_apply_a_claim_template_and_a_compute_domain_beside_the_jobset():
    """The class above reaches both kinds: the test is not empty where it matters."""
    seen = {r for s in BESIDE_TEAM_STACKS for r in applied_resources(of(s)[1], "llm")}
    assert {
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.nvidia.com", "computedomains"),
    } <= seen
