"""`images.registry_mirror`: with a mirror set, every image a stack pulls comes from it, through
each chart's registry values, the operators' custom resources and the program's own pods; and
every image value a pinned chart's defaults name is one the mirror rewrites."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from components.registry_mirror import mirrored, without_registry
from model.config import ConfigError, parse_config
from model.versions import CHART_IMAGE_VALUES, CHARTS, REGISTRY_KEY
from plan.cli import image_sources, plan_stack
from plan.images import strings_of
from plan.model import Plan
from plan.render import Rendering, render_plan
from tests.conftest import (
    SHARED_HELM,
    STACKS,
    make_project,
    planned,
    rendered,
    stack_file_config,
)
from tests.helpers import helm_values
from tests.helpers.raw_config import AWS

MIRROR = "registry.internal.example:5000/mirror"


@functools.cache
def mirrored_project(tmp: Path) -> Path:
    """Every shipped stack file with the mirror set (a manager plans its workers too)."""
    stacks = {}
    for stack in STACKS:
        mirror = {"gpu-platform:images": {"registry_mirror": MIRROR}}
        stacks[stack] = {**stack_file_config(stack), **mirror}
    return make_project(tmp, stacks)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return mirrored_project(tmp_path_factory.mktemp("mirrored"))


@functools.cache
def mirrored_stack(stack: str, root: Path) -> tuple[Plan, Rendering]:
    plan = plan_stack(stack, root)
    return plan, render_plan(plan, (SHARED_HELM,))


def upstream_lines(stack: str) -> list[str]:
    return image_sources(planned(stack), rendered(stack))


@pytest.mark.parametrize("stack", STACKS)
def test_with_a_mirror_every_line_of_images_txt_starts_with_it(stack, project):
    lines = image_sources(*mirrored_stack(stack, project))
    assert lines
    assert [line for line in lines if not line.startswith(f"{MIRROR}/")] == []
    # The same images from the same objects, each with its registry swapped for the mirror:
    # every upstream reference here names its registry (registry.k8s.io/..., nvcr.io/...).
    expected = set()
    for line in upstream_lines(stack):
        image, rest = line.split("  ", 1)
        registry, path = image.split("/", 1)
        assert "." in registry or ":" in registry, line
        expected.add(f"{MIRROR}/{path}  {rest}")
    assert set(map(same_run, lines)) == set(map(same_run, expected))


@pytest.mark.parametrize("stack", STACKS)
def test_with_a_mirror_no_string_of_any_object_names_an_upstream_registry(stack, project):
    """Not only images.txt: a ConfigMap's data (Rook's Ceph CSI image set), an env value or an
    argument that names `<registry>/...` of a registry the stack pulls from without a mirror
    would send an air-gapped node upstream. A CRD's schema pulls nothing."""
    upstream = {line.split("/", 1)[0] for line in upstream_lines(stack)}
    named = re.compile(rf"(?<![\w./-])(?:{'|'.join(map(re.escape, sorted(upstream)))})/\S*")
    plan, rendering = mirrored_stack(stack, project)
    objects = [*plan.kubernetes_objects(), *(obj for _, obj in rendering.outlines())]
    found = {
        f"{ref} ({obj['kind']} {obj['metadata'].get('name')})"
        for obj in objects
        if obj.get("kind") != "CustomResourceDefinition"
        for text in strings_of(obj)
        for ref in named.findall(text)
    }
    assert not found


def same_run(line: str) -> str:
    """The self-test JobSet's name carries a hash of the whole config (components/selftest/job.py,
    run_id), which the mirror is part of."""
    return re.sub(r"JobSet ([a-z0-9-]+)/selftest-[0-9a-f]{10} ", r"JobSet \1/selftest-<run> ", line)


def test_the_mirror_reaches_chart_values_operator_resources_and_declared_pods(project):
    prod = "\n".join(image_sources(*mirrored_stack("prod", project)))
    # shared/helm/README.md: kueue's release step sets registry.k8s.io/kueue/kueue, v0.19.2.
    assert f"{MIRROR}/kueue/kueue:v0.19.2  Deployment gpu-platform/kueue-controller-manager" in prod
    # shared/PINS.md: GPU Operator v26.7.0 runs device plugin v0.20.0 (ClusterPolicy's image).
    assert f"{MIRROR}/nvidia/k8s-device-plugin:v0.20.0  ClusterPolicy cluster-policy" in prod
    onprem = "\n".join(image_sources(*mirrored_stack("onprem", project)))
    # Rook v1.20.6's example CephCluster runs quay.io/ceph/ceph:v20.2.4; ours, declared.
    assert f"{MIRROR}/ceph/ceph:v20.2.4  CephCluster rook-ceph/rook-ceph (declared)" in onprem
    assert f"{MIRROR}/nvidia/mellanox/multus-cni:network-operator-v26.4.1  NicClusterPolicy" in (
        onprem
    )


def test_references_lose_their_registry_and_keep_path_tag_and_digest():
    # Docker's reference grammar (distribution/reference): a first component with a dot or a
    # port, or localhost, is a registry; otherwise the image is on Docker Hub, one-component
    # names under library/.
    assert without_registry("registry.k8s.io/kueue/kueue:v0.19.2") == "kueue/kueue:v0.19.2"
    assert without_registry("localhost:5000/a/b@sha256:" + "1" * 64) == "a/b@sha256:" + "1" * 64
    assert without_registry("rook/ceph:v1.20.6") == "rook/ceph:v1.20.6"
    assert without_registry("busybox:1.38.0") == "library/busybox:1.38.0"
    # Docker normalises `docker.io/busybox` to `docker.io/library/busybox` as well.
    assert without_registry("docker.io/busybox:1.38.0") == "library/busybox:1.38.0"
    assert mirrored("nvcr.io/nvidia", MIRROR) == f"{MIRROR}/nvidia"
    assert mirrored("nvcr.io/nvidia", None) == "nvcr.io/nvidia"


@pytest.mark.parametrize(
    "bad",
    ["https://registry.example", "mirror", "registry.example/", "Registry.example", "a b.example"],
)
def test_a_mirror_that_is_not_a_registry_is_refused_by_its_key(bad):
    raw = {**AWS, "images": {"registry_mirror": bad}}
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, "stacks/Pulumi.bad.yaml")
    [problem] = caught.value.problems
    assert problem.startswith("gpu-platform:images.registry_mirror:") and repr(bad) in problem
    assert "host[:port][/path]" in problem


def image_values(node, path: str = "") -> dict[str, str | None]:
    """Every value of a chart's defaults that names an image's registry: an image block's
    `registry`, or a `repository` beside it, by dotted path."""
    found = {}
    if isinstance(node, dict):
        if "registry" in node and ("repository" in node or path.endswith("image")):
            found[f"{path}.registry".lstrip(".")] = node["registry"]
        elif isinstance(node.get("repository"), str):
            found[f"{path}.repository".lstrip(".")] = node["repository"]
        for key, value in node.items():
            found |= image_values(value, f"{path}.{key}".lstrip("."))
    return found


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_every_image_value_of_every_pinned_chart_is_mirrored(chart):
    """Each registry-naming value in the chart's values.yaml and its subcharts' (as a parent
    sets them, under the subchart's name) is in CHART_IMAGE_VALUES, or the chart's global
    registry key covers it; an empty repository (the user must give one) is no image."""
    version = CHARTS[chart].version
    found = image_values(helm_values.defaults(chart, version))
    for name, values in helm_values.subcharts(chart, version).items():
        found |= {f"{name}.{k}": v for k, v in image_values(values).items()}
    table = CHART_IMAGE_VALUES[chart]
    if REGISTRY_KEY in table.values():  # a global registry: every image of the chart
        return
    missing = {p: v for p, v in found.items() if v and p not in table}
    assert missing == {}, f"{chart}: image values the mirror would leave upstream"
