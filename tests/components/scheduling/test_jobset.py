"""The JobSet release (components/scheduling/jobset.py) on every stack: the pinned chart rendered
offline from ../shared/helm with the platform's values, the keys it sets read by the chart, its
image pinned and mirrored, its pods admitted where it runs, its CRD the one the platform's JobSets
are validated against, and the order Kueue and the self-test come after it.

Literals from the pins: chart jobset 0.12.0 from `oci://registry.k8s.io/jobset/charts/jobset`,
image `registry.k8s.io/jobset/jobset:v0.12.0`, Deployment `jobset-controller` for release
`jobset` (shared/PINS.md, "JobSet (0.12.0)"; shared/helm/README.md)."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from helm_python.errors import HelmRenderError

from components.registry_mirror import mirrored_values
from components.scheduling.jobset import jobset_values
from model.versions import CHARTS
from plan.render import render_chart
from tests.conftest import SHARED_HELM, STACKS, planned, rendered, stack_config
from tests.controllers.pod_security import pod_templates, violations
from tests.helpers import helm_values
from tests.helpers.crds import CRDS

RELEASE = "kubernetes:helm.sh/v3:Release"
ARCHIVE = SHARED_HELM / "jobset-0.12.0.tgz"
IMAGE = "registry.k8s.io/jobset/jobset:v0.12.0"
JOBSET = "jobset.x-k8s.io/v1alpha2/JobSet"
SERVICE_MONITOR = "monitoring.coreos.com/v1/ServiceMonitor"
MIRROR = "registry.internal.example:5000/mirror"


def release(stack: str):
    if not stack_config(stack).installs("jobset"):
        pytest.skip("the cluster runs its own JobSet (existing.addons.jobset)")
    (found,) = [r for r in planned(stack).of_type(RELEASE) if r.name == f"{stack}-jobset"]
    return found


def rendered_release(stack: str):
    release(stack)
    (found,) = [r for r in rendered(stack).releases if r.release == f"{stack}-jobset"]
    return found


def render(values: dict, apis: tuple[str, ...] = (SERVICE_MONITOR,)):
    """The chart as Helm renders it for release `jobset` in `gpu-platform`, on 1.35."""
    templates, crds = render_chart(
        ARCHIVE, json.dumps(values, sort_keys=True), "jobset", "gpu-platform", "1.35", apis
    )
    return [doc for _, text in templates for doc in _docs(text)], crds


def _docs(text: str):
    return [d for d in yaml.safe_load_all(text) if d]


def test_the_pin_is_the_oci_chart_kueue_requires():
    chart = CHARTS["jobset"]
    assert f"{chart.repository}/{chart.name}" == "oci://registry.k8s.io/jobset/charts/jobset"
    assert chart.version == "0.12.0"
    assert ARCHIVE.is_file()


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_installs_jobset_in_the_platforms_namespace(stack):
    """Every stack runs jobs (the self-test at least), and every one is a JobSet."""
    inputs = release(stack).inputs
    assert inputs["chart"] == "oci://registry.k8s.io/jobset/charts/jobset"
    assert inputs["version"] == "0.12.0"
    assert inputs["name"] == "jobset"
    assert inputs["namespace"] == stack_config(stack).namespaces.system


@pytest.mark.parametrize("stack", STACKS)
def test_every_value_the_platform_sets_is_a_key_of_the_chart(stack):
    """Helm ignores a key the chart lacks (shared/charts/README.md): each must be in
    shared/charts/jobset/0.12.0/values.yaml."""
    inputs = release(stack).inputs
    version = stack_config(stack).cluster.kubernetes_version
    assert helm_values.unknown_keys("jobset", "0.12.0", inputs["values"], version) == []


def test_a_misspelt_jobset_key_is_caught():
    bad = {"prometheus": {"enabled": True}}
    (problem,) = helm_values.unknown_keys("jobset", "0.12.0", bad, "1.35")
    assert problem.startswith("jobset: prometheus.enabled: not a key of the chart")


@pytest.mark.parametrize("stack", STACKS)
def test_the_release_renders_the_controller_its_crd_and_its_service_monitor(stack):
    cfg = stack_config(stack)
    found = rendered_release(stack)
    assert (found.chart, found.version) == ("jobset", "0.12.0")
    assert found.namespace == cfg.namespaces.system
    by_kind = {}
    for obj in found.objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    (deployment,) = by_kind["Deployment"]
    assert deployment["metadata"]["name"] == "jobset-controller"
    pod = deployment["spec"]["template"]["spec"]
    assert [c["image"] for c in pod["containers"]] == [IMAGE]
    assert pod.get("nodeSelector", {}) == dict(
        {"gpu-platform/node-role": "system"} if cfg.provider == "aws" else {}
    )
    (monitor,) = by_kind["ServiceMonitor"]
    assert monitor["metadata"]["namespace"] == cfg.namespaces.system
    (crd,) = found.crds
    assert crd["metadata"]["name"] == "jobsets.jobset.x-k8s.io"
    assert JOBSET in rendered(stack).api_versions


@pytest.mark.parametrize("stack", STACKS)
def test_the_controllers_pods_keep_to_restricted(stack):
    """Its namespace (namespaces.system, beside Kueue) sets no Pod Security level; the chart's
    pods keep to `restricted` all the same, so a namespace that enforces it takes them."""
    pods = [p for obj in rendered_release(stack).objects for p in pod_templates(obj)]
    assert pods
    assert [v for p in pods for v in violations(p, "restricted")] == []


def test_with_a_mirror_the_controller_image_comes_from_it():
    objects, _ = render(mirrored_values("jobset", jobset_values({}, "monitoring"), MIRROR))
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    images = [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]]
    assert images == [f"{MIRROR}/jobset/jobset:v0.12.0"]


def test_metrics_need_the_service_monitor_api_the_stacks_monitoring_serves():
    """templates/prometheus/monitor.yaml fails the render without the ServiceMonitor API: the
    platform turns metrics on because every stack's Prometheus Operator serves it."""
    with pytest.raises(HelmRenderError, match=re.escape(f"`{SERVICE_MONITOR}`")):
        render(jobset_values({}, "monitoring"), apis=())
    objects, _ = render(jobset_values({}, "monitoring"))
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    assert monitor["spec"]["endpoints"][0]["port"] == "https"
    (binding,) = [o for o in objects if o["kind"] == "RoleBinding" and "prometheus" in str(o)]
    assert {s["namespace"] for s in binding["subjects"]} == {"monitoring"}


def test_the_charts_crd_is_the_schema_jobsets_are_validated_against():
    """The chart installs `crds/jobset.x-k8s.io_jobsets.yaml`; the platform's JobSets are
    validated against shared/crds/jobset.x-k8s.io/JobSet.v1alpha2.json (from the tag's
    config/components/crd/bases/): the two must agree, or the tests check another schema than
    the cluster's."""
    _, crds = render(jobset_values({}, "monitoring"))
    ((_, text),) = crds
    (crd,) = _docs(text)
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha2", True, True)
    stored = json.loads((CRDS / "jobset.x-k8s.io" / "JobSet.v1alpha2.json").read_text())
    assert version["schema"]["openAPIV3Schema"] == stored


@pytest.mark.parametrize("stack", STACKS)
def test_jobset_comes_after_monitoring_and_before_the_self_test_beside_kueue(stack):
    """The chart's ServiceMonitor needs the monitoring release's CRD; the self-test's job needs
    the controller. Kueue installs beside it, not after: v0.19.2 sets its jobset integration up
    once the CRD is served (pkg/controller/jobframework/setup.go `waitForAPI`), so the first
    `pulumi up` takes no longer (tests/plan/test_critical_path.py)."""
    plan = planned(stack)
    jobset = release(stack)
    monitoring = [r for r in plan.of_type(RELEASE) if r.name == f"{stack}-kube-prometheus-stack"]
    assert {m.urn for m in monitoring} <= set(jobset.dependencies)
    for kueue in (r for r in plan.of_type(RELEASE) if r.name == f"{stack}-kueue"):
        assert jobset.urn not in kueue.dependencies
    selftest = [r.urn for r in plan.of_type("gpu-platform:selftest:SelfTest")]
    jobs = [
        r for r in plan.resources if r.parent in selftest and r.type.endswith((":Job", ":JobSet"))
    ]
    assert [j.name for j in jobs if jobset.urn not in j.dependencies] == []
