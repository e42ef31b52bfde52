"""Launch-template user data in a diff: decoded, MIME part by MIME part, as lines a reviewer can
read (`maxPods: 110` -> `maxPods: 64`), instead of two base64 blobs.

The decoding is the one `--detail` shows (plan/review.decode_user_data). Decoded text may
carry what base64 used to hide from a casual reader, so a line that sets a key named like a
password, secret or token shows that value as (secret), as every other value in the diff does.
"""

from __future__ import annotations

import difflib
import re

from model.stacks import SECRET
from plan.diff import SECRET_KEY
from plan.review import decode_user_data

# The header decode_user_data writes before each MIME part.
_PART = "--- part: "
# `KEY=value`, `key: value`, `export KEY=value`: the key, then the value.
_ASSIGNMENT = re.compile(r"^(\s*(?:export\s+)?([\w.-]+)\s*[:=]\s*)\S.*$")


def parts(encoded: str) -> list[tuple[str, list[str]]]:
    """(content type, lines) for each MIME part; user data that is not a MIME multi-part
    document is one part, `text`."""
    found: list[tuple[str, list[str]]] = []
    for line in decode_user_data(encoded).splitlines():
        if line.startswith(_PART):
            found.append((line.removeprefix(_PART), []))
        elif found:
            found[-1][1].append(line)
        else:
            found.append(("text", [line]))
    return found


def masked_line(line: str) -> str:
    match = _ASSIGNMENT.match(line)
    if match and SECRET_KEY.search(match.group(2)):
        return match.group(1) + SECRET
    return line


def userdata_lines(before: str, after: str) -> list[str]:
    """The changed lines of each MIME part, with their line numbers in the part, as
    `unified diff` hunks without context: a part added or removed shows in full."""
    old, new = parts(before), parts(after)
    lines = []
    for index in range(max(len(old), len(new))):
        kind_a, text_a = old[index] if index < len(old) else ("(absent)", [])
        kind_b, text_b = new[index] if index < len(new) else ("(absent)", [])
        if kind_a == kind_b and text_a == text_b:
            continue
        a = [masked_line(x) for x in text_a]
        b = [masked_line(x) for x in text_b]
        kind = kind_a if kind_a == kind_b else f"{kind_a} -> {kind_b}"
        lines.append(f"MIME part {index + 1} ({kind}):")
        # The first two lines are unified_diff's file headers; the heading above names the part.
        hunks = list(difflib.unified_diff(a, b, lineterm="", n=0))[2:]
        lines += hunks or ["(only a masked value changed)"]
    return lines
