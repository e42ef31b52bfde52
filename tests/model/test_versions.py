"""Kubernetes 1.36: its pinned add-on builds and autoscaler image, and a stack planned on it."""

from __future__ import annotations

import pytest

from components.control.cluster import addons_for
from model.config import ConfigError, parse_config
from model.config.regions import REGION_ZONES
from model.versions import (
    CLUSTER_AUTOSCALER_IMAGE_TAGS,
    EKS_IMAGE_ACCOUNTS,
    MANAGED_ADDONS,
    eks_image_registry,
)
from tests.conftest import AWS_STACKS, find, planned, stack_config, validate_kubernetes
from tests.helpers.crds import is_custom_resource


def test_1_36_addon_builds_are_the_ones_aws_lists():
    pinned = {
        addon.name: build for addon, build in addons_for("1.36", False) + addons_for("1.36", True)
    }
    # EKS user guide, add-on version tables for 1.36 (shared/PINS.md, checked 2026-11-30).
    assert pinned["kube-proxy"] == "v1.36.0-eksbuild.14"
    assert pinned["coredns"] == "v1.14.3-eksbuild.3"
    assert pinned["vpc-cni"] == "v1.22.4-eksbuild.3"


def test_1_36_autoscaler_image():
    # kubernetes/autoscaler releases: cluster-autoscaler v1.36.1 serves Kubernetes 1.36.
    assert CLUSTER_AUTOSCALER_IMAGE_TAGS["1.36"] == "v1.36.1"


def test_staging_plans_on_1_36_and_its_objects_fit_the_1_36_schema():
    plan = planned("staging")
    assert find(plan, "aws:eks/cluster:Cluster", "staging-eks").inputs["version"] == "1.36"
    kube_proxy = find(plan, "aws:eks/addon:Addon", "staging-kube-proxy")
    assert kube_proxy.inputs["addonVersion"] == "v1.36.0-eksbuild.14"
    for obj in plan.kubernetes_objects():
        if not is_custom_resource(obj):
            validate_kubernetes(obj, "1.36")


# --------------------------------------------------------------------------- confirmed builds

# The pin no listing could confirm (issue 16: not in any describe-addon-versions output or AWS
# table its reviewers could find).
UNCONFIRMED = ("eks-node-monitoring-agent", "v1.7.1-eksbuild.1")


def test_every_pinned_addon_build_says_where_it_was_confirmed_or_that_it_was_not():
    for addon in MANAGED_ADDONS:
        for minor, build in addon.versions.items():
            where = addon.confirmed.get(build)
            if (addon.name, build) == UNCONFIRMED:
                assert where is None, minor
            else:
                assert where, f"{addon.name} {build} on {minor}: say where it was confirmed"
    # The 1.36 builds AWS's add-on tables list (shared/PINS.md) say so.
    (proxy,) = [a for a in MANAGED_ADDONS if a.name == "kube-proxy"]
    assert "PINS.md" in proxy.confirmed["v1.36.0-eksbuild.14"]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_the_plans_version_report_fails_every_unconfirmed_build_it_deploys(stack):
    plan = planned(stack)
    minor = stack_config(stack).cluster.kubernetes_version
    report = plan.outputs["addon_builds"]
    assert set(report) == {a.name for a in MANAGED_ADDONS}
    for addon in MANAGED_ADDONS:
        entry, build = report[addon.name], addon.versions[minor]
        assert entry["build"] == build
        if build in addon.confirmed:
            assert entry["status"] == f"confirmed: {addon.confirmed[build]}"
            continue
        assert entry["status"].startswith("FAIL: unconfirmed"), entry
        # Loud: pulumi up and the plan print it, with the command that settles it.
        (warning,) = [w for w in plan.warnings if f"{addon.name} {build}" in w]
        assert "UNCONFIRMED" in warning
        assert (
            f"aws eks describe-addon-versions --addon-name {addon.name} "
            f"--kubernetes-version {minor}" in warning
        )
    assert report[UNCONFIRMED[0]]["status"].startswith("FAIL"), stack


def test_an_existing_cluster_reports_no_addon_builds():
    assert "addon_builds" not in planned("onprem").outputs
    assert not [w for w in planned("onprem").warnings if "UNCONFIRMED" in w]


def test_every_region_the_config_knows_has_an_eks_image_registry():
    """The EKS user guide's registry table ("View Amazon container image registries for Amazon
    EKS add-ons") covers every region of model/config/regions.py, so no stack of a known region
    pulls its regional images from another region's registry."""
    assert sorted(EKS_IMAGE_ACCOUNTS) == sorted(REGION_ZONES)
    # Spot checks against the guide's table.
    assert eks_image_registry("eu-west-1") == "602401143452.dkr.ecr.eu-west-1.amazonaws.com"
    assert eks_image_registry("il-central-1") == "066635153087.dkr.ecr.il-central-1.amazonaws.com"


def test_a_region_without_a_recorded_registry_is_refused(monkeypatch):
    monkeypatch.setattr(
        "model.config.network.EKS_IMAGE_ACCOUNTS",
        {r: a for r, a in EKS_IMAGE_ACCOUNTS.items() if r != "eu-west-1"},
    )
    raw = {
        "aws": {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]},
        "cluster": {"admin_principal_arns": ["arn:aws:iam::210987654321:role/platform-admins"]},
    }
    with pytest.raises(ConfigError) as error:
        parse_config(raw, "stacks/Pulumi.t.yaml")
    said = str(error.value)
    assert "aws.region" in said and "'eu-west-1' is not an AWS region this project knows" in said
    assert "EKS_IMAGE_ACCOUNTS" in said
