"""Validate custom resources against the upstream CRD schemas in ../shared/crds.

The files are Kubernetes structural OpenAPI v3 schemas, not plain JSON Schema; the validator
closes the gaps that matter (shared/crds/README.md, "Caveats"):

1. Go RE2 patterns with a leading `^(?i)` are rewritten to `(?i)^`, which Python compiles.
2. `null` values are dropped before validation, as the API server prunes them (and `nullable`
   schemas accept them): an empty YAML key is not an error.
3. Objects that list `properties` and neither preserve unknown fields nor say what extra keys
   may hold are closed (`additionalProperties: false`), so a misspelt field fails as the API
   server's strict field validation would reject it.

CEL rules (`x-kubernetes-validations`), list-type uniqueness and formats are not checked.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import validators

from model.stacks import ROOT

CRDS = ROOT.parent / "shared" / "crds"
_CASE_INSENSITIVE = re.compile(r"^\^\(\?i\)")


def is_custom_resource(obj: dict[str, Any]) -> bool:
    """A kind that Kubernetes itself does not serve: its API group has a dot and is not one of
    the `*.k8s.io` groups (core, apps, batch, policy and autoscaling have no dot)."""
    api_version = obj.get("apiVersion", "")
    if "/" not in api_version:
        return False
    group = api_version.split("/", 1)[0]
    return "." in group and not group.endswith(".k8s.io")


def schema_path(api_version: str, kind: str) -> Path:
    group, version = api_version.split("/", 1)
    return CRDS / group / f"{kind}.{version}.json"


def _close(schema: Any) -> Any:
    """A copy of `schema` with every object that lists properties closed to unknown keys."""
    if isinstance(schema, list):
        return [_close(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _close(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _pattern(validator, pattern, instance, schema):
    """`pattern` as Kubernetes (Go RE2) reads it, for the one form Python rejects."""
    if not validator.is_type(instance, "string"):
        return
    if not re.search(_CASE_INSENSITIVE.sub("(?i)^", pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_BASE = validators.validator_for({})
StructuralValidator = validators.extend(_BASE, {"pattern": _pattern})


@functools.cache
def validator_for(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    path = schema_path(api_version, kind)
    schema = _close(json.loads(path.read_text()))
    # The CRD schema says nothing of metadata beyond `type: object`; it is the API server's.
    schema["properties"]["metadata"] = {"type": "object"}
    return StructuralValidator(schema)


def strip_nulls(value: Any) -> Any:
    """What the API server keeps of a value: no null map entries or list items."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value if v is not None]
    return value


def errors(obj: dict[str, Any]) -> list[str]:
    """Every schema violation of a custom resource, as `kind name: path: message`."""
    validator = validator_for(obj["apiVersion"], obj["kind"])
    name = f"{obj['kind']} {obj.get('metadata', {}).get('name')}"
    found = []
    for error in sorted(validator.iter_errors(strip_nulls(copy.deepcopy(obj))), key=str):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        found.append(f"{name}: {where}: {error.message}")
    return found
