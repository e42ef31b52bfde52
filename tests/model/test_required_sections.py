"""A missing required section is reported first, and the references into it only once it
exists: a stack told "'a100' is not a GPU pool of this stack; pools: none" goes looking for a
pool, when what it lacks is the whole `existing` section that declares its pools.

The class: every top-level section the model calls required (its description says "required
with" or "required when"), dropped from every shipped stack that has it."""

from __future__ import annotations

import re

import pytest

from model.config import PlatformConfig
from tests.conftest import STACKS, stack_file_config
from tests.helpers.bad_stacks import NS, SOURCE, plan_bad

REQUIRED = sorted(
    name
    for name, field in PlatformConfig.model_fields.items()
    if re.search(r"\brequired (with|when)\b", field.description or "", re.IGNORECASE)
)
CASES = [
    pytest.param(stack, section, id=f"{stack}-without-{section}")
    for stack in STACKS
    for section in REQUIRED
    if f"{NS}:{section}" in stack_file_config(stack)
]


def test_the_required_sections_are_found_and_dropped_somewhere():
    assert REQUIRED == ["aws", "existing", "fabric"]
    assert {section for _, section in (c.values for c in CASES)} == set(REQUIRED)


@pytest.mark.parametrize(("stack", "section"), CASES)
def test_a_missing_required_section_is_reported_before_any_reference_into_it(
    tmp_path, monkeypatch, capsys, stack, section
):
    config = stack_file_config(stack)
    del config[f"{NS}:{section}"]
    code, output = plan_bad(tmp_path, monkeypatch, capsys, config)
    assert code == 2, output
    problems = [line for line in output.splitlines() if line.startswith("  - ")]
    assert output.startswith(f"{SOURCE}: invalid gpu-platform configuration"), output
    assert any(
        line.startswith(f"  - {NS}:{section}: required") or f"add a {section} section" in line
        for line in problems
    ), output
    # No dangling reference: the names the section would declare are not looked up yet.
    assert not [line for line in problems if re.search(r"' is not (a|an) ", line)], output
