"""Where a module spells a string literal again: the class-of-defect check behind the shared
vocabulary (components/vocabulary.py) and the contract (contract/)."""

from __future__ import annotations

import ast
from pathlib import Path

from model.stacks import ROOT


def string_constants(path: Path) -> set[str]:
    """Every string constant in a module's code (docstrings and f-string pieces included, so a
    value pasted into prose is not counted: only an exact match is)."""
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def respelled(values: set[str], folders: tuple[str, ...], allowed: set[Path]) -> list[str]:
    """`<file>: <value>` for each value a module under `folders` writes as its own literal."""
    return sorted(
        f"{path.relative_to(ROOT)}: {value}"
        for folder in folders
        for path in (ROOT / folder).rglob("*.py")
        if path not in allowed
        for value in string_constants(path) & values
    )
