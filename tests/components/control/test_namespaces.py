"""The namespaces jobs run in (components/control/namespaces.py): Pod Security `restricted`
unless a team says why `baseline`, and the team settings the config refuses."""

from __future__ import annotations

import pytest

from tests.conftest import STACKS, planned
from tests.helpers.team_stacks import ONPREM_TEAMS_STACK, STACKS_AND_TEAMS, config_of, plan_of


def namespace_labels(stack: str, name: str) -> dict[str, str]:
    (ns,) = [
        r.inputs
        for r in planned(stack).of_type("kubernetes:core/v1:Namespace")
        if r.inputs["metadata"]["name"] == name
    ]
    return ns["metadata"]["labels"]


@pytest.mark.parametrize("stack", STACKS)
def test_training_namespace_enforces_restricted_and_warns_and_audits_restricted(stack):
    # Issue 25 item 12: a privileged team namespace lets anyone who may create a pod there be
    # root on a GPU node; the job builder's pods keep to restricted (Pod Security Standards),
    # so the namespace enforces it (tests/controllers/test_pod_security_rules.py runs the model).
    labels = namespace_labels(stack, "training")
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"


def test_a_team_enforces_baseline_only_with_its_reason_kept_on_the_namespace():
    from components.control.namespaces import team_pod_security
    from model.config.scheduling import TeamSettings

    reason = "a vendor's evaluation image runs as root"
    labels, annotations = team_pod_security(
        TeamSettings(name="eval", pod_security="baseline", pod_security_reason=reason)
    )
    assert labels == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    assert annotations == {"gpu-platform/pod-security-reason": reason}
    assert team_pod_security(TeamSettings(name="vision")) == (
        {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "restricted",
        },
        {},
    )


@pytest.mark.parametrize(
    ("team", "problem"),
    [
        ({"pod_security": "baseline"}, "pod_security baseline needs a reason"),
        ({"pod_security_reason": "why"}, "only with pod_security baseline"),
        ({"pod_security": "privileged"}, "restricted"),
        # The old setting is gone with the hostPath it stood for.
        ({"nvme_cache": False}, "nvme_cache"),
    ],
)
def test_team_pod_security_settings_are_refused_with_what_is_valid(team, problem):
    from pydantic import ValidationError

    from model.config.scheduling import TeamSettings

    with pytest.raises((ValidationError, ValueError), match=problem):
        TeamSettings(name="eval", **team)


@pytest.mark.parametrize("stack", STACKS_AND_TEAMS)
def test_destroy_deletes_no_namespace_the_platform_did_not_create_nor_a_teams(stack):
    # Issue 38: an on-prem destroy deleted `training` and every team namespace with the teams'
    # jobs, claims and secrets in them. A namespace the cluster had (existing.namespaces) is
    # only patched: a Namespace resource would be refused at `up` (AlreadyExists, pulumi-
    # kubernetes 4.29.0 on) and deleted by a destroy. A namespace the platform made for a team
    # is retained: `pulumi destroy` forgets it and leaves what it holds.
    plan, cfg = plan_of(stack), config_of(stack)
    adopted = set(cfg.existing.namespaces) if cfg.existing is not None else set()
    teams = {t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)}
    created = {
        r.inputs["metadata"]["name"]: r for r in plan.of_type("kubernetes:core/v1:Namespace")
    }
    patched = {
        r.inputs["metadata"]["name"] for r in plan.of_type("kubernetes:core/v1:NamespacePatch")
    }
    assert patched == adopted
    assert not adopted & set(created), "a namespace the cluster has is declared to be created"
    for name, resource in created.items():
        assert resource.retain_on_delete == (name in teams), name


def test_the_fixture_cluster_has_a_team_namespace_and_the_training_one():
    # The sweep above must meet adopted namespaces of both kinds.
    assert set(config_of(ONPREM_TEAMS_STACK).existing.namespaces) == {"training", "vision"}


def test_the_plan_says_how_to_find_namespaces_an_existing_cluster_already_has():
    # The plan cannot read the cluster: it names the namespaces `up` creates there, with the
    # command that shows which exist, leaving out those already listed (training, vision).
    check = plan_of(ONPREM_TEAMS_STACK).outputs["namespace_check"]
    assert check["creates"] == "gpu-platform, gpu-platform-selftest, llm, monitoring"
    assert check["check"] == (
        "kubectl get namespace gpu-platform gpu-platform-selftest llm monitoring --ignore-not-found"
    )
    assert "existing.namespaces" in check["if_found"]
    # On AWS the platform made the cluster: nothing there predates it.
    assert "namespace_check" not in planned("staging").outputs
