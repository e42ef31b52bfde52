"""The team access builders (components/control/team_access.py): one access entry per principal
whatever the teams naming it, associations scoped to namespaces, and the RoleBindings each
provider needs. The RBAC model over whole stacks: tests/controllers/test_team_access_rules.py."""

from __future__ import annotations

from components.control.team_access import (
    jobs_role_rules,
    jobs_roles,
    principals,
    role_bindings,
)
from model.config.scheduling import TeamSettings

A = "arn:aws:iam::123456789012:role/a"
B = "arn:aws:iam::123456789012:role/b"


def test_a_principal_of_two_teams_gets_one_entry_and_one_association_per_role():
    teams = [
        TeamSettings(name="llm", access=[{"principal_arns": [A, B]}]),
        TeamSettings(name="vision", access=[{"role": "view", "principal_arns": [A]}]),
        TeamSettings(name="eval", access=[{"principal_arns": [A]}]),
    ]
    (a, b) = principals(teams)
    assert a.arn == A
    assert a.groups == (
        "gpu-platform:eval:edit",
        "gpu-platform:llm:edit",
        "gpu-platform:vision:view",
    )
    assert a.namespaces == {"edit": ("eval", "llm"), "view": ("vision",)}
    assert (b.groups, b.namespaces) == (("gpu-platform:llm:edit",), {"edit": ("llm",)})


def test_bindings_are_namespaced_and_name_the_builtin_role_only_off_aws():
    teams = [TeamSettings(name="llm", access=[{"groups": ["oidc:llm"]}])]
    on_prem = role_bindings(teams, on_aws=False)
    assert [(b["metadata"]["namespace"], b["roleRef"]["name"]) for b in on_prem] == [
        ("llm", "gpu-platform-team-edit"),
        ("llm", "edit"),
    ]
    assert all(b["kind"] == "RoleBinding" for b in on_prem)
    assert on_prem[0]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oidc:llm"}
    ]
    aws = role_bindings([TeamSettings(name="llm", access=[{"principal_arns": [A]}])], on_aws=True)
    # On AWS the access policy grants what `edit` would; the binding names the access entry's
    # group.
    assert [(b["roleRef"]["name"], b["subjects"][0]["name"]) for b in aws] == [
        ("gpu-platform-team-edit", "gpu-platform:llm:edit")
    ]


def test_the_jobs_roles_grant_jobsets_and_read_kueue():
    assert jobs_role_rules("edit")[0] == {
        "apiGroups": ["jobset.x-k8s.io"],
        "resources": ["jobsets"],
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
    }
    assert jobs_role_rules("view")[0]["verbs"] == ["get", "list", "watch"]
    assert jobs_roles([TeamSettings(name="llm")]) == []
