"""Every YAML config snippet in README.md and docs/*.md loads through the config model.

A snippet an operator copies into a stack file must be accepted, or the docs teach a refusal.
Each ```yaml block is read as the stack loader reads a stack file (duplicate keys, namespaces,
values as the CLI hands them over), then validated by the model. Most snippets show one section:
they are laid over a minimal valid stack (the smallest one the model accepts, AWS unless the
snippet says `provider: existing`), mapping into mapping, so `cluster: {public_access_cidrs}`
keeps the base's admin principal. A block of Kubernetes objects (`apiVersion` and `kind`) is not
stack config, and a block of comments only holds nothing to load.

A snippet that shows a config the model refuses, on purpose, starts with the marker line

    # refused: <part of the error the plan prints>

and the test checks that it is refused with that text, so the marker cannot hide a snippet that
has since become valid (or is refused for another reason).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from model.config import ConfigError, config_from_pulumi
from model.config.loading import read_stack_file
from model.stacks import ROOT, read_project, read_stack_config
from tests.conftest import make_project
from tests.helpers.bad_stacks import AWS, EXISTING, NS

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```ya?ml[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
REFUSED = re.compile(r"\A\s*# refused: (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # of the opening fence, 1-based
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def snippets(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    return [
        Snippet(path, text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)
    ]


def config_snippets() -> list[Snippet]:
    found = []
    for snippet in (s for path in DOCS for s in snippets(path)):
        doc = yaml.safe_load(snippet.text)
        if doc is None or (isinstance(doc, dict) and {"apiVersion", "kind"} <= set(doc)):
            continue
        found.append(snippet)
    return found


def as_stack_file(snippet: Snippet) -> str:
    """The snippet as a stack file: a whole one as it is, keys of `config:` under one."""
    body = textwrap.dedent(snippet.text)
    doc = yaml.safe_load(body)
    if isinstance(doc, dict) and "config" in doc:
        return body
    return "config:\n" + textwrap.indent(body, "  ")


def overlay(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            value = overlay(merged[key], value)
        merged[key] = value
    return merged


def load(snippet: Snippet, tmp_path: Path):
    """The config the plan would read from a stack made of the minimal stack and the snippet;
    ConfigError names the README line, not the temporary file."""
    source = snippet.where
    raw = tmp_path / "snippet.yaml"
    raw.write_text(as_stack_file(snippet), encoding="utf-8")
    keys = read_stack_file(raw, source, NS)
    existing = str(keys.get(f"{NS}:provider")) == "existing"
    (tmp_path / "project").mkdir()
    root = make_project(tmp_path / "project", {"doc": overlay(EXISTING if existing else AWS, keys)})
    values, _ = read_stack_config(read_project(root), "doc")
    return config_from_pulumi(values, source)


SNIPPETS = config_snippets()


def test_the_docs_hold_config_snippets_to_check():
    # The topic pages have a snippet per plane (node groups, storage, scheduling, policy, cost,
    # recipes): finding none means the pattern broke, not that the docs are clean.
    assert len(SNIPPETS) >= 8, [s.where for s in SNIPPETS]
    pages = {"gpu-nodes.md", "storage.md", "scheduling.md", "review.md", "training.md"}
    assert {s.path.name for s in SNIPPETS} >= pages


def test_the_minimal_stack_the_snippets_are_laid_over_is_valid(tmp_path):
    for i, base in enumerate((AWS, EXISTING)):
        (tmp_path / str(i)).mkdir()
        root = make_project(tmp_path / str(i), {"doc": base})
        config_from_pulumi(read_stack_config(read_project(root), "doc")[0], "minimal")


def problem(snippet: Snippet, tmp_path: Path) -> str | None:
    """What is wrong with the snippet, naming its file and line; None when it is right."""
    marker = REFUSED.match(snippet.text)
    try:
        load(snippet, tmp_path)
        refused = None
    except ConfigError as error:
        refused = str(error)
    if marker is None:
        return refused and f"the config model refuses a snippet of the docs:\n{refused}"
    expected = marker.group(1).strip()
    if refused is None or expected not in refused:
        return (
            f"{snippet.where}: marked `# refused: {expected}`, but the model says: "
            f"{refused or 'nothing, it accepts the snippet'}"
        )
    return None


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.where for s in SNIPPETS])
def test_every_yaml_config_snippet_in_the_docs_loads_through_the_config_model(snippet, tmp_path):
    assert problem(snippet, tmp_path) is None


# The README's Policies example once set policy.monthly_budget_usd, a key of `cost`.
BUDGET_IN_POLICY = "  gpu-platform:policy:\n    monthly_budget_usd: 250000\n"


def test_a_wrong_snippet_is_reported_with_its_file_line_and_error(tmp_path):
    found = problem(Snippet(ROOT / "README.md", 1321, BUDGET_IN_POLICY), tmp_path)
    assert found is not None
    assert "README.md:1321: invalid gpu-platform configuration" in found
    assert "gpu-platform:policy.monthly_budget_usd: unknown key" in found


@pytest.mark.parametrize(
    ("marker", "body", "right"),
    [
        ("policy.monthly_budget_usd: unknown key", BUDGET_IN_POLICY, True),
        # Refused, but not for the reason the docs give.
        ("gpu-platform:cost", BUDGET_IN_POLICY, False),
        # Marked as refused, yet the model accepts it.
        ("unknown key", "  gpu-platform:cost:\n    monthly_budget_usd: 250000\n", False),
    ],
    ids=["refused-as-marked", "refused-otherwise", "accepted"],
)
def test_a_refused_marker_holds_only_when_the_model_refuses_with_that_text(
    marker, body, right, tmp_path
):
    snippet = Snippet(ROOT / "docs" / "example.md", 7, f"  # refused: {marker}\n{body}")
    assert (problem(snippet, tmp_path) is None) is right
