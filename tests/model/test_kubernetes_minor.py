"""On-prem Kubernetes minors older than EKS's window (issue 26): an existing cluster plans with a
warning naming what is untested, down to the oldest minor every pinned chart it installs admits
(each chart's Chart.yaml `kubeVersion`); below that floor the config refuses, naming the chart.
AWS keeps to the minors EKS serves."""

from __future__ import annotations

import tarfile

import pytest
import yaml

from model.config import ConfigError
from model.config.charts import installed_charts
from model.versions import CHART_KUBE_VERSIONS, CHARTS, chart_floor
from plan.cli import plan_stack
from tests.conftest import (
    SHARED_HELM,
    STACKS,
    make_project,
    planned,
    stack_config,
    stack_file_config,
)

RELEASE = "kubernetes:helm.sh/v3:Release"
MINOR_KEY = "gpu-platform:cluster.kubernetes_version"


def packaged_kube_version(chart_key: str) -> str | None:
    """`kubeVersion` of the chart's own Chart.yaml in ../shared/helm at the pin."""
    chart = CHARTS[chart_key]
    with tarfile.open(SHARED_HELM / f"{chart.name}-{chart.version}.tgz") as archive:
        meta = yaml.safe_load(archive.extractfile(f"{chart.name}/Chart.yaml"))
    return meta.get("kubeVersion")


@pytest.mark.parametrize("chart_key", sorted(CHARTS))
def test_the_kube_version_table_is_each_pinned_charts_own(chart_key):
    assert CHART_KUBE_VERSIONS.get(chart_key) == packaged_kube_version(chart_key)


def test_the_floor_of_each_chart_is_its_chart_yaml_literal():
    """The packaged Chart.yaml files at the pins: gpu-operator v26.7.0 `>= 1.16.0-0`,
    kube-prometheus-stack 88.5.3 `>=1.25.0-0`, keda 2.20.2 `>=v1.23.0-0`, network-operator
    26.4.1 `>= 1.21.0-0`, aws-fsx-csi-driver 1.17.0 `>=1.20.0-0`, dra-driver-nvidia-gpu 0.4.1
    `>=1.32.0-0` (shared/PINS.md, "Chart and image"); kueue 0.19.2, rook-ceph v1.20.6,
    ceph-csi-drivers 1.0.4 and prometheus-pushgateway 3.8.0 state none."""
    assert {k: chart_floor(k) for k in CHARTS if chart_floor(k)} == {
        "gpu-operator": "1.16",
        "kube-prometheus-stack": "1.25",
        "keda": "1.23",
        "network-operator": "1.21",
        "aws-fsx-csi-driver": "1.20",
        "dra-driver-nvidia-gpu": "1.32",
    }
    for chart in ("kueue", "rook-ceph", "ceph-csi-drivers", "prometheus-pushgateway"):
        assert chart_floor(chart) is None


@pytest.mark.parametrize("stack", STACKS)
def test_the_charts_the_config_reads_are_the_releases_the_stack_declares(stack):
    """The config's list of installed charts is the plan's: a release it missed would not
    constrain the minor, and a stack could not override its version (`charts`)."""
    declared = {r.inputs["chart"].rsplit("/", 1)[-1] for r in planned(stack).of_type(RELEASE)}
    assert set(installed_charts(stack_config(stack))) == declared


def test_the_pushgateway_constrains_the_minor_without_a_self_test_schedule(tmp_path):
    """Every stack declares the Pushgateway (components/observability/pushgateway.py), not only
    one whose self-test runs on a schedule: the table lists it and the plan declares it."""
    config = stack_file_config("onprem")
    config["gpu-platform:selftest"]["schedule"] = {"enabled": False}
    root = make_project(tmp_path, {"onprem": config, "burst": stack_file_config("burst")})
    declared = {
        r.inputs["chart"].rsplit("/", 1)[-1] for r in plan_stack("onprem", root).of_type(RELEASE)
    }
    charts = installed_charts(stack_config("onprem", root))
    assert "prometheus-pushgateway" in charts
    assert set(charts) == declared


def onprem(tmp_path, minor: str, addons: dict | None = None):
    config = stack_file_config("onprem")
    config["gpu-platform:cluster"]["kubernetes_version"] = minor
    if addons:
        config["gpu-platform:existing"]["addons"] = addons
    tmp_path.mkdir(exist_ok=True)
    root = make_project(tmp_path, {"onprem": config, "burst": stack_file_config("burst")})
    return plan_stack("onprem", root)


def test_a_minor_below_the_eks_window_plans_with_a_warning_naming_what_is_untested(tmp_path):
    plan = onprem(tmp_path, "1.30")
    (warning,) = [w for w in plan.warnings if w.startswith(f"{MINOR_KEY}: 1.30 ")]
    assert "older than the minors EKS serves and the platform is tested on (1.33 to 1.36)" in (
        warning
    )
    assert "kube-prometheus-stack 88.5.3 (>=1.25.0-0)" in warning
    assert "gpu-operator v26.7.0 (>= 1.16.0-0)" in warning
    # Charts that state no kubeVersion are untested too, and named.
    assert "kueue 0.19.2" in warning
    assert "rook-ceph v1.20.6" in warning
    assert plan.outputs["kubernetes_version"] == "1.30"


def test_a_minor_below_a_charts_floor_is_refused_naming_the_chart(tmp_path):
    with pytest.raises(ConfigError) as error:
        onprem(tmp_path, "1.24")
    (problem,) = error.value.problems
    assert problem.startswith(f"{MINOR_KEY}: '1.24' is older than the pinned charts")
    assert "kube-prometheus-stack 88.5.3 needs kubeVersion '>=1.25.0-0' (its Chart.yaml)" in (
        problem
    )
    assert "The oldest minor they all admit is 1.25" in problem


def test_a_chart_the_cluster_runs_no_longer_sets_the_floor(tmp_path):
    """With the cluster's own kube-prometheus-stack, KEDA 2.20.2 (>=v1.23.0-0) sets it."""
    existing = {"kube_prometheus_stack": "existing"}
    plan = onprem(tmp_path / "a", "1.24", existing)
    assert [w for w in plan.warnings if w.startswith(f"{MINOR_KEY}: 1.24 ")]
    with pytest.raises(ConfigError) as error:
        onprem(tmp_path / "b", "1.22", existing)
    (problem,) = error.value.problems
    assert "keda 2.20.2 needs kubeVersion '>=v1.23.0-0'" in problem
    assert "kube-prometheus-stack" not in problem


def test_aws_keeps_to_the_minors_eks_serves(tmp_path):
    config = stack_file_config("dev")
    config["gpu-platform:cluster"] = {**config.get("gpu-platform:cluster", {})}
    config["gpu-platform:cluster"]["kubernetes_version"] = "1.30"
    with pytest.raises(ConfigError) as error:
        plan_stack("dev", make_project(tmp_path, {"dev": config}))
    (problem,) = error.value.problems
    assert problem == f"{MINOR_KEY}: '1.30' is not supported; valid: 1.33, 1.34, 1.35, 1.36"
