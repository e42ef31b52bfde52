"""Every object a rendering holds, validated as the API server would take it: built-in kinds
against the Kubernetes schema of the stack's minor (strict), custom resources against their
CRDs (../shared/crds where it holds the kind, else the CRD the stack's charts install). One path
for every release, at its pin or at a stack's override (`charts`)."""

from __future__ import annotations

from typing import Any

from plan.manifests import outline_source, parse_source
from plan.render import Rendering
from tests.conftest import validate_kubernetes
from tests.helpers import crds


def assert_rendered_objects_valid(rendering: Rendering, minor: str) -> None:
    """Fails at the first object the API server would refuse; a kind no CRD serves fails."""
    custom = []
    for release, obj in rendering.objects():
        if not crds.is_custom_resource(obj):
            validate_kubernetes(obj, minor)
        elif crds.schema_path(obj["apiVersion"], obj["kind"]).is_file():
            assert crds.errors(obj) == [], release.release
        else:
            custom.append((release, obj))
    installed = chart_crd_schemas(rendering, {(o["apiVersion"], o["kind"]) for _, o in custom})
    for release, obj in custom:
        key = (obj["apiVersion"], obj["kind"])
        assert key in installed, f"{release.release}: {key} is served by no CRD"
        validator = crds.StructuralValidator(installed[key])
        problems = [e.message for e in validator.iter_errors(crds.strip_nulls(obj))]
        assert problems == [], f"{release.release} {key}: {problems}"


def chart_crd_schemas(
    rendering: Rendering, wanted: set[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The schemas of the `wanted` (apiVersion, kind) pairs from the CRDs the charts install;
    only the files that hold one are parsed whole (plan/manifests.py)."""
    schemas = {}
    for release in rendering.releases:
        for _, text in (*release.crd_files, *release.templates):
            if not wanted & set(crd_keys(outline_source(text))):
                continue
            for crd in parse_source(text):
                spec = crd["spec"]
                for version, key in zip(spec.get("versions", []), crd_keys([crd]), strict=True):
                    # Closed to unknown keys as the API server prunes them, as tests/helpers/crds.py
                    # does.
                    schema = crds._close(version["schema"]["openAPIV3Schema"])
                    schema.setdefault("properties", {})["metadata"] = {"type": "object"}
                    schemas[key] = schema
    return schemas


def crd_keys(objects) -> list[tuple[str, str]]:
    """(apiVersion, kind) of every version each CRD among `objects` defines."""
    return [
        (f"{o['spec']['group']}/{version['name']}", o["spec"]["names"]["kind"])
        for o in objects
        if o["kind"] == "CustomResourceDefinition"
        for version in o["spec"].get("versions", [])
    ]
