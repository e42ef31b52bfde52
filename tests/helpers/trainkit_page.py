"""docs/trainkit.md as a reader copies it: the plain DDP script and the same script with trainkit
(its first two ```python blocks, in that order), its shell commands (each ```sh block's lines)
and the Dockerfile lines that install the wheel (its ```dockerfile block), for the tests that
run them (tests/cluster/test_trainkit_wheel.py) and check them (tests/docs/test_trainkit_page.py).
"""

from __future__ import annotations

import re

from model.stacks import ROOT

PAGE = ROOT / "docs" / "trainkit.md"


def blocks(language: str) -> list[str]:
    """Every fenced block of the page in `language`, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(), flags=re.M | re.S)


def scripts() -> tuple[str, str]:
    """(the plain DDP script, the same script with trainkit)."""
    before, after = blocks("python")
    return before, after


def commands() -> list[str]:
    """Every shell command of the page (one a line, none continued)."""
    return [line for block in blocks("sh") for line in block.splitlines() if line.strip()]


def dockerfile() -> str:
    (text,) = blocks("dockerfile")
    return text
