"""The engine's URNs and the former URNs an alias keeps, for a program small enough to read."""

from __future__ import annotations

import pulumi

from plan.engine import run_program
from plan.model import Plan, build_plan
from plan.urns import engine_urns, former_urns

OLD, NEW = "gpu-platform:old:Part", "gpu-platform:new:Part"


class Part(pulumi.ComponentResource):
    def __init__(self, kind: str, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(kind, name, None, opts)


def plan(kind: str, aliases: list[pulumi.Alias]) -> Plan:
    """Outer, then `middle` of `kind` under it, then a leaf under middle."""

    def main() -> None:
        outer = Part("gpu-platform:platform:Outer", "outer")
        middle = Part(kind, "middle", pulumi.ResourceOptions(parent=outer, aliases=aliases))
        Part("gpu-platform:leaf:Leaf", "leaf", pulumi.ResourceOptions(parent=middle))

    return build_plan(run_program("dev", program=main))


def urn(*types: str, name: str) -> str:
    return f"urn:pulumi:dev::gpu-platform::{'$'.join(types)}::{name}"


OUTER = "gpu-platform:platform:Outer"
LEAF = "gpu-platform:leaf:Leaf"


def test_the_engine_urn_holds_every_ancestors_type():
    # Pulumi docs, "Resource names": the qualified type joins the parent chain's types with `$`.
    urns = set(engine_urns(plan(OLD, [])).values())
    assert urn(OUTER, OLD, LEAF, name="leaf") in urns
    assert urn(OUTER, name="outer") in urns


def test_an_alias_keeps_the_former_urns_of_the_resource_and_of_its_children():
    before = set(engine_urns(plan(OLD, [])).values())
    formers = former_urns(plan(NEW, [pulumi.Alias(type_=OLD)]))
    assert before <= set().union(*formers.values())
    assert urn(OUTER, OLD, LEAF, name="leaf") in formers[urn(OUTER, NEW, LEAF, name="leaf")]


def test_a_type_renamed_without_an_alias_loses_its_state_and_its_childrens():
    before = set(engine_urns(plan(OLD, [])).values())
    kept = set().union(*former_urns(plan(NEW, [])).values())
    assert before - kept == {urn(OUTER, OLD, name="middle"), urn(OUTER, OLD, LEAF, name="leaf")}


def moved_plan(alias_former_parent: bool) -> Plan:
    """A leaf moved from `before` to `after`, both under outer; `before` is declared after it, so
    its alias can only name the former parent by a URN built with `pulumi.create_urn`."""

    def main() -> None:
        outer = Part(OUTER, "outer")
        after = Part(NEW, "after", pulumi.ResourceOptions(parent=outer))
        former = pulumi.create_urn("before", OLD, parent=outer)
        aliases = [pulumi.Alias(parent=former)] if alias_former_parent else []
        Part(LEAF, "leaf", pulumi.ResourceOptions(parent=after, aliases=aliases))
        Part(OLD, "before", pulumi.ResourceOptions(parent=outer))

    return build_plan(run_program("dev", program=main))


def test_an_alias_naming_its_former_parent_by_a_built_urn_keeps_the_state_there():
    """pulumi.create_urn joins the parent URN's qualified type and the type (pulumi SDK,
    pulumi/resource.py `create_urn`); under the mock the parent URN is the mock's, which holds
    the stack's type, and the former parent is still found."""
    old = urn(OUTER, OLD, LEAF, name="leaf")
    new = urn(OUTER, NEW, LEAF, name="leaf")
    assert old in former_urns(moved_plan(True))[new]
    assert old not in former_urns(moved_plan(False))[new]
