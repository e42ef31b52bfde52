"""A YAML scalar as Pulumi's CLI reads it, and a config value as the CLI hands it to the program.

Pulumi 3.x reads a stack file with go-yaml v3.0.1 (pulumi/pulumi sdk/go.mod; sdk/go/common/
encoding/marshal.go), whose resolve.go decides what a plain scalar is. It is neither YAML 1.1 (what
PyYAML implements) nor quite YAML 1.2:

- booleans are only true/True/TRUE and false/False/FALSE: yes, no, on, off, y, n are strings;
- null is the empty scalar, ~, null, Null, NULL;
- integers are whatever Go's strconv.ParseInt(text, 0, 64) takes once every `_` is dropped: 0x,
  0o, 0b, and a leading 0 still means octal (0755 is 493), then ParseUint's range; 0789, not
  octal, falls through to a float, 789.0;
- floats match `^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (no point needed: 1e3),
  or are .inf / .nan in three spellings; one out of float64's range stays a string;
- base-60 (1:30, 190:20:30.15), `=` and `<<` as a value are strings;
- a timestamp is 4 digits, `-`, then one of Go's layouts 2006-1-2T15:4:5.999999999Z07:00 (also
  with a lowercase t), 2006-1-2 15:4:5.999999999, 2006-1-2; it decodes to a Go time.Time, which
  Pulumi's config object turns into time.Time.String() (sdk/go/common/resource/config/
  object.go, unmarshalObject): `2001-12-14` reaches the program as "2001-12-14 00:00:00 +0000 UTC".

Pulumi then hands each top-level config value to the program as text (object.go, MarshalString):
a string as it is, a number or boolean as its JSON, a list or mapping as JSON (Go's encoding/json:
an integral float below 1e21 is written without a point, so the program reads 1.0 as 1). JSON has
no infinity or NaN, so a stack file holding one is refused ("json: unsupported value: +Inf").
"""

from __future__ import annotations

import base64
import calendar
import json
import math
import re
from decimal import Decimal
from typing import Any

NULL, BOOL, STR, INT, FLOAT = "!!null", "!!bool", "!!str", "!!int", "!!float"
TIMESTAMP, BINARY, MERGE = "!!timestamp", "!!binary", "!!merge"
LONG_PREFIX = "tag:yaml.org,2002:"
# resolve.go, resolvableTag: the tags resolve() decides; any other tag keeps the text.
RESOLVABLE = ("", STR, BOOL, INT, FLOAT, NULL, TIMESTAMP)

# resolve.go, resolveMapList.
WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("true", "True", "TRUE"), (BOOL, True)),
    **dict.fromkeys(("false", "False", "FALSE"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, -math.inf)),
    # The list's "<<" is never looked up ('<' has no resolveTable hint): a plain << is a merge
    # key only because the parser tags it so (decode.go, parser.scalar).
}
# resolve.go, resolveTable: the first character decides which rules apply at all.
_MAP_FIRST = set("yYnNtTfFoO~")
_NUMBER_FIRST = set("+-0123456789")
YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
INT64 = (-(2**63), 2**63 - 1)
UINT64_MAX = 2**64 - 1


class ScalarError(ValueError):
    """A scalar go-yaml refuses (an explicit tag its text does not fit)."""


def short_tag(tag: str | None) -> str:
    if tag and tag.startswith(LONG_PREFIX):
        return "!!" + tag[len(LONG_PREFIX) :]
    return tag or ""


def _go_uint(text: str) -> int | None:
    """strconv.ParseUint(text, 0, 64): no sign; 0b, 0o, 0x prefixes (len >= 3), else a leading 0
    is octal (atoi.go)."""
    base, digits = 10, text
    if text[:1] == "0":
        prefixes = {"b": 2, "o": 8, "x": 16}
        if len(text) >= 3 and text[1].lower() in prefixes:
            base, digits = prefixes[text[1].lower()], text[2:]
        else:
            base, digits = 8, text[1:]
    if digits == "" and base == 8:
        return 0
    alphabet = "0123456789abcdef"[:base]
    if not digits or any(c.lower() not in alphabet for c in digits):
        return None
    value = int(digits, base)
    return value if value <= UINT64_MAX else None


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64): an optional sign, then ParseUint's digits, in int64."""
    sign, rest = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    if not rest:
        return None
    magnitude = _go_uint(rest)
    if magnitude is None:
        return None
    value = sign * magnitude
    return value if INT64[0] <= value <= INT64[1] else None


def _go_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64) on the decimal text resolve.go gives it (it starts with a
    point, or matches YAML_STYLE_FLOAT): Python's float() reads the same digits and `_`
    between digits (atof.go, underscoreOK); None where Go reports a range error (±Inf)."""
    if not text.isascii():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isinf(value) else value


def resolve(tag: str, text: str) -> tuple[str, Any]:
    """resolve.go's resolve(tag, in): the tag a scalar resolves to and its value, for an untagged
    plain scalar (tag "") or one with an explicit tag."""
    tag = short_tag(tag)
    if tag not in RESOLVABLE:
        return tag, text
    rtag, value = _resolve(tag, text)
    if tag in ("", rtag, STR):
        return rtag, value
    if tag == FLOAT and rtag == INT:
        return FLOAT, float(value)
    raise ScalarError(f"cannot decode {rtag} `{text}` as a {tag}")


def _resolve(tag: str, text: str) -> tuple[str, Any]:
    first = text[:1]
    hinted = text == "" or first in _MAP_FIRST or first in _NUMBER_FIRST or first == "."
    if not hinted or tag == STR:
        return STR, text
    if text in WORDS:
        return WORDS[text]
    if first == ".":
        value = _go_float(text)
        return (FLOAT, value) if value is not None else (STR, text)
    if first not in _NUMBER_FIRST:
        return STR, text
    if tag in ("", TIMESTAMP):
        stamp = go_timestamp(text)
        if stamp is not None:
            return TIMESTAMP, stamp
    plain = text.replace("_", "")
    for parse in (_go_int, _go_uint):
        number = parse(plain)
        if number is not None:
            return INT, number
    if YAML_STYLE_FLOAT.fullmatch(plain):
        value = _go_float(plain)
        if value is not None:
            return FLOAT, value
    # resolve.go's own -0b / -0o branches after ParseInt: ParseInt already reads 0b and 0o.
    return STR, text


def decode_binary(text: str) -> str:
    """A !!binary scalar: base64.StdEncoding (which skips line breaks), its bytes as a Go string,
    as encoding/json writes it (invalid UTF-8 as U+FFFD)."""
    try:
        data = base64.b64decode(re.sub(r"[\r\n]", "", text), validate=True)
    except ValueError:
        raise ScalarError("!!binary value contains invalid base64 data") from None
    return data.decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------ timestamps

# Go's time.Parse with the layouts of resolve.go's allowedTimestampFormats: 1- or 2-digit
# fields (getnum), any number of fraction digits after . or , (nine kept), runs of spaces for the
# layout's one space, Z or ±hh:mm (stdISO8601ColonTZ); ASCII digits only, as Go reads them.
_DATE = r"(?P<y>[0-9]{4})-(?P<mo>[0-9][0-9]?)-(?P<d>[0-9][0-9]?)"
_TIME = r"(?P<h>[0-9][0-9]?):(?P<mi>[0-9][0-9]?):(?P<s>[0-9][0-9]?)(?:[.,](?P<f>[0-9]+))?"
_STAMP_FORMATS = (
    re.compile(rf"{_DATE}[Tt]{_TIME}(?P<z>Z|[+-][0-9][0-9]:[0-9][0-9])"),
    re.compile(rf"{_DATE} +{_TIME}"),
    re.compile(_DATE),
)


def go_timestamp(text: str) -> str | None:
    """The text Pulumi hands over for a timestamp scalar, time.Time.String() of what
    resolve.go's parseTimestamp returns, or None where it is not one. Pulumi re-reads the
    stack through YAML once (workspace/loaders.go), which keeps the time and its offset.
    A zone offset is printed as Go does when the runner's local zone is UTC (a CI runner):
    +0000 UTC, or a fabricated zone with no name, printed as its offset."""
    found = next((m for m in (f.fullmatch(text) for f in _STAMP_FORMATS) if m), None)
    if found is None:
        return None
    parts = found.groupdict()
    year, month, day = int(parts["y"]), int(parts["mo"]), int(parts["d"])
    hour, minute, second = (int(parts.get(k) or 0) for k in ("h", "mi", "s"))
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    offset = 0
    zone = parts.get("z") or "Z"
    if zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 24 or minutes > 60:
            return None
        offset = (hours * 60 + minutes) * 60 * (-1 if zone[0] == "-" else 1)
    fraction = (parts.get("f") or "")[:9].ljust(9, "0").rstrip("0")
    sign = "-" if offset < 0 else "+"
    numeric = f"{sign}{abs(offset) // 3600:02d}{abs(offset) // 60 % 60:02d}"
    name = "UTC" if offset == 0 else numeric
    return (
        f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
        f"{'.' + fraction if fraction else ''} {numeric} {name}"
    )


# ------------------------------------------------------------------------ to the program


def not_finite(value: Any, path: str) -> list[str]:
    """The paths of every infinity or NaN in `value`, which Pulumi's JSON cannot carry."""
    if isinstance(value, float) and not math.isfinite(value):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in not_finite(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in not_finite(v, f"{path}[{i}]")]
    return []


def _as_go_json_reads(value: Any) -> Any:
    """`value` as Python reads back Go's JSON of it: Go writes an integral float below 1e21 in
    plain digits (encoding/json floatEncoder, 'f' format, shortest digits), which is an int."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(Decimal(repr(value)))
    if isinstance(value, dict):
        return {k: _as_go_json_reads(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_go_json_reads(v) for v in value]
    return value


def program_text(value: Any) -> str:
    """A config value as the CLI hands it to the program (config.object MarshalString): a
    string as it is, anything else as JSON, map keys sorted as Go writes them."""
    if isinstance(value, str):
        return value
    return json.dumps(
        _as_go_json_reads(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
