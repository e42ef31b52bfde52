"""scheduling.teams[].access and existing.namespaces refused with the key path, the bad value
and what is valid, nothing declared (STYLE.md §2)."""

from __future__ import annotations

import pytest

from model.config.team_access import team_group
from tests.helpers.bad_stacks import ADMIN, EXISTING, NS, assert_refused, aws, case, existing

ROLE = "arn:aws:iam::123456789012:role/llm-engineers"
T = f"{NS}:scheduling.teams[0]"


def team(*access) -> dict:
    return {"teams": [{"name": "llm", "access": list(access)}]}


def adopting(namespaces: list[str]) -> dict:
    return {**EXISTING, f"{NS}:existing": {**EXISTING[f"{NS}:existing"], "namespaces": namespaces}}


CASES = [
    case(aws(scheduling=team({"groups": ["oidc:llm"]})), f"{T}.access[0].groups",
         "only for existing clusters", "principal_arns", id="groups-on-aws"),
    case(existing(scheduling=team({"principal_arns": [ROLE]})), f"{T}.access[0].principal_arns",
         "only on AWS", "groups", id="principal-on-existing"),
    case(aws(scheduling=team({"principal_arns": [ADMIN]})), f"{T}.access[0].principal_arns[0]",
         ADMIN, "cluster.admin_principal_arns", id="admin-again"),
    case(aws(scheduling=team({"role": "edit"})), f"{T}.access[0]", "names nobody",
         "principal_arns", id="nobody"),
    case(aws(scheduling=team({"principal_arns": [ROLE]}, {"principal_arns": [ROLE]})),
         f"{T}.access[1].principal_arns[0]", ROLE, "list it once", id="twice"),
    case(existing(scheduling=team({"groups": ["system:masters"]})), f"{T}.access[0].groups[0]",
         "system:masters", "not starting with system:", id="reserved-group"),
    case(aws(scheduling=team({"role": "admin", "principal_arns": [ROLE]})),
         f"{T}.access[0].role", "admin", "edit", id="role"),
    case(adopting(["kube-system"]),
         f"{NS}:existing.namespaces[0]", "kube-system", "valid: gpu-platform, "
         "gpu-platform-selftest, monitoring, training", id="namespace-not-the-platforms"),
    case(adopting(["training", "training"]),
         f"{NS}:existing.namespaces[1]", "training", "listed twice", id="namespace-twice"),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "path", "value", "valid"), CASES)
def test_bad_team_access_and_existing_namespaces_are_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_a_teams_kubernetes_group_is_outside_the_prefixes_eks_reserves():
    # EKS user guide, "Create access entries": a Kubernetes group name cannot start with
    # system:, eks:, aws:, amazon: or iam:.
    assert team_group("llm", "edit") == "gpu-platform:llm:edit"
