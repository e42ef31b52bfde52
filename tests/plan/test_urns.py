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
