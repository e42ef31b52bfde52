"""Image references wherever rendered objects carry them, not only in `image:` fields: images.txt,
the list an air-gapped mirror is filled from, names every image any string of any object names.

rook-ceph v1.20.6 hands the Ceph CSI images to ceph-csi-operator in a ConfigMap
(`rook-csi-operator-image-set-configmap`, templates/configmap.yaml); prometheus-operator is told
its config-reloader image in an argument; the GPU and Network Operators read images from their
environment. A mirror without them never pulls the CSI pods, the shared-data claim never binds
and `pulumi up` times out.
"""

from __future__ import annotations

import re

import pytest

from model.image_reference import REFERENCE, references_in, registry_of
from plan.cli import image_sources
from plan.images import pod_images, strings_of
from tests.conftest import CEPH_STACKS, STACKS, planned, rendered


def _listed(stack: str) -> set[str]:
    return {line.split("  ", 1)[0] for line in image_sources(planned(stack), rendered(stack))}


def _objects(stack: str) -> list[dict]:
    objects = [obj for _, obj in rendered(stack).outlines()]
    return [*objects, *planned(stack).kubernetes_objects()]


@pytest.mark.parametrize(
    "reference",
    [
        # distribution/reference reference_test.go's forms: a registry with a port, a digest.
        "registry.k8s.io/sig-storage/csi-provisioner:v6.2.0",
        "localhost:5000/team/app@sha256:" + "0" * 64,
        "registry.internal.example:5000/mirror/cephcsi/cephcsi:v3.17.0",
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
    ],
)
def test_a_reference_with_a_registry_and_a_tag_or_digest_is_found_in_free_text(reference):
    assert REFERENCE.fullmatch(reference)
    assert references_in(f"--image={reference} --other") == [reference]
    assert references_in(f'plugin: "{reference}"\n') == [reference]


@pytest.mark.parametrize(
    "text",
    [
        "nvidia.com/gpu",  # a resource name: no tag
        "team/app:1",  # no registry: Docker Hub, but as likely a `namespace/name:port`
        "https://quay.io/repository/cephcsi/cephcsi",  # a URL, not a reference
        "quay.io/Ceph/ceph:v20",  # path components are lower case
        "app.kubernetes.io/name",
    ],
)
def test_free_text_that_is_no_image_reference_is_not_taken_for_one(text):
    assert references_in(text) == []


def test_a_registry_is_a_first_component_with_a_dot_a_port_or_localhost():
    """distribution/reference normalize.go, splitDockerDomain."""
    assert registry_of("quay.io/ceph/ceph:v20.2.4") == "quay.io"
    assert registry_of("localhost/app:1") == "localhost"
    assert registry_of("rancher/local-path-provisioner:v0.0.37") is None


@pytest.mark.parametrize("stack", CEPH_STACKS)
def test_images_txt_lists_the_ceph_csi_images_rook_hands_to_ceph_csi_operator(stack):
    """rook-ceph v1.20.6 values.yaml `csi.*.repository` / `tag`, which templates/configmap.yaml
    writes into rook-csi-operator-image-set-configmap; no pod template names them."""
    assert _listed(stack) >= {
        "quay.io/cephcsi/cephcsi:v3.17.0",
        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
        "registry.k8s.io/sig-storage/csi-provisioner:v6.2.0",
        "registry.k8s.io/sig-storage/csi-snapshotter:v8.5.0",
        "registry.k8s.io/sig-storage/csi-attacher:v4.12.0",
        "registry.k8s.io/sig-storage/csi-resizer:v2.1.0",
        "quay.io/csiaddons/k8s-sidecar:v0.14.0",
    }


def test_images_txt_lists_the_config_reloader_prometheus_operator_injects():
    """kube-prometheus-stack 88.5.3 passes `--prometheus-config-reloader=<image>` to the
    operator, which adds that container to every Prometheus and Alertmanager pod."""
    assert "quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1" in _listed("prod")


def _registries() -> set[str]:
    """The registries the stacks' pod templates pull from, read from `image:` fields alone."""
    found = set()
    for stack in STACKS:
        for obj in _objects(stack):
            found |= {image.split("/", 1)[0] for image in pod_images(obj) if "/" in image}
    return {r for r in found if "." in r or ":" in r}


@pytest.mark.parametrize("stack", STACKS)
def test_every_tagged_reference_to_a_registry_in_any_object_is_in_images_txt(stack):
    """Any string of any rendered or declared object (a ConfigMap's data, an env value, an
    argument, a custom resource's field) that holds `<registry>/<path>:<tag>` (or `@digest`)
    of a registry the stacks pull from is a line of images.txt. A CRD's schema pulls nothing."""
    hosts = "|".join(re.escape(r) for r in sorted(_registries()))
    named = re.compile(rf"(?<![\w./-])(?:{hosts})/[^\s\"'=,;]+")
    listed = _listed(stack)
    missing = set()
    for obj in _objects(stack):
        if obj.get("kind") == "CustomResourceDefinition":
            continue
        for text in strings_of(obj):
            for ref in named.findall(text):
                tagged = ":" in ref.rsplit("/", 1)[-1] or "@" in ref
                if tagged and ref not in listed:
                    missing.add(f"{ref} ({obj['kind']} {obj['metadata'].get('name')})")
    assert not missing
