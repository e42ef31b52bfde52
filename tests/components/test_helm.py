"""Pinned chart releases (components/helm.py): every release's values are checked against its
chart by test_helm_values.py."""

from __future__ import annotations

import pulumi
import pytest

from components.context import StackContext
from components.helm import pinned_release
from model.versions import CHARTS
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import STACKS, planned

RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_is_a_pinned_chart_under_its_own_name(stack):
    """Named after the chart, so its objects keep upstream names; an OCI chart by its full
    reference without repository options (Helm has no `repo add` for OCI registries)."""
    by_name = {c.name: c for c in CHARTS.values()}
    releases = planned(stack).of_type(RELEASE)
    assert releases
    for release in releases:
        inputs = release.inputs
        chart = by_name[inputs["name"]]
        assert inputs["version"] == chart.version, release.name
        if chart.repository.startswith("oci://"):
            assert inputs["chart"] == f"{chart.repository}/{chart.name}"
            assert "repositoryOpts" not in inputs
        else:
            assert inputs["chart"] == chart.name
            assert inputs["repositoryOpts"]["repo"] == chart.repository


def test_an_oci_chart_is_named_by_its_full_reference_at_its_pin():
    # Helm docs, "Use OCI-based registries": `helm install <name> oci://<registry>/<chart>`,
    # with no `helm repo add`. kueue 0.19.2 is PINS.md's pin, at registry.k8s.io/kueue/charts.
    def main() -> None:
        pinned_release(
            "kueue",
            "kueue",
            "kueue-system",
            {},
            pulumi.ResourceOptions(),
            context=StackContext("dev"),
        )

    (release,) = build_plan(run_program("dev", program=main)).of_type(RELEASE)
    assert release.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release.inputs["version"] == "0.19.2"
    assert release.inputs["name"] == "kueue"
    assert "repositoryOpts" not in release.inputs


def test_a_stacks_override_is_the_releases_version_from_the_pinned_repository():
    """`charts: {kueue: {version: 0.19.3}}` (model/config/charts.py): the stack's version, the
    chart and repository of the pin."""
    context = StackContext("dev", chart_overrides={"kueue": "0.19.3"})

    def main() -> None:
        pinned_release(
            "kueue", "kueue", "kueue-system", {}, pulumi.ResourceOptions(), context=context
        )

    (release,) = build_plan(run_program("dev", program=main)).of_type(RELEASE)
    assert release.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release.inputs["version"] == "0.19.3"
