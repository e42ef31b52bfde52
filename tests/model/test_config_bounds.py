"""Every number the config model takes has both bounds, in the model and in the JSON Schema that
editors check stack files with (docs/stack-schema.json): a number without an upper bound is a
typo that plans (`gpu_memory_gib: 80000`), a port of 70000 is a mirror nobody reaches. The bounds
are the real systems' where they have one (ports, percentages, Kubernetes int32 fields, EKS's
nodes per group, gp3's 16 TiB, Ceph's pool size of at most 10), documented in model/config/bounds.py
and beside each field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from model.config import PlatformConfig
from model.config.images import ImageSettings
from model.config.loading import unwrap
from tools.config_docs import stack_schema

# Numbers another part of the issue bounds (the MultiKueue burst settings, owned by
# model/config/multikueue.py's own change); each says why it is not bounded here.
EXEMPT = {
    "scheduling.cluster_queues[].burst.gpus": "bounded with the burst capacity (MultiKueue)",
    "scheduling.cluster_queues[].burst.monthly_budget_usd": "bounded with the bursting budget",
}
LOWER = ("minimum", "exclusiveMinimum")
UPPER = ("maximum", "exclusiveMaximum")


def numbers(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every number of the schema by its key path (lists as [], map values as .*), each with
    the schema node that bounds it."""
    defs = schema.get("$defs", {})
    found: dict[str, dict[str, Any]] = {}

    def walk(node: Any, path: str, seen: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in seen:
                walk(defs[name], path, (*seen, name))
            return
        if node.get("type") in ("integer", "number"):
            found[path] = node
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in node.get(key, []):
                walk(branch, path, seen)
        for name, sub in node.get("properties", {}).items():
            walk(sub, f"{path}.{name}" if path else name, seen)
        for i, sub in enumerate(node.get("prefixItems", [])):
            walk(sub, f"{path}[{i}]", seen)
        walk(node.get("items"), f"{path}[]", seen)
        walk(node.get("additionalProperties"), f"{path}.*", seen)

    walk(schema, "", ())
    return found


CONFIG = stack_schema()["properties"]["config"]
MODEL_NUMBERS = numbers({**PlatformConfig.model_json_schema()})
STACK_NUMBERS = numbers({"$defs": stack_schema()["$defs"], **CONFIG})


def unbounded(found: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(
        path
        for path, node in found.items()
        if "enum" not in node
        and not (any(k in node for k in LOWER) and any(k in node for k in UPPER))
    )


def test_the_walk_finds_the_models_numbers():
    assert len(MODEL_NUMBERS) > 100
    assert "images.registry_mirror" not in MODEL_NUMBERS
    some = {"alerts.queue_depth", "existing.gpu_pools[].gpu_memory_gib",
            "recipes.esrgan.jpeg_quality[1]", "autoscaler.priorities.*"}  # fmt: skip
    assert some <= set(MODEL_NUMBERS)
    assert len(STACK_NUMBERS) == len(MODEL_NUMBERS)


def test_every_number_of_the_model_has_both_bounds():
    assert unbounded(MODEL_NUMBERS) == sorted(EXEMPT)


def test_every_number_of_the_stack_schema_has_both_bounds_in_json_schemas_words():
    """pydantic writes an optional number's bounds as ge / le, which JSON Schema readers skip:
    the published schema must say minimum / maximum."""
    stray = sorted(
        path for path, node in STACK_NUMBERS.items() if {"ge", "le", "gt", "lt"} & set(node)
    )
    assert stray == []
    assert unbounded(STACK_NUMBERS) == sorted(
        f"{NS_PREFIX}{path}" for path in EXEMPT if f"{NS_PREFIX}{path}" in STACK_NUMBERS
    )


NS_PREFIX = "gpu-platform:"


def model_numbers() -> list[tuple[type[BaseModel], str, dict[str, Any]]]:
    """(model, field, its schema) of every plain number field of every model of the config."""
    found, seen = [], set()

    def walk(model: type[BaseModel]) -> None:
        seen.add(model)
        props = model.model_json_schema().get("properties", {})
        for name, field in model.model_fields.items():
            for node in [props.get(name, {}), *props.get(name, {}).get("anyOf", [])]:
                if node.get("type") in ("integer", "number") and "enum" not in node:
                    found.append((model, name, node))
            inner = unwrap(field.annotation)
            if isinstance(inner, type) and issubclass(inner, BaseModel) and inner not in seen:
                walk(inner)

    walk(PlatformConfig)
    return found


# Bounded by the model's own rule, in its own words, which needs the whole section to run.
OWN_WORDS = {
    "CephSettings.mon_count": "odd, 1 to 9: test_storage_config.py even-mons, too-many-mons",
    "FsxSettings.storage_capacity_gib": "at least 1200, then multiples of 2400 (its maximum is "
    "pydantic's le): test_storage_config.py capacity-zero, capacity-between-steps",
}


def refused(model: type[BaseModel], name: str, value: Any) -> bool:
    try:
        model.model_validate({name: value})
    except ValidationError as error:
        return any(e["loc"] == (name,) for e in error.errors())
    return False


@pytest.mark.parametrize(
    ("model", "name", "node"),
    [pytest.param(*m, id=f"{m[0].__name__}.{m[1]}") for m in model_numbers()],
)
def test_the_model_refuses_a_number_past_its_schemas_bound(model, name, node):
    """The schema is generated: the model itself must refuse what the schema's bound refuses."""
    if f"{model.__name__}.{name}" in OWN_WORDS:
        pytest.skip(OWN_WORDS[f"{model.__name__}.{name}"])
    if "maximum" in node:
        over = node["maximum"] + (1 if node["type"] == "integer" else node["maximum"] or 1)
        assert refused(model, name, over), f"{model.__name__}.{name} takes {over}"
    if "minimum" in node:
        under = node["minimum"] - (1 if node["type"] == "integer" else abs(node["minimum"]) or 1)
        assert refused(model, name, under), f"{model.__name__}.{name} takes {under}"


@pytest.mark.parametrize("port", ["0", "65536", "70000"])
def test_a_registry_mirror_port_outside_tcps_range_is_refused(port):
    """A TCP port is 1 to 65535 (RFC 793's 16-bit port; 0 is reserved, RFC 6335)."""
    with pytest.raises(ValidationError, match=rf"port {port} is not a TCP port; a port is 1 to "):
        ImageSettings(registry_mirror=f"registry.internal.example:{port}/mirror")


@pytest.mark.parametrize("port", ["1", "5000", "65535"])
def test_a_registry_mirror_port_inside_tcps_range_is_taken(port):
    mirror = f"registry.internal.example:{port}/mirror"
    assert ImageSettings(registry_mirror=mirror).registry_mirror == mirror
