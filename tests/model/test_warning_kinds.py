"""The registry of warning kinds (model/warning_kinds.py): a warning ends with its kind's id, read
back by the plan, and only a registered id may be given. That every kind is given by some stack
and fails `--strict` until waived: tests/plan/test_strict.py."""

from __future__ import annotations

import re

import pytest

from model.stacks import ROOT
from model.warning_kinds import WARNINGS, warning, warning_kind


def test_a_warning_ends_with_its_kind_and_is_read_back():
    tagged = warning("over-budget", "gpu-platform:cost.monthly_budget_usd: over")
    assert tagged == "gpu-platform:cost.monthly_budget_usd: over [warning over-budget]"
    assert warning_kind(tagged) == "over-budget"
    # Only at the end: a message that quotes a tag elsewhere names no kind by it.
    assert warning_kind("see [warning over-budget] above") is None
    assert warning_kind("plain text") is None


def test_a_kind_outside_the_registry_is_refused_where_the_warning_is_made():
    with pytest.raises(KeyError, match=r"not in model/warning_kinds\.py"):
        warning("no-such-kind", "text")


def test_ids_are_words_a_stack_file_can_spell_and_each_says_what_it_warns_of():
    for kind, words in WARNINGS.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", kind), kind
        assert words and not words.endswith("."), kind


def test_docs_list_every_id_a_stack_may_waive():
    # docs/review.md, "Strict mode": the ids a stack file names, each with what it warns of.
    page = (ROOT / "docs" / "review.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| (.+) \|$", page, re.MULTILINE))
    assert rows == WARNINGS
