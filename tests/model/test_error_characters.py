"""A key or value echoed in a config error shows what the stack file holds: a control
character, a zero-width space or a bidirectional override would otherwise print nothing, or
reorder the line, and `unknown key` would name a key that looks valid. Every refused stack's
output is printable, with each such character escaped as Python's repr writes it."""

from __future__ import annotations

import pytest

from tests.helpers.bad_stacks import aws, plan_bad

# A control character (BEL, ESC), zero-width (ZERO WIDTH SPACE, ZERO WIDTH JOINER, BOM) and
# bidirectional characters (RIGHT-TO-LEFT OVERRIDE, LEFT-TO-RIGHT ISOLATE), and a no-break
# space, each with its escape as repr writes it (Unicode: Cc, Cf and Zs other than the space
# are not printable, Python str.isprintable).
CHARACTERS = {
    "\x07": "\\x07",
    "\x1b": "\\x1b",
    "\u200b": "\\u200b",
    "\u200d": "\\u200d",
    "\ufeff": "\\ufeff",
    "\u202e": "\\u202e",
    "\u2066": "\\u2066",
    "\xa0": "\\xa0",
}


def where_echoed(c: str) -> dict[str, dict]:
    """Stacks whose error echoes `c`: in an unknown key, a namespace, a value a type check
    refuses, and a value a cross-field rule names."""
    return {
        "unknown key": aws(observability={f"retention{c}days": 3}),
        "namespace": {**aws(), f"gpu-plat{c}form:aws": {"region": "us-east-1"}},
        "refused value": aws(namespaces={"training": f"train{c}ing"}),
        "named in a rule": aws(
            aws={"region": "us-east-1", "zones": [f"us-east-1a{c}", "us-east-1b"]}
        ),
    }


@pytest.mark.parametrize("where", ["unknown key", "namespace", "refused value", "named in a rule"])
@pytest.mark.parametrize("character", CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_an_error_escapes_what_would_print_nothing(tmp_path, monkeypatch, capsys, character, where):
    code, output = plan_bad(tmp_path, monkeypatch, capsys, where_echoed(character)[where])
    assert code == 2, output
    hidden = [line for line in output.splitlines() if not line.isprintable()]
    assert hidden == [], f"{where}: printed raw: {[ascii(line) for line in hidden]}"
    assert CHARACTERS[character] in output, output
