"""Kubernetes 1.36: its pinned add-on builds and autoscaler image, and a stack planned on it."""

from __future__ import annotations

from components.control_plane import addons_for
from infra.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS
from tests.conftest import find, planned, validate_kubernetes
from tests.crds import is_custom_resource


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
