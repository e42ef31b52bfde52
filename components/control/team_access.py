"""Each team's people, in the team's namespace and nowhere else (scheduling.teams[].access).

On AWS a principal gets an EKS access entry and, per role, an access policy association scoped to
its teams' namespaces (EKS user guide, "Associate access policies with access entries": access
scope `namespace`). On an existing cluster the team's groups are bound to Kubernetes' user-facing
`edit` or `view` ClusterRole by a RoleBinding in the namespace, which grants only there
(Kubernetes docs, "Using RBAC Authorization": a RoleBinding to a ClusterRole).

Neither covers JobSets: the EKS access policies name only built-in API groups (EKS user guide,
"Review access policy permissions"), and `edit` aggregates only ClusterRoles labelled
`rbac.authorization.k8s.io/aggregate-to-edit`, which Kueue 0.19.2's chart gives its JobSet
*viewer* role and not its editor role; JobSet 0.12.0's chart labels neither. So each team's
principals are also in a Kubernetes group (the access entry's `kubernetesGroups` on AWS, the
team's own groups elsewhere) that a RoleBinding in the namespace binds to the platform's
ClusterRole for jobs: JobSets, and Kueue's workloads and LocalQueues to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.base import PLATFORM_LABELS, PlatformComponent
from components.kubernetes_object import KubernetesObject
from model.config.scheduling import TeamSettings
from model.config.team_access import team_group

RBAC = "rbac.authorization.k8s.io"
# EKS user guide, "Review access policy permissions": AmazonEKSEditPolicy and AmazonEKSViewPolicy.
ACCESS_POLICIES = {
    "edit": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy",
    "view": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
}
READ = ["get", "list", "watch"]
# What `python -m jobs` does with a job: `kubectl apply` (get, create, patch), resubmit and
# cancel (delete), status (get).
WRITE = ["create", "delete", "get", "list", "patch", "update", "watch"]


def jobs_role_name(role: str) -> str:
    return f"gpu-platform-team-{role}"


def jobs_role_rules(role: str, beside: Sequence[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """The rights over the platform's job kinds that `edit` and `view` lack: JobSets (the
    kind every job the platform renders is), what a job is applied with beside its JobSet on
    this stack's pools (`beside`: API group and resource; a DRA pool's claim templates, an
    NVLink domain's ComputeDomains), and the Kueue objects that say why one waits."""
    jobs = WRITE if role == "edit" else READ
    groups: dict[str, list[str]] = {}
    for group, resource in beside:
        groups.setdefault(group, []).append(resource)
    return [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": jobs},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
        *({"apiGroups": [g], "resources": sorted(r), "verbs": jobs} for g, r in groups.items()),
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"], "verbs": READ},
    ]


def jobs_roles(
    teams: Sequence[TeamSettings], beside: Sequence[tuple[str, str]] = ()
) -> list[dict[str, Any]]:
    """One ClusterRole per role some team grants; a ClusterRole grants nothing until a binding
    names it."""
    roles = sorted({grant.role for team in teams for grant in team.access})
    return [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": jobs_role_name(role), "labels": dict(PLATFORM_LABELS)},
            "rules": jobs_role_rules(role, beside),
        }
        for role in roles
    ]


def subjects(team: TeamSettings, role: str, on_aws: bool) -> list[str]:
    """The groups a team's role is bound to: the access entries' group on AWS, the
    authenticator's groups elsewhere."""
    if on_aws:
        grants = [g for g in team.access if g.role == role and g.principal_arns]
        return [team_group(team.name, role)] if grants else []
    return sorted({group for g in team.access if g.role == role for group in g.groups})


def binding_name(role: str) -> str:
    """A RoleBinding's name in a team's namespace: the platform's prefix and what it binds."""
    return role if role.startswith("gpu-platform-") else f"gpu-platform-{role}"


def role_bindings(teams: Sequence[TeamSettings], on_aws: bool) -> list[dict[str, Any]]:
    """Per team and role, RoleBindings in the team's namespace: to the platform's jobs role,
    and on an existing cluster to Kubernetes' `edit` or `view` (on AWS the access policy
    grants those)."""
    found = []
    for team in teams:
        for role in ("edit", "view"):
            groups = subjects(team, role, on_aws)
            if not groups:
                continue
            targets = [jobs_role_name(role)] + ([] if on_aws else [role])
            for target in targets:
                found.append(
                    {
                        "apiVersion": f"{RBAC}/v1",
                        "kind": "RoleBinding",
                        "metadata": {
                            "name": binding_name(target),
                            "namespace": team.name,
                            "labels": dict(PLATFORM_LABELS),
                        },
                        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": target},
                        "subjects": [
                            {"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups
                        ],
                    }
                )
    return found


@dataclass(frozen=True)
class Principal:
    arn: str
    # The Kubernetes groups its access entry puts it in.
    groups: tuple[str, ...]
    # Per role, the namespaces its access policy association is scoped to.
    namespaces: dict[str, tuple[str, ...]]


def principals(teams: Sequence[TeamSettings]) -> list[Principal]:
    """Every principal a team names, once: EKS holds one access entry per principal and one
    association per principal and policy, so a principal of several teams has one entry with
    each team's group and one association per role over all its namespaces."""
    groups: dict[str, set[str]] = {}
    scopes: dict[str, dict[str, set[str]]] = {}
    for team in teams:
        for grant in team.access:
            for arn in grant.principal_arns:
                groups.setdefault(arn, set()).add(team_group(team.name, grant.role))
                scopes.setdefault(arn, {}).setdefault(grant.role, set()).add(team.name)
    return [
        Principal(
            arn,
            tuple(sorted(groups[arn])),
            {role: tuple(sorted(ns)) for role, ns in sorted(scopes[arn].items())},
        )
        for arn in sorted(groups)
    ]


@dataclass(frozen=True)
class TeamAccessArgs:
    teams: Sequence[TeamSettings]
    on_aws: bool
    # The EKS cluster's name, for the access entries (AWS only).
    cluster_name: pulumi.Input[str] | None = None
    # The namespaces the bindings go in.
    after: Sequence[pulumi.Resource] = ()
    # What a team's job may be applied with beside its JobSet: (API group, resource).
    beside: Sequence[tuple[str, str]] = ()


class TeamAccess(PlatformComponent):
    """The teams' access entries (AWS), their RoleBindings and the jobs ClusterRoles."""

    PLANE = "control"

    def __init__(self, name: str, args: TeamAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        for role in jobs_roles(args.teams, args.beside):
            KubernetesObject(f"{name}-{role['metadata']['name']}", role, self.child())
        for binding in role_bindings(args.teams, args.on_aws):
            meta = binding["metadata"]
            KubernetesObject(
                f"{name}-{meta['namespace']}-{meta['name']}",
                binding,
                self.child(depends_on=list(args.after)),
            )
        for principal in principals(args.teams) if args.on_aws else []:
            # Named by the principal, not its place in the list: EKS holds one entry per
            # principal, so a renamed resource would be created while the old one still holds it.
            account, path = principal.arn.split(":", 5)[4:]
            kind, last = path.split("/", 1)[0], path.rsplit("/", 1)[-1]
            key = f"{name}-{account}-{kind}-{last}"
            entry = aws.eks.AccessEntry(
                key,
                aws.eks.AccessEntryArgs(
                    cluster_name=args.cluster_name,
                    principal_arn=principal.arn,
                    type="STANDARD",
                    kubernetes_groups=list(principal.groups),
                ),
                self.child(),
            )
            for role, namespaces in principal.namespaces.items():
                aws.eks.AccessPolicyAssociation(
                    f"{key}-{role}",
                    aws.eks.AccessPolicyAssociationArgs(
                        cluster_name=args.cluster_name,
                        principal_arn=principal.arn,
                        policy_arn=ACCESS_POLICIES[role],
                        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(
                            type="namespace", namespaces=list(namespaces)
                        ),
                    ),
                    # EKS holds one association per principal and policy: a replacement
                    # (a changed scope) created first would be undone by the old one's delete.
                    self.child(depends_on=[entry], delete_before_replace=True),
                )
        self.register_outputs({})
