"""Who may use a team's namespace, and which namespaces an existing cluster already has.

A team's people get `edit` or `view` in the team's namespace and nowhere else: on AWS, IAM roles
(an SSO permission set's role is one) through EKS access entries with a namespace-scoped access
policy; on an existing cluster, the groups its authenticator (the organisation's OIDC or SSO)
puts in their tokens, through RoleBindings. components/control/team_access.py declares both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from model.config.base import FieldProblem, PrincipalArn, Settings, shaped

if TYPE_CHECKING:
    from model.config import PlatformConfig

# Kubernetes docs, "Using RBAC Authorization" (Referring to subjects): the `system:` prefix is
# reserved for Kubernetes system use.
GroupName = Annotated[
    str,
    shaped(
        r"(?!system:)\S(.*\S)?",
        "a group name as the cluster's authenticator sends it: not blank, no white space at "
        "either end, not starting with system: (reserved for Kubernetes)",
    ),
]


class TeamAccessSettings(Settings):
    """One grant of a team's namespace: who, and whether they may change things (`edit`) or
    only read them (`view`)."""

    role: Literal["edit", "view"] = Field(
        "edit",
        description="`edit`: create, change and delete jobs (JobSets, Jobs), pods and the "
        "namespace's ConfigMaps, Secrets and claims, and read the team's Kueue workloads "
        "(Kubernetes' user-facing `edit` role; on AWS the EKS access policy "
        "AmazonEKSEditPolicy); `view`: read them (`view`, AmazonEKSViewPolicy). Either adds "
        "the rights neither role carries, over JobSets, the claim templates and ComputeDomains "
        "jobs on DRA and NVLink-domain pools are applied with, and Kueue's workloads "
        "(ClusterRoles gpu-platform-team-edit and gpu-platform-team-view, bound in the "
        "namespace only).",
    )
    principal_arns: list[PrincipalArn] = Field(
        default_factory=list,
        description="AWS: IAM roles or users (an IAM Identity Center permission set's role, "
        "arn:aws:iam::<account>:role/aws-reserved/sso.amazonaws.com/<region>/"
        "AWSReservedSSO_<set>_<id>, is one) given the role in the namespace through EKS "
        "access entries.",
    )
    groups: list[GroupName] = Field(
        default_factory=list,
        description="Existing clusters: groups of the cluster's authenticator (the "
        "organisation's OIDC or SSO) given the role in the namespace by RoleBindings.",
    )


def team_group(team: str, role: str) -> str:
    """The Kubernetes group an EKS access entry puts a team's principals in, which the team's
    RoleBinding names: the access policies cover no custom resource (JobSets, Kueue)."""
    return f"gpu-platform:{team}:{role}"


def check_team_access(cfg: PlatformConfig) -> None:
    """Who may reach a team's namespace names principals the provider knows how to map, and
    each principal once per role: EKS holds one access entry per principal, and a cluster
    admin already has the whole cluster."""
    admins = set(cfg.cluster.admin_principal_arns) if cfg.provider == "aws" else set()
    for i, team in enumerate(cfg.scheduling.teams):
        for j, grant in enumerate(team.access):
            path = f"scheduling.teams[{i}].access[{j}]"
            if not grant.principal_arns and not grant.groups:
                raise FieldProblem(
                    path,
                    "names nobody; list principal_arns (AWS) or groups (existing clusters)",
                )
            if cfg.provider == "aws" and grant.groups:
                raise FieldProblem(
                    f"{path}.groups",
                    "only for existing clusters: on AWS people reach the cluster as IAM "
                    "principals; list their roles (an SSO permission set's role too) in "
                    "principal_arns",
                )
            if cfg.provider != "aws" and grant.principal_arns:
                raise FieldProblem(
                    f"{path}.principal_arns",
                    "only on AWS (EKS access entries); an existing cluster's users are named "
                    "by the groups its authenticator sends: list them in groups",
                )
            for k, arn in enumerate(grant.principal_arns):
                if arn in admins:
                    raise FieldProblem(
                        f"{path}.principal_arns[{k}]",
                        f"{arn} is in cluster.admin_principal_arns, which already grants it "
                        "the whole cluster (EKS holds one access entry per principal); "
                        "remove it here",
                    )
        for role in ("edit", "view"):
            seen: set[str] = set()
            for j, grant in enumerate(team.access):
                if grant.role != role:
                    continue
                for key in ("principal_arns", "groups"):
                    for k, who in enumerate(getattr(grant, key)):
                        if who in seen:
                            raise FieldProblem(
                                f"scheduling.teams[{i}].access[{j}].{key}[{k}]",
                                f"{who} is given {role} twice in team {team.name}; list it once",
                            )
                        seen.add(who)


def platform_namespaces(cfg: PlatformConfig) -> list[str]:
    """The namespaces components/control/namespaces.py declares: each purpose's (the monitoring
    one only where the platform installs kube-prometheus-stack) and each team's."""
    found = {
        ns
        for purpose, ns in cfg.namespaces.model_dump().items()
        if purpose != "monitoring" or cfg.installs("kube_prometheus_stack")
    }
    return sorted(found | {t.name for t in cfg.scheduling.teams})


def check_existing_namespaces(cfg: PlatformConfig) -> None:
    """existing.namespaces names namespaces the platform would otherwise create: only those
    can collide at `up`."""
    if cfg.existing is None:
        return
    valid = platform_namespaces(cfg)
    for i, ns in enumerate(cfg.existing.namespaces):
        if ns in cfg.existing.namespaces[:i]:
            raise FieldProblem(f"existing.namespaces[{i}]", f"{ns!r} is listed twice")
        if ns not in valid:
            raise FieldProblem(
                f"existing.namespaces[{i}]",
                f"{ns!r} is not a namespace the platform declares; valid: {', '.join(valid)}",
            )
