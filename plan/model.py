"""What the offline plan holds: the planned resources, as plain JSON read from the engine's
recording, and the plan they form. Every other module of the package reads these; this one
imports only the engine."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime import rpc

from model.stacks import SECRET
from plan.engine import Recording, known_after_apply

_SECRET_SIG = rpc._special_secret_sig
_SIG_KEY = rpc._special_sig_key
_RESOURCE_SIG = rpc._special_resource_sig


def _name_of(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def render(value: Any, sources: list[str] = ()) -> Any:
    """Plain, deterministic JSON: integral floats back to ints (the wire has only doubles),
    secrets and unknowns as readable markers naming where an unknown comes from."""
    if isinstance(value, dict):
        sig = value.get(_SIG_KEY)
        if sig == _SECRET_SIG:
            return _masked(value.get("value"))
        if sig == _RESOURCE_SIG:
            return _name_of(value.get("urn", ""))
        return {k: render(v, sources) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [render(v, sources) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == rpc.UNKNOWN:
        return known_after_apply(", ".join(sorted({_name_of(s) for s in sources})))
    return value


def is_secret(value: Any) -> bool:
    """A value the engine marked secret (before render masks it)."""
    return isinstance(value, dict) and value.get(_SIG_KEY) == _SECRET_SIG


def _masked(value: Any) -> Any:
    """A secret keeps its shape (a Secret's `stringData` stays an object that the schema check
    can read), every value in it shown as (secret)."""
    if isinstance(value, dict) and _SIG_KEY not in value:
        return {k: _masked(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return SECRET


@dataclass(frozen=True)
class PlannedResource:
    urn: str
    type: str
    name: str
    parent: str
    inputs: dict[str, Any]
    dependencies: list[str]
    protect: bool
    custom: bool
    # Input paths `pulumi up` leaves alone, so a diff against an earlier plan skips them.
    ignore_changes: tuple[str, ...] = ()
    # How long `pulumi up` waits for it, per operation (`create`: `30m`), where the program says.
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    # Input paths whose change makes `pulumi up` replace it (Pulumi's syntax: `a[*].b`), and
    # whether the old one is deleted first.
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    # What `pulumi up` finds its state under when it was renamed or moved (`aliases=`): whole
    # URNs (`{"urn": ...}`) or alias specs (name, type, parentUrn, noParent, stack, project).
    aliases: tuple[dict[str, Any], ...] = ()
    # A delete, `pulumi destroy`'s included, leaves it in place and only forgets it.
    retain_on_delete: bool = False

    def as_json(self) -> dict[str, Any]:
        found = {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "inputs": self.inputs,
            "dependencies": self.dependencies,
            "protect": self.protect,
        }
        # Only where set, so that the resources a destroy deletes read as before.
        return {**found, "retain_on_delete": True} if self.retain_on_delete else found


@dataclass
class Plan:
    stack: str
    project: str
    resources: list[PlannedResource]
    outputs: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @functools.cached_property
    def by_urn(self) -> dict[str, PlannedResource]:
        return {r.urn: r for r in self.resources}

    def of_type(self, token: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == token]

    def plane_of(self, resource: PlannedResource) -> str:
        """The plane named by the nearest enclosing `gpu-platform:<plane>:*` component."""
        index, node = self.by_urn, resource
        while node is not None:
            if node.type.startswith("gpu-platform:") and node is not resource:
                return node.type.split(":")[1]
            node = index.get(node.parent)
        return "platform"

    def kubernetes_objects(self) -> list[dict[str, Any]]:
        return [
            r.inputs
            for r in self.resources
            if r.type.startswith("kubernetes:") and "apiVersion" in r.inputs
        ]

    def to_json(self) -> str:
        doc = {
            "stack": self.stack,
            "resources": [r.as_json() for r in self.resources],
            "outputs": self.outputs,
        }
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def build_plan(recording: Recording) -> Plan:
    resources = []
    for reg in sorted(recording.resources.values(), key=lambda r: r.urn):
        inputs = {
            key: render(value, reg.property_dependencies.get(key, []))
            for key, value in reg.raw_inputs.items()
        }
        resources.append(
            PlannedResource(
                urn=reg.urn,
                type=reg.type,
                name=reg.name,
                parent=reg.parent,
                inputs=dict(sorted(inputs.items())),
                dependencies=reg.dependencies,
                protect=reg.protect,
                custom=reg.custom,
                ignore_changes=tuple(reg.ignore_changes),
                custom_timeouts=reg.custom_timeouts,
                replace_on_changes=tuple(reg.replace_on_changes),
                delete_before_replace=reg.delete_before_replace,
                aliases=tuple(reg.aliases),
                retain_on_delete=reg.retain_on_delete,
            )
        )
    return Plan(
        recording.stack,
        recording.project,
        resources,
        render(recording.outputs),
        list(recording.warnings),
    )
