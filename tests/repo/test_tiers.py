"""STYLE.md §8's tiers as pytest markers: every collected test carries exactly one, so
`pytest -m unit` (or program, policy, selftest) runs a tier and the four together run all."""

from __future__ import annotations

from tests.conftest import ROOT, TIERS

TIER_NAMES = {"unit", "program", "policy", "selftest"}


def test_every_collected_test_has_exactly_one_tier(request):
    untiered, several = [], []
    for item in request.session.items:
        tiers = [m.name for m in item.iter_markers() if m.name in TIER_NAMES]
        if not tiers:
            untiered.append(item.nodeid)
        elif len(tiers) > 1:
            several.append(f"{item.nodeid}: {tiers}")
    assert untiered == [], f"no tier (add its folder to tests/conftest.py TIERS): {untiered[:5]}"
    assert several == [], several[:5]


def test_every_test_folder_has_a_tier_and_every_tier_is_registered(pytestconfig):
    folders = {p.relative_to(ROOT / "tests").parts[0] for p in (ROOT / "tests").rglob("test_*.py")}
    assert folders == set(TIERS)
    assert set(TIERS.values()) == TIER_NAMES
    registered = {line.split(":", 1)[0] for line in pytestconfig.getini("markers")}
    assert registered >= TIER_NAMES
