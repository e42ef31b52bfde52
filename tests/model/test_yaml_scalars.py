"""Every YAML 1.1 implicit type, read as Pulumi's CLI reads a stack file, and handed to the program
as the CLI hands it.

Pulumi 3.x parses stack files with go-yaml v3.0.1 (pulumi/pulumi sdk/go.mod; encoding/marshal.go).
Each row is a plain scalar of one of YAML 1.1's implicit types (yaml.org/type: bool, int, float,
null, timestamp, merge, value; PyYAML's resolver list is the same set), with what go-yaml v3.0.1
decodes it to, written from its resolve.go at tag v3.0.1 (commit f6f7691b): resolveMapList for
the words, resolveTable for which rules a first character opens, strconv.ParseInt(plain, 0, 64)
then ParseUint then yamlStyleFloat for numbers (every `_` dropped first), parseTimestamp's
allowedTimestampFormats for timestamps. A timestamp reaches the program as Go's
time.Time.String() (pulumi sdk/go/common/resource/config/object.go, unmarshalObject)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from model.config import config_from_pulumi
from model.config.loading import read_yaml
from model.stacks import read_project, read_stack_config
from tests.conftest import make_project
from tests.helpers.bad_stacks import NS, assert_refused, plan_bad

NAN = "NaN"  # NaN equals nothing, itself included: compared by math.isnan
YAML11 = "tag:yaml.org,2002:"

# (plain scalar, its YAML 1.1 type, what go-yaml v3.0.1 decodes, why)
TABLE = [
    # bool (yaml.org/type/bool.html): resolveMapList has only the true / false spellings.
    ("true", "bool", True, "resolveMapList: true"),
    ("True", "bool", True, "resolveMapList: True"),
    ("TRUE", "bool", True, "resolveMapList: TRUE"),
    ("false", "bool", False, "resolveMapList: false"),
    ("FALSE", "bool", False, "resolveMapList: FALSE"),
    ("yes", "bool", "yes", "'y' is a map hint; yes is not in the map"),
    ("No", "bool", "No", "not in the map"),
    ("on", "bool", "on", "not in the map"),
    ("OFF", "bool", "OFF", "not in the map"),
    ("y", "bool", "y", "not in the map"),
    ("N", "bool", "N", "not in the map"),
    # int (yaml.org/type/int.html): ParseInt with base 0 after dropping every `_`.
    ("685230", "int", 685230, "decimal"),
    ("+685_230", "int", 685230, "_ dropped, + sign taken by ParseInt"),
    ("-17", "int", -17, "decimal, signed"),
    ("0x_0A_74_AE", "int", 685230, "0x prefix"),
    ("0b1010_0111_0100_1010_1110", "int", 685230, "0b prefix"),
    ("02472256", "int", 685230, "a leading 0 is still octal in v3 (resolve.go: 'still decoded')"),
    ("0o17", "int", 15, "0o prefix (YAML 1.2 octal), which YAML 1.1 leaves a string"),
    ("0O17", "int", 15, "ParseInt lowercases the prefix letter"),
    ("0789", "int", 789.0, "not octal, so ParseInt fails; yamlStyleFloat matches: a float"),
    ("190:20:30", "int", "190:20:30", "base 60 was dropped: 'purposefully unsupported'"),
    ("1:30", "int", "1:30", "base 60, a clock time: a string"),
    ("9223372036854775807", "int", 9223372036854775807, "the largest int64"),
    ("18446744073709551615", "int", 18446744073709551615, "past int64: ParseUint"),
    ("-9223372036854775809", "int", -9.223372036854776e18, "past int64, signed: a float"),
    ("99999999999999999999", "int", 1e20, "past uint64: yamlStyleFloat, a float"),
    ("0x", "int", "0x", "no digits: ParseInt fails, and no float: a string"),
    # float (yaml.org/type/float.html)
    ("6.8523015e+5", "float", 685230.15, "yamlStyleFloat"),
    ("685.230_15e+03", "float", 685230.15, "_ dropped"),
    ("685_230.15", "float", 685230.15, "_ dropped"),
    ("1e3", "float", 1000.0, "yamlStyleFloat needs no point (YAML 1.1 does)"),
    ("1.", "float", 1.0, "yamlStyleFloat: digits, then a point"),
    (".5", "float", 0.5, "'.' hint: ParseFloat"),
    ("190:20:30.15", "float", "190:20:30.15", "base 60 float: a string"),
    ("1e999", "float", "1e999", "ParseFloat's range error: a string"),
    (".inf", "float", math.inf, "resolveMapList: .inf"),
    ("-.Inf", "float", -math.inf, "resolveMapList: -.Inf"),
    ("+.INF", "float", math.inf, "resolveMapList: +.INF"),
    (".NaN", "float", NAN, "resolveMapList: .NaN"),
    (".nAn", "float", ".nAn", "not in the map, not a float"),
    # null (yaml.org/type/null.html)
    ("~", "null", None, "resolveMapList: ~"),
    ("null", "null", None, "resolveMapList: null"),
    ("Null", "null", None, "resolveMapList: Null"),
    ("NULL", "null", None, "resolveMapList: NULL"),
    ("nULL", "null", "nULL", "not in the map"),
    # timestamp (yaml.org/type/timestamp.html): Go's layouts, then time.Time.String().
    ("2001-12-14", "timestamp", "2001-12-14 00:00:00 +0000 UTC", "layout 2006-1-2"),
    ("2001-12-14t21:59:43.10-05:00", "timestamp", "2001-12-14 21:59:43.1 -0500 -0500",
     "layout 2006-1-2t15:4:5.999999999Z07:00; a zone with no name prints as its offset"),
    ("2001-12-15T02:59:43.1Z", "timestamp", "2001-12-15 02:59:43.1 +0000 UTC",
     "layout 2006-1-2T15:4:5.999999999Z07:00"),
    ("2001-12-14 21:59:43.10", "timestamp", "2001-12-14 21:59:43.1 +0000 UTC",
     "layout 2006-1-2 15:4:5.999999999, no zone: UTC"),
    ("2001-12-14 21:59:43.10 -5", "timestamp", "2001-12-14 21:59:43.10 -5",
     "'Notable exception: time.Parse cannot handle' it: a string"),
    ("2001-2-3", "timestamp", "2001-02-03 00:00:00 +0000 UTC", "one-digit month and day"),
    ("2001-02-30", "timestamp", "2001-02-30", "no such day: a string"),
    ("2001-1\u0662-14", "timestamp", "2001-1\u0662-14", "Go's getnum reads ASCII digits only"),
    # merge and value (yaml.org/type/merge.html, value.html) as plain values: strings in v3.
    ("<<", "merge", "<<", "a merge key only as a key; '<' has no resolveTable hint"),
    ("=", "value", "=", "no value type in v3"),
]  # fmt: skip
CASES = [pytest.param(text, expected, id=text or "empty") for text, _, expected, _ in TABLE]


def read_text(tmp_path: Path, text: str):
    path = tmp_path / "doc.yaml"
    path.write_text(text)
    return read_yaml(path, "doc.yaml")


def same(got, expected) -> bool:
    if expected == NAN:
        return isinstance(got, float) and math.isnan(got)
    return type(got) is type(expected) and got == expected


def test_the_table_covers_every_yaml_11_implicit_type():
    """PyYAML's YAML 1.1 resolvers are the set to cover (the `yaml` tag is its own document
    marker, not a type a stack file can hold)."""
    implicit = {
        tag.removeprefix(YAML11)
        for resolvers in yaml.SafeLoader.yaml_implicit_resolvers.values()
        for tag, _ in resolvers
    }
    assert implicit - {"yaml"} == {kind for _, kind, _, _ in TABLE}


def test_the_table_differs_from_yaml_11_where_go_yaml_does():
    """The rows are not PyYAML's reading: at least one row of each of bool, int, float, merge,
    value and timestamp reads otherwise under YAML 1.1 (or is refused there)."""

    def yaml_11(text):
        try:
            return yaml.safe_load(f"a: {text}\n")["a"]
        except (yaml.YAMLError, ValueError):  # 2001-02-30: PyYAML's date() raises
            return "refused"

    differs = {kind for text, kind, want, _ in TABLE if not same(yaml_11(text), want)}
    assert differs == {"bool", "int", "float", "timestamp", "merge", "value"}


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_a_plain_scalar_reads_as_go_yaml_v3_reads_it(tmp_path, text, expected):
    got = read_text(tmp_path, f"a: {text}\nb: [{text}]\n")
    assert same(got["a"], expected), got
    assert same(got["b"][0], expected), got


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_a_quoted_scalar_is_always_its_text(tmp_path, text, expected):
    assert read_text(tmp_path, f"a: '{text}'\nb: \"{text}\"\n") == {"a": text, "b": text}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!!int 0x10", 16),
        ("!!float 1", 1.0),  # resolve.go: an int under !!float becomes a float
        ("!!str 0o17", "0o17"),
        ("!!bool true", True),
        ("!!null ~", None),
        ("!!timestamp 2001-12-14", "2001-12-14 00:00:00 +0000 UTC"),
        ("!!binary aGVsbG8=", "hello"),
        ("!custom 12", "12"),  # a tag go-yaml does not know keeps the text
        ("! 12", 12),  # the non-specific tag on a plain scalar: resolved (parser.node)
        ("! '12'", "12"),  # ... on a quoted one: a string
    ],
)
def test_an_explicit_tag_reads_as_go_yaml_v3_reads_it(tmp_path, text, expected):
    assert same(read_text(tmp_path, f"a: {text}\n")["a"], expected)


def test_a_merge_key_merges_and_the_mappings_own_keys_win(tmp_path):
    doc = read_text(tmp_path, "base: &b {x: 1, y: 2}\nother: {<<: *b, y: 3}\n")
    assert doc["other"] == {"x": 1, "y": 3}


def test_an_explicit_tag_a_value_does_not_fit_is_refused_with_its_line(tmp_path):
    with pytest.raises(Exception, match=r"line 2, column 4: not valid YAML: cannot decode "
                       r"!!float `1.5` as a !!int"):  # fmt: skip
        read_text(tmp_path, "a: 1\nb: !!int 1.5\n")


# ------------------------------------------------------------------------- to the program

HANDED = """\
config:
  gpu-platform:aws:
    region: us-east-1
    zones: [us-east-1a, us-east-1b]
    tags: {window: 1:30, created: 2024-01-31}
  gpu-platform:cluster:
    admin_principal_arns: ["arn:aws:iam::210987654321:role/platform-admins"]
    api_access_cidrs: [10.0.240.0/24]
  gpu-platform:alerts:
    queue_depth: 0o17
  gpu-platform:production: TRUE
  numbers: {ratio: 1.0, big: 1e20, mode: 0o17, small: 1.5e-7}
"""


def test_what_the_program_receives_is_what_pulumi_hands_it(tmp_path):
    """A stack written as a user would: the CLI hands the program each value as text
    (object.go, MarshalString): TRUE as `true`, 0o17 as 15, 1.0 as Go's JSON `1`, 1e20 as
    `100000000000000000000`, a date as Go's time.Time.String(), a clock time as itself."""
    root = make_project(tmp_path, {})
    (root / "stacks" / "Pulumi.s.yaml").write_text(HANDED)
    values, _ = read_stack_config(read_project(root), "s")
    assert values[f"{NS}:production"] == "true"
    assert values[f"{NS}:alerts"] == '{"queue_depth":15}'
    numbers = json.loads(values.pop(f"{NS}:numbers"))
    assert numbers == {"big": 100000000000000000000, "mode": 15, "ratio": 1, "small": 1.5e-7}
    assert [type(numbers[k]) for k in ("big", "ratio", "small")] == [int, int, float]
    cfg = config_from_pulumi(values, "stacks/Pulumi.s.yaml")
    assert cfg.production is True
    assert cfg.alerts.queue_depth == 15
    assert cfg.aws.tags["window"] == "1:30"
    assert cfg.aws.tags["created"] == "2024-01-31 00:00:00 +0000 UTC"


@pytest.mark.parametrize("text", [".inf", "-.Inf", ".nan"])
def test_a_number_json_cannot_carry_is_refused_at_its_key(tmp_path, monkeypatch, capsys, text):
    """encoding/json refuses ±Inf and NaN (json: unsupported value), so Pulumi refuses the stack
    file; the plan says so at the key, before anything is declared."""
    stack = f"config:\n  {NS}:alerts:\n    queue_depth: {text}\n"
    assert_refused(
        tmp_path, monkeypatch, capsys, stack, f"{NS}:alerts.queue_depth", "not a finite number",
        "write a number",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("key", "read_as"), [("80", "int 80"), ("true", "bool True"), ("~", "null None")]
)
def test_a_key_that_is_not_a_string_is_refused_with_its_line(
    tmp_path, monkeypatch, capsys, key, read_as
):
    """Pulumi refuses any mapping key that decodes to something but a string (workspace/
    project.go, SimplifyMarshalledValue: "expected only string keys")."""
    stack = f"config:\n  {NS}:aws:\n    region: us-east-1\n    tags:\n      {key}: x\n"
    code, output = plan_bad(tmp_path, monkeypatch, capsys, stack)
    assert code == 2, output
    assert f"line 5: key {key!r} is read as {read_as}, not a string" in output
    assert f"quote it, '{key}'" in output
