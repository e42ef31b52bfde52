"""The URNs `pulumi up` gives a plan's resources, and every URN it would find their state under.

The mock engine writes only the parent's own type before a child's (`make_urn` in the SDK's
pulumi/runtime/mocks.py); the engine writes the parent's whole type chain, the stack's left out
(Pulumi docs, "Resource names": `urn:pulumi:<stack>::<project>::<qualified type>::<name>`, the
qualified type being the ancestors' types and the resource's own joined by `$`). A component
whose type changes therefore changes every descendant's URN in the engine but only its
children's in the mock, so what is checked here is the engine's form.

A renamed or moved resource keeps its state through `aliases=`; the engine carries a parent's
aliases to its children (Pulumi docs, "Resource options: aliases": a child's URN under each of
its parent's former URNs is one of its own former URNs).
"""

from __future__ import annotations

from typing import Any

from plan.engine import STACK_TYPE
from plan.model import Plan, PlannedResource


def _urn(stack: str, project: str, qualified_type: str, name: str) -> str:
    return f"urn:pulumi:{stack}::{project}::{qualified_type}::{name}"


def _qualified_type(urn: str) -> str:
    return urn.split("::")[2]


def engine_urns(plan: Plan) -> dict[str, str]:
    """Each resource's mock URN -> the URN the engine gives it."""
    by_urn = {r.urn: r for r in plan.resources}
    found: dict[str, str] = {}

    def engine_urn(resource: PlannedResource) -> str:
        if resource.urn not in found:
            parent = by_urn.get(resource.parent)
            if resource.type == STACK_TYPE or parent is None or parent.type == STACK_TYPE:
                qualified = resource.type
            else:
                qualified = f"{_qualified_type(engine_urn(parent))}${resource.type}"
            found[resource.urn] = _urn(plan.stack, plan.project, qualified, resource.name)
        return found[resource.urn]

    for resource in plan.resources:
        engine_urn(resource)
    return found


def _mock_form(urn: str) -> str:
    """The mock's URN for a URN the program built from a mock URN (`pulumi.create_urn`, which
    joins the parent URN's qualified type and the type with `$`): the mock writes only the
    parent's own type before the resource's, so the last two types name it."""
    stack_project, qualified, name = urn.rsplit("::", 2)
    return f"{stack_project}::{'$'.join(qualified.split('$')[-2:])}::{name}"


def former_urns(plan: Plan) -> dict[str, set[str]]:
    """Each resource's engine URN -> every engine URN whose state it takes: its own, what its
    aliases name, and its URN under each former URN of its parent."""
    by_urn = {r.urn: r for r in plan.resources}
    engine = engine_urns(plan)
    found: dict[str, set[str]] = {}

    def under(parent_urn: str, resource: PlannedResource, spec: dict[str, Any]) -> str:
        stack = spec.get("stack") or plan.stack
        project = spec.get("project") or plan.project
        kind, name = spec.get("type") or resource.type, spec.get("name") or resource.name
        if not parent_urn or _qualified_type(parent_urn) == STACK_TYPE:
            return _urn(stack, project, kind, name)
        return _urn(stack, project, f"{_qualified_type(parent_urn)}${kind}", name)

    def formers(resource: PlannedResource) -> set[str]:
        key = engine[resource.urn]
        if key in found:
            return found[key]
        parent = by_urn.get(resource.parent)
        parents = formers(parent) if parent is not None and parent.type != STACK_TYPE else {""}
        names = {key}
        for alias in resource.aliases:
            if "urn" in alias:
                names.add(alias["urn"])
            elif alias.get("noParent"):
                names.add(under("", resource, alias))
            elif alias.get("parentUrn"):
                named = by_urn.get(alias["parentUrn"]) or by_urn.get(_mock_form(alias["parentUrn"]))
                names.add(
                    under(engine[named.urn] if named else alias["parentUrn"], resource, alias)
                )
            else:
                names |= {under(p, resource, alias) for p in parents}
        names |= {under(p, resource, {}) for p in parents}
        found[key] = names
        return names

    for resource in plan.resources:
        formers(resource)
    return found
