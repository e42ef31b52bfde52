"""Reading config the way Pulumi does, and saying what is wrong with it in words.

A stack file is YAML, but Pulumi reads it more strictly than YAML allows: a key given twice is an
error (YAML's last-wins would silently drop a block), a key without a namespace belongs to the
project (`cluster:` is `gpu-platform:cluster`), and every value reaches the program as a string.
Pulumi parses it with go-yaml v3, which follows YAML 1.2's core schema: only true and false are
booleans, so `mode: off` is the string "off", where PyYAML (YAML 1.1) would read false.
Keys of other namespaces (`aws:region`, `kubernetes:context`) configure Pulumi's default
providers, which this project never uses: it declares its own, from `gpu-platform:` keys, so such
a key is refused with the key to set instead.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel

from infra.config.base import BOOLEAN_WORDS, NAMESPACE, ConfigError, FieldProblem, FieldProblems

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


BOOL_TAG = "tag:yaml.org,2002:bool"


class StackFileLoader(yaml.CSafeLoader):
    """YAML as Pulumi reads it (YAML 1.2 booleans), recording every key given twice in one
    mapping, at any depth, with its line."""

    yaml_implicit_resolvers: typing.ClassVar = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != BOOL_TAG]
        for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str):
        super().__init__(stream)
        self.duplicates: list[str] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, typing.Hashable) and key in seen:
                self.duplicates.append(
                    f"line {line}: key {key!r} is given twice (first on line {seen[key]}); "
                    "Pulumi refuses a repeated key, and YAML would keep only the last"
                )
            elif isinstance(key, typing.Hashable):
                seen[key] = line
        return super().construct_mapping(node, deep)


# The only booleans YAML 1.2 (and go-yaml v3, resolve.go's resolveMapList) resolves plainly.
StackFileLoader.add_implicit_resolver(
    BOOL_TAG, re.compile(f"^(?:{'|'.join(BOOLEAN_WORDS)})$"), list("tTfF")
)


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
    if loader.duplicates:
        raise ConfigError(source, loader.duplicates)
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
        return f"{NAMESPACE}:{_path(loc)}: {cause}"
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
