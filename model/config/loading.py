"""Reading config the way Pulumi does, and saying what is wrong with it in words.

A stack file is YAML, but Pulumi reads it more strictly than YAML allows: a key given twice is an
error (YAML's last-wins would silently drop a block), a key without a namespace belongs to the
project (`cluster:` is `gpu-platform:cluster`), and every value reaches the program as a string.
Pulumi parses it with go-yaml v3, whose rules (model/config/yaml_scalars.py) are not YAML 1.1's:
`mode: off` is the string "off", where PyYAML would read false, `1:30` a string, not 90, `0o17`
the number 15, not a string.
Keys of other namespaces (`aws:region`, `kubernetes:context`) configure Pulumi's default
providers, which this project never uses: it declares its own, from `gpu-platform:` keys, so such
a key is refused with the key to set instead.
"""

from __future__ import annotations

import copy
import difflib
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from model.config.base import NAMESPACE, ConfigError, FieldProblem, FieldProblems
from model.config.yaml_scalars import (
    BINARY,
    BOOL,
    FLOAT,
    INT,
    LONG_PREFIX,
    MERGE,
    NULL,
    STR,
    TIMESTAMP,
    ScalarError,
    decode_binary,
    not_finite,
    resolve,
    short_tag,
)

# Namespaces read without complaint: ours, and the engine's own (`pulumi:disable-default-
# providers`, `pulumi:tags`).
READ_NAMESPACES = (NAMESPACE, "pulumi")
# What a key of another provider's namespace means here: the key this project reads instead.
INSTEAD: dict[str, str] = {
    "aws:region": f"{NAMESPACE}:aws.region",
    "aws:defaultTags": f"{NAMESPACE}:aws.tags",
    "aws:profile": "AWS_PROFILE in the environment of `pulumi up`",
    "aws:accessKey": "AWS_ACCESS_KEY_ID in the environment of `pulumi up`",
    "aws:secretKey": "AWS_SECRET_ACCESS_KEY in the environment of `pulumi up`",
    "kubernetes:context": f"{NAMESPACE}:existing.context",
    "kubernetes:kubeconfig": f"{NAMESPACE}:existing.kubeconfig_path, or {NAMESPACE}:existing."
    "kubeconfig as a secret",
}
INSTEAD_BY_NAMESPACE: dict[str, str] = {
    "aws": f"{NAMESPACE}:aws (region, tags); credentials from the environment of `pulumi up`",
    "kubernetes": f"{NAMESPACE}:existing on an existing cluster; on AWS the provider comes from "
    "the EKS cluster the stack declares",
}


# ----------------------------------------------------------------------------- stack files


# A plain scalar's tag until go-yaml's rules resolve it (no stack file can spell it: it is not
# a tag of the YAML tag syntax's form).
PLAIN = "gpu-platform plain scalar"
LONG_MERGE, LONG_STR = f"{LONG_PREFIX}merge", f"{LONG_PREFIX}str"
# Decoded to something other than a Go string: Pulumi refuses such a mapping key
# (workspace/project.go, SimplifyMarshalledValue: "expected only string keys").
NOT_A_STRING = (INT, FLOAT, BOOL, NULL, TIMESTAMP)


class StackFileLoader(yaml.CSafeLoader):
    """YAML as Pulumi's CLI reads it (go-yaml v3.0.1; model/config/yaml_scalars.py): every
    scalar resolved by go-yaml's rules, not PyYAML's YAML 1.1 ones; a key given twice in one
    mapping, or one that is not a string, recorded with its line. libyaml parses, as go-yaml's
    port of it does, so a syntax error reads as Pulumi's would."""

    # Nothing of PyYAML's YAML 1.1 schema: one constructor decides every node.
    yaml_constructors: typing.ClassVar = {}

    def __init__(self, stream: str):
        super().__init__(stream)
        self.problems: list[str] = []

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # go-yaml's parser (decode.go, parser.node): an untagged or `!` scalar is resolved
        # when plain and a string when quoted or a block; a plain << is a merge key.
        if kind is not ScalarNode:
            return super().resolve(kind, value, implicit)
        if implicit[0]:
            return LONG_MERGE if value == "<<" else PLAIN
        return LONG_STR

    @staticmethod
    def tag(node: ScalarNode) -> str:
        """The node's tag as go-yaml sets it: libyaml also calls `! "12"` plain, go-yaml a
        string (its style is quoted)."""
        if node.tag in (PLAIN, LONG_MERGE) and node.style not in ("", None):
            return LONG_STR
        return node.tag

    def scalar(self, node: ScalarNode) -> tuple[str, Any]:
        """decode.go, decoder.scalar: the tag and value go-yaml decodes into an interface{}."""
        tag = "" if self.tag(node) == PLAIN else short_tag(self.tag(node))
        if tag == MERGE:
            return STR, node.value
        try:
            if tag == BINARY:
                return STR, decode_binary(node.value)
            return resolve(tag, node.value)
        except ScalarError as error:
            raise ConstructorError(None, None, str(error), node.start_mark) from None

    def construct_go(self, node: yaml.Node) -> Any:
        """Any node, by its kind: go-yaml decodes collections whatever their tag, and a scalar
        of a tag it does not know as its text."""
        if isinstance(node, ScalarNode):
            return self.scalar(node)[1]
        if isinstance(node, SequenceNode):
            return [self.construct_object(item, deep=True) for item in node.value]
        self.check_keys(node)
        for key, _ in node.value:
            if isinstance(key, ScalarNode):
                key.tag = self.tag(key)
        self.flatten_mapping(node)
        return {
            self.construct_object(key, deep=True): self.construct_object(value, deep=True)
            for key, value in node.value
        }

    def check_keys(self, node: MappingNode) -> None:
        # go-yaml's uniqueKeys compares the keys' text (decode.go, decoder.mapping).
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode):
                self.problems.append(
                    f"line {line}: a {key_node.id} as a key; Pulumi takes only string keys"
                )
                continue
            text = key_node.value
            if text in seen:
                self.problems.append(
                    f"line {line}: key {text!r} is given twice (first on line {seen[text]}); "
                    "Pulumi refuses a repeated key, and YAML would keep only the last"
                )
            seen.setdefault(text, line)
            tag, value = self.scalar(key_node)
            if tag in NOT_A_STRING:
                self.problems.append(
                    f"line {line}: key {text!r} is read as {tag.removeprefix('!!')} {value!r}, "
                    "not a string; Pulumi takes only string keys (expected only string keys): "
                    f"quote it, '{text}'"
                )


StackFileLoader.add_constructor(None, StackFileLoader.construct_go)


def read_yaml(path: Path, source: str) -> Any:
    """The document in `path`, or ConfigError naming `source`, the line and the problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(source, [f"cannot be read: {error.strerror}"]) from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            source, [f"byte offset {error.start}: not UTF-8 text; a stack file is UTF-8 YAML"]
        ) from None
    loader = StackFileLoader(text)
    try:
        doc = loader.get_single_data()
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(
            part
            for part in (getattr(error, "problem", None), getattr(error, "context", None))
            if part
        )
        raise ConfigError(source, [f"{where}not valid YAML: {what or error}"]) from None
    finally:
        loader.dispose()
    if loader.problems:
        raise ConfigError(source, loader.problems)
    return doc


def read_stack_file(path: Path, source: str, project: str) -> dict[str, Any]:
    """The `config:` of a stack file, every key with its namespace, as Pulumi reads it."""
    doc = read_yaml(path, source)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(
            source, [f"the file holds a {_kind(doc)}; a stack file is a mapping with a config: key"]
        )
    config = doc.get("config")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ConfigError(
            source,
            [f"config: holds a {_kind(config)}; it must be a mapping of namespace:key to value"],
        )
    found: dict[str, Any] = {}
    written: dict[str, str] = {}
    problems = []
    for key, value in config.items():
        # Pulumi reads a key without a namespace as the project's own.
        full = str(key) if ":" in str(key) else f"{project}:{key}"
        if full in found:
            problems.append(
                f"{full}: given twice, as {written[full]!r} and as {key!r}; a key without a "
                f"namespace belongs to the project ({project}), so keep one of them"
            )
        found[full], written[full] = value, str(key)
        problems += [
            f"{path}: not a finite number (.inf or .nan); Pulumi hands config to the program "
            "as JSON, which has neither, and refuses the stack file (json: unsupported "
            "value); write a number, or quote it for a string"
            for path in not_finite(value, full)
        ]
    if problems:
        raise ConfigError(source, problems)
    return found


def _kind(value: Any) -> str:
    return {list: "list", str: "string"}.get(type(value), type(value).__name__)


# ------------------------------------------------------------------------------ namespaces


def split_namespaces(values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Our keys without their namespace, and a problem for each key of a namespace this
    project does not read."""
    ours, problems = {}, []
    for key, value in sorted(values.items()):
        namespace, _, name = key.partition(":")
        if namespace == NAMESPACE:
            ours[name] = value
        elif namespace in READ_NAMESPACES:
            continue
        elif key in INSTEAD or namespace in INSTEAD_BY_NAMESPACE:
            instead = INSTEAD.get(key) or INSTEAD_BY_NAMESPACE[namespace]
            # No value shown: a provider key may hold a credential.
            problems.append(
                f"{key}: not read: this project declares its own {namespace} provider, so "
                f"Pulumi's {namespace}: keys never reach it; set {instead}"
            )
        elif difflib.get_close_matches(namespace.lower(), [NAMESPACE], n=1, cutoff=0.7):
            problems.append(
                f"{key}: namespace {namespace!r} is not this project's; did you mean "
                f"{NAMESPACE}:{name}?"
            )
        else:
            problems.append(
                f"{key}: no part of this project reads {namespace}: keys; its keys are "
                f"{NAMESPACE}:<key> (a key without a namespace means the same)"
            )
    return ours, problems


# ---------------------------------------------------------------------- error descriptions


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def describe_all(error: dict[str, Any], root: type[BaseModel]) -> list[str]:
    """One pydantic error as its messages: one per problem a rule collected, else one."""
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, FieldProblems):
        return [describe({**error, "ctx": {"error": p}}, root) for p in cause.problems]
    return [describe(error, root)]


def describe(error: dict[str, Any], root: type[BaseModel]) -> str:
    """One pydantic error as `gpu-platform:<key path>: <what is wrong> (got <value>)`."""
    loc = tuple(error["loc"])
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, FieldProblem):
        loc += tuple(int(p) if p.isdigit() else p for p in re.split(r"\.|\[|\]", cause.field) if p)
        # A problem of no one key (a rule not checked) is the namespace's.
        return f"{NAMESPACE}:{_path(loc)}: {cause}" if loc else f"{NAMESPACE}: {cause}"
    path = f"{NAMESPACE}:{_path(loc)}" if loc else NAMESPACE
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        valid = keys_at(root, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        if "." in str(loc[-1]):
            # `--path` notation written into the file: a.b is one key with a dot in its name.
            hint += "in a stack file keys nest (a: {b: ...}), dots do not; "
        return f"{path}: unknown key; {hint}valid keys here: {', '.join(valid)}"
    if kind == "missing":
        return f"{path}: required value is missing"
    message = str(cause) if isinstance(cause, ValueError) else error["msg"]
    if kind == "literal_error":
        message = message.replace("Input should be", "valid values are")
    if kind in ("ip_v4_network", "ip_v4_address"):
        message = "expected an IPv4 network such as 10.0.0.0/16, with no bits set after the prefix"
    if kind in ("model_type", "dict_type"):
        message = f"expected a mapping of keys to values, not a {_kind(value)}"
    # The whole config is never a useful value to show.
    return f"{path}: {message}" + (f" (got {value!r})" if loc else "")


def unwrap(annotation: Any) -> Any:
    """The model class inside Optional[...] / list[...] / dict[..., ...], if any."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, tuple, dict, Annotated):
        for arg in typing.get_args(annotation):
            inner = unwrap(arg)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return annotation


def keys_at(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    model: Any = root
    for part in loc:
        if isinstance(part, str):
            model = unwrap(model.model_fields[part].annotation)
    return sorted(model.model_fields) if isinstance(model, type) else []


# ------------------------------------------------------------------- past a field's problem

# What is said when the rules across sections cannot run on what the fields left.
NOT_CHECKED = (
    f"{NAMESPACE}: the rules across sections (references, the region's instance types and "
    "zones, each plane's rules) are not checked until the problems above are fixed"
)


# Said of a problem found with keys set aside: it may go once they are fixed.
ON_DEFAULTS = " (found with the keys above that have problems left at their defaults)"
# Rounds of setting problems aside: a nested model's rule runs a round after its fields pass.
PAST_ROUNDS = 4


def full_loc(error: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Where each problem of one pydantic error is: its loc, and for a rule's FieldProblem
    the field it names under that loc."""
    cause = error.get("ctx", {}).get("error")
    causes = cause.problems if isinstance(cause, FieldProblems) else [cause]
    return [
        tuple(error["loc"])
        + (
            tuple(int(p) if p.isdigit() else p for p in re.split(r"\.|\[|\]", c.field) if p)
            if isinstance(c, FieldProblem)
            else ()
        )
        for c in causes
    ]


def without(raw: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`raw` less every key a problem is at, so the keys left take their defaults; None when a
    problem is not at a key that can go (an item of a list: removing it would renumber the
    others, and the rules would name the wrong one)."""
    pruned = copy.deepcopy(raw)
    for loc in (loc for error in errors for loc in full_loc(error)):
        if not loc or not isinstance(loc[-1], str):
            return None
        container: Any = pruned
        for part in loc[:-1]:
            try:
                container = container[part]
            except (KeyError, IndexError, TypeError):
                return None
        if not isinstance(container, dict):
            return None
        container.pop(loc[-1], None)
    return pruned


def past_field_problems(root: type[BaseModel], raw: dict[str, Any], error: Any) -> list[str]:
    """The problems found once the fields' problems are set aside: pydantic runs a model's
    rules only on fields that all validated, so without this a stack with a bad value, a
    dangling reference and a type its region lacks took a run for each. The keys with a problem
    go (their defaults stand in) and the config is validated again, round by round, each round
    adding what the rules it reached found, each said to be found so (a rule may read a key set
    aside: a pool's fabric at its default). A key the removal left missing (a required one)
    stops it, and that the rules were not checked is said instead of guessed at."""
    found: list[str] = []
    errors = [e for e in error.errors() if e["loc"]]
    for _ in range(PAST_ROUNDS):
        if not errors:
            return found
        pruned = without(raw, errors)
        if pruned is None:
            break
        raw = pruned
        try:
            root.model_validate(raw)
        except ValidationError as again:
            if any(e["type"] == "missing" for e in again.errors()):
                break
            said = [f"{m}{ON_DEFAULTS}" for e in again.errors() for m in describe_all(e, root)]
            if set(said) <= set(found):
                # The same keys fail at their defaults again: another round only repeats them.
                break
            found += [m for m in said if m not in found]
            errors = [e for e in again.errors() if e["loc"]]
        else:
            return found
    return [*found, NOT_CHECKED]
