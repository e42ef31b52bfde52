"""Custom resources: every one a stack declares is valid against the schema its operator's pinned
release serves (../shared/crds), and the validator itself catches what it must."""

from __future__ import annotations

import pytest

from tests.conftest import STACKS, planned
from tests.helpers import crds

GOOD_FILESYSTEM = {
    "apiVersion": "ceph.rook.io/v1",
    "kind": "CephFilesystem",
    "metadata": {"name": "fs", "namespace": "rook-ceph"},
    "spec": {
        "metadataPool": {"replicated": {"size": 3}},
        "dataPools": [{"name": "replicated", "replicated": {"size": 3}}],
        "metadataServer": {"activeCount": 1, "activeStandby": True},
    },
}


def with_spec(obj: dict, **spec) -> dict:
    return {**obj, "spec": {**obj["spec"], **spec}}


def test_a_valid_resource_passes():
    assert crds.errors(GOOD_FILESYSTEM) == []


@pytest.mark.parametrize(
    ("spec", "detail"),
    [
        pytest.param({"metadataServr": {"activeCount": 1}}, "'metadataServr' was unexpected",
                     id="misspelt-field"),
        pytest.param({"metadataPool": {"replicated": {"sise": 3}}}, "'sise' was unexpected",
                     id="misspelt-nested-field"),
        pytest.param({"metadataServer": {"activeCount": "one"}}, "is not of type 'integer'",
                     id="wrong-type"),
        pytest.param({"dataPools": [{"failureDomain": "host", "replicated": {}}]},
                     "'size' is a required property", id="missing-required"),
    ],
)  # fmt: skip
def test_a_broken_resource_fails(spec, detail):
    found = crds.errors(with_spec(GOOD_FILESYSTEM, **spec))
    assert any(detail in e for e in found), found


def test_nulls_are_pruned_as_the_api_server_does():
    assert crds.errors(with_spec(GOOD_FILESYSTEM, preserveFilesystemOnDelete=None)) == []


def test_go_case_insensitive_patterns_compile():
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "r"},
        "spec": {"groups": [{"name": "g", "partial_response_strategy": "ABORT", "rules": []}]},
    }
    assert crds.errors(rule) == []
    rule["spec"]["groups"][0]["partial_response_strategy"] = "maybe"
    assert any("does not match" in e for e in crds.errors(rule))


def test_built_in_kinds_are_not_custom():
    for api_version in ("v1", "apps/v1", "storage.k8s.io/v1", "autoscaling/v2"):
        assert not crds.is_custom_resource({"apiVersion": api_version})
    for api_version in ("ceph.rook.io/v1", "kueue.x-k8s.io/v1beta2", "k8s.cni.cncf.io/v1"):
        assert crds.is_custom_resource({"apiVersion": api_version})


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_of_every_stack_is_valid(stack):
    checked = 0
    for obj in planned(stack).kubernetes_objects():
        if not crds.is_custom_resource(obj):
            continue
        path = crds.schema_path(obj["apiVersion"], obj["kind"])
        assert path.is_file(), f"{stack}: {obj['kind']} has no schema at {path}"
        assert crds.errors(obj) == [], stack
        checked += 1
    # Every stack has at least its alert rules and Kueue's queues: none means none was found.
    assert checked, f"{stack} declares no custom resource: nothing was checked"


# Charts whose custom resources shared/crds holds, by the repository its README names.
CHART_OF_REPOSITORY = {
    "rook/rook": "rook-ceph",
    "kubernetes-sigs/kueue": "kueue",
    "NVIDIA/gpu-operator": "gpu-operator",
    "Mellanox/network-operator": "network-operator",
}


def test_operator_charts_are_pinned_to_the_releases_the_schemas_come_from():
    """The schemas are only right for the release they were read from (README, "Versions to
    pin"): a chart bump without new schemas would validate against the wrong ones."""
    from model.versions import CHARTS

    pinned = {}
    for line in (crds.CRDS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 2 and cells[0] in CHART_OF_REPOSITORY:
            pinned[CHART_OF_REPOSITORY[cells[0]]] = cells[1].removeprefix("v")
    assert pinned["rook-ceph"] == "1.20.6"
    checked = [name for name in pinned if name in CHARTS]
    assert checked, "no chart of an operator with schemas is installed"
    for name in checked:
        assert CHARTS[name].version.removeprefix("v") == pinned[name], name
