"""Renames keep Pulumi's state: each shipped stack plans to the URNs it had before the layering
moves (tests/golden/urns/), or to resources whose aliases name them, and adds none unnoticed."""

from __future__ import annotations

import pytest

from model.stacks import ROOT
from plan.urns import former_urns
from tests.conftest import SHIPPED_STACKS, planned

BEFORE = ROOT / "tests" / "golden" / "urns"


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_each_shipped_stack_keeps_the_urns_it_had_before_the_moves(stack):
    before = set((BEFORE / f"{stack}.txt").read_text().split())
    formers = former_urns(planned(stack))
    kept = set().union(*formers.values())
    assert sorted(before - kept) == [], "state `pulumi up` would delete and create anew"
    added = sorted(urn for urn, names in formers.items() if not names & before)
    assert added == [], "resources the snapshot does not hold: review them, then the snapshot"


def test_every_shipped_stack_has_a_snapshot():
    assert sorted(p.stem for p in BEFORE.glob("*.txt")) == sorted(SHIPPED_STACKS)
