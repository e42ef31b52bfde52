"""Every Helm release of every stack rendered offline from ../shared/helm (helm-python-sdk), each
rendered object valid for the stack's Kubernetes minor, and every image the stack will pull
listed in images.txt."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from helm_python.errors import HelmRenderError

from plan.cli import main, write_rendering
from plan.images import image_lines
from plan.render import RELEASE, render_plan
from tests.conftest import STACKS, planned, rendered
from tests.helpers.rendered_validity import assert_rendered_objects_valid


def stack_images(stack: str) -> list[str]:
    sources = [("declared", o) for o in planned(stack).kubernetes_objects()]
    sources += [(r.release, o) for r, o in rendered(stack).objects()]
    return image_lines(sources)


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_of_every_stack_renders(stack):
    releases = {r.name for r in planned(stack).of_type(RELEASE)}
    rendering = rendered(stack)
    assert rendering.warnings == ()
    assert {r.release for r in rendering.releases} == releases
    for release in rendering.releases:
        assert release.objects, f"{release.release} renders nothing"


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_object_is_valid_for_the_stacks_minor(stack):
    """Built-in kinds against the Kubernetes schema of the stack's minor (strict); custom
    resources against their CRDs: ../shared/crds where it holds the kind, else the CRD the
    stack's charts install. A kind neither knows fails."""
    assert_rendered_objects_valid(rendered(stack), planned(stack).outputs["kubernetes_version"])


@pytest.mark.parametrize("stack", STACKS)
def test_outlines_are_the_rendered_objects_with_crd_schemas_left_out(stack):
    """What the plan reads (images, policies, counts, served APIs) is every object as parsed
    whole, only each CRD version's openAPIV3Schema emptied: block scalars with short blank
    lines inside a schema (ceph-csi-operator's CRDs) included."""
    whole = [copy.deepcopy(obj) for _, obj in rendered(stack).objects()]
    for obj in whole:
        if obj["kind"] == "CustomResourceDefinition":
            for version in obj["spec"]["versions"]:
                version["schema"]["openAPIV3Schema"] = {}
    assert [obj for _, obj in rendered(stack).outlines()] == whole


def test_the_render_uses_the_stacks_minor_and_installed_apis():
    """cluster-autoscaler's helpers pick API versions by `.Capabilities.KubeVersion`; the
    rendered Deployment carries the image tag for the stack's minor (kubernetes/autoscaler
    releases: cluster-autoscaler 1.35.2 for Kubernetes 1.35)."""
    rendering = rendered("prod")
    assert "monitoring.coreos.com/v1/ServiceMonitor" in rendering.api_versions  # kps crds/
    assert "kueue.x-k8s.io/v1beta2/ClusterQueue" in rendering.api_versions  # kueue templates
    # Kubernetes v1.34 release notes: DRA's resource.k8s.io/v1 is GA and served by default.
    assert "resource.k8s.io/v1/DeviceClass" in rendering.api_versions
    assert "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2" in " ".join(
        stack_images("prod")
    )


def test_a_chart_missing_from_the_cache_is_a_warning_that_says_how_to_get_it(tmp_path):
    rendering = render_plan(planned("dev"), (tmp_path,))
    assert rendering.releases == ()
    [kueue] = [w for w in rendering.warnings if w.startswith("chart kueue 0.19.2")]
    assert "make charts" in kueue and "oci://registry.k8s.io/kueue/charts" in kueue


@pytest.mark.usefixtures("cli_on_session_plans")
def test_the_plan_writes_each_rendered_release_and_images_txt(tmp_path):
    assert main(["dev", "--quiet", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "images.txt").read_text().splitlines() == stack_images("dev")
    rendered_files = {p.stem for p in (tmp_path / "rendered").glob("*.yaml")}
    assert rendered_files == {r.name for r in planned("dev").of_type(RELEASE)}


@pytest.mark.parametrize("stack", STACKS)
def test_images_txt_lists_what_each_stack_pulls(stack, tmp_path):
    write_rendering(planned(stack), rendered(stack), tmp_path)
    lines = (tmp_path / "images.txt").read_text().splitlines()
    assert lines and lines == stack_images(stack)
    rendered_files = {p.stem for p in (tmp_path / "rendered").glob("*.yaml")}
    assert rendered_files == {r.name for r in planned(stack).of_type(RELEASE)}
    for line in lines:
        image = line.split("  ", 1)[0]
        assert ":" in image.rsplit("/", 1)[-1] or "@" in image, line  # a tag or a digest


def test_images_come_from_pod_templates_and_the_operators_resources():
    prod = "\n".join(stack_images("prod"))
    # shared/PINS.md, GPU Operator v26.7.0: device plugin v0.20.0, dcgm-exporter
    # 4.6.0-4.8.3-distroless; the ClusterPolicy decides them, no pod template names them.
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.20.0  ClusterPolicy cluster-policy" in prod
    assert "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless  ClusterPolicy" in prod
    # shared/PINS.md: on the AL2023 NVIDIA AMI driver.enabled and toolkit.enabled are false,
    # so neither image is pulled.
    assert "nvcr.io/nvidia/driver:" not in prod and "container-toolkit" not in prod
    # shared/helm/README.md: kueue's release step sets registry.k8s.io/kueue/kueue, v0.19.2.
    assert (
        "registry.k8s.io/kueue/kueue:v0.19.2  Deployment gpu-platform/kueue-controller-manager"
        " (prod-kueue)" in prod
    )
    onprem = "\n".join(stack_images("onprem"))
    # model/versions.py's NicClusterPolicy images: network-operator 26.4.1's hack/release.yaml.
    assert "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin:network-operator-v26.4.1" in onprem
    assert "quay.io/ceph/ceph:v20.2.4  CephCluster" in onprem  # Rook v1.20.6 cluster.yaml


def test_a_template_that_fails_on_an_api_another_release_brings_renders_on_the_next_pass():
    """JobSet 0.12.0's ServiceMonitor template fails the render without the ServiceMonitor API
    (templates/prometheus/monitor.yaml), which kube-prometheus-stack's crds/ bring: the first
    pass, before that CRD is known, fails it, the second renders it; alone, it fails the plan
    with Helm's message."""
    plan = planned("dev")
    wanted = {"dev-jobset", "dev-kube-prometheus-stack"}
    releases = [r for r in plan.of_type(RELEASE) if r.name in wanted]
    assert {r.name for r in releases} == wanted
    both = render_plan(dataclasses.replace(plan, resources=releases))
    (jobset,) = [r for r in both.releases if r.chart == "jobset"]
    assert "ServiceMonitor" in {o["kind"] for o in jobset.objects}
    alone = dataclasses.replace(plan, resources=[r for r in releases if r.name == "dev-jobset"])
    with pytest.raises(HelmRenderError, match=r"`monitoring\.coreos\.com/v1/ServiceMonitor`"):
        render_plan(alone)
