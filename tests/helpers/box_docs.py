"""The commands of README.md and docs/*.md that render or submit a job (`python -m jobs submit`,
`python -m jobs recipe`), as a reader copies them: each ```sh / ```bash block split into
commands (a trailing `\\` continues the line, `# ...` ends it), the placeholders the docs write
(`<64 hex>`) given a value of their shape.

A command the docs show being refused carries the comment `# refused: <part of the reason>`
(as YAML snippets do, tests/docs/test_doc_snippets.py): it must exit 2 at render time with
that text."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from model.stacks import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```(?:sh|bash|console)[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
JOB_COMMAND = re.compile(r"(?:^|\s)(?:\S*python3?) -m jobs (submit|recipe)\b")
REFUSED = re.compile(r"#\s*refused:\s*(.+)$")
# The docs' placeholders and a value of the shape each stands for.
PLACEHOLDERS = {"<64 hex>": "0" * 64}


@dataclass(frozen=True)
class DocCommand:
    path: Path
    line: int
    words: tuple[str, ...]  # after `python -m jobs`
    refused: str | None

    @property
    def where(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{self.line}"

    @property
    def kind(self) -> str:
        return self.words[0]

    def __str__(self) -> str:
        return f"{self.where}: python -m jobs {shlex.join(self.words)}"


def doc_commands(paths: list[Path] = DOCS) -> list[DocCommand]:
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            first = text.count("\n", 0, block.start()) + 2
            logical, start = "", first
            for offset, raw in enumerate(block.group(1).splitlines()):
                if not logical:
                    start = first + offset
                if raw.rstrip().endswith("\\"):
                    logical += raw.rstrip()[:-1] + " "
                    continue
                logical += raw
                command, logical = logical, ""
                if JOB_COMMAND.search(command):
                    found.append(_parse(path, start, command))
    return found


def _parse(path: Path, line: int, command: str) -> DocCommand:
    refused = REFUSED.search(command)
    for placeholder, value in PLACEHOLDERS.items():
        command = command.replace(placeholder, value)
    unknown = re.findall(r"<[^<>]+>", command.split("#", 1)[0])
    if unknown:
        raise AssertionError(
            f"{DocCommand(path, line, (), None).where}: placeholder(s) {unknown} have no value in "
            "tests/helpers/box_docs.py PLACEHOLDERS"
        )
    words = shlex.split(command, comments=True)
    at = words.index("-m")
    assert words[at + 1] == "jobs", command
    return DocCommand(path, line, tuple(words[at + 2 :]), refused.group(1) if refused else None)
