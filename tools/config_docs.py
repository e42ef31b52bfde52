"""The config reference (`docs/config.md`) and the stack files' JSON Schema
(`docs/stack-schema.json`), both generated from the config model, so neither drifts from it.

`python -m tools.config_docs` writes both (`make docs`); `--check` only compares them with what
the model gives now and fails, naming the stale file, as a test does.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from model.config import PRODUCTION_DEFAULTS, PlatformConfig
from model.config.base import NAMESPACE, Documented, Shape
from model.config.loading import READ_NAMESPACES

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path("docs/config.md")
SCHEMA = Path("docs/stack-schema.json")


# ------------------------------------------------------------------------------- reference


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The type under Annotated[...], and the metadata Annotated added."""
    if typing.get_origin(annotation) is Annotated:
        inner, *metadata = typing.get_args(annotation)
        inner, more = _unwrap(inner)
        return inner, metadata + more
    return annotation, []


def _type_name(annotation: Any) -> str:
    annotation, _ = _unwrap(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin is Literal:
        return "string" if all(isinstance(a, str) for a in args) else "literal"
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    return {str: "string", int: "integer", bool: "boolean", float: "number"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _model_of(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model a field holds, directly, optionally, as list items ("[]" then) or as a map's
    values (".<key>" then)."""
    annotation, _ = _unwrap(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            model, suffix = _model_of(arg)
            if model is not None:
                return model, suffix
    if origin is list:
        model, _ = _model_of(args[0])
        return model, "[]"
    if origin is dict:
        model, _ = _model_of(args[1])
        return model, ".<key>"
    return None, ""


_BOUNDS = {Ge: ("≥", "ge"), Gt: (">", "gt"), Le: ("≤", "le"), Lt: ("<", "lt")}


def _checks(annotation: Any, whose: str = "") -> Iterator[tuple[str, Any]]:
    """Every Literal and every Annotated check in a type, through unions, lists and maps,
    each with whose it is ("keys: " for a map's keys)."""
    annotation, metadata = _unwrap(annotation)
    yield from ((whose, item) for item in metadata)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        yield whose, annotation
    elif origin is dict:
        yield from _checks(args[0], "keys: ")
        yield from _checks(args[1], whose)
    else:
        for arg in args:
            yield from _checks(arg, whose)


def _constraint(field: FieldInfo) -> str:
    """What a value must be, in words: allowed values, bounds, lengths, shapes."""
    words: list[str] = []
    for whose, item in [*(("", m) for m in field.metadata), *_checks(field.annotation)]:
        bound = _BOUNDS.get(type(item))
        if typing.get_origin(item) is Literal:
            said = "one of " + ", ".join(f"`{v}`" for v in typing.get_args(item))
        elif bound:
            said = f"{bound[0]} {getattr(item, bound[1])}"
        elif isinstance(item, MinLen):
            said = f"at least {item.min_length} long"
        elif isinstance(item, MaxLen):
            said = f"at most {item.max_length} long"
        elif isinstance(item, Shape | Documented):
            said = item.words
        else:
            continue
        words.append(whose + said)
    return "; ".join(words)


def _value(value: Any) -> str:
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return f"`{json.dumps(value, default=str)}`"


def _default(field: FieldInfo) -> Any:
    if field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    return field.default


def _rows(
    model: type[BaseModel], prefix: str, defaults: BaseModel | None = None
) -> Iterator[tuple[str, ...]]:
    """One row per key, depth first: path, type, default, production default, constraint,
    description. A nested model's own keys follow its row, with the defaults its parent gives
    it (system_nodes.scaling starts at 2 nodes, where Scaling alone starts at 0)."""
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        nested, suffix = _model_of(field.annotation)
        default = _default(field) if defaults is None else getattr(defaults, name)
        production = PRODUCTION_DEFAULTS.get(tuple(path.split(".")), PydanticUndefined)
        description = field.description or (nested.__doc__ if nested else "") or ""
        yield (
            f"`{path}`",
            _type_name(field.annotation),
            "(its keys' defaults)" if isinstance(default, BaseModel) else _value(default),
            "" if production is PydanticUndefined else _value(production),
            _constraint(field),
            " ".join(description.split()).replace("|", "\\|"),
        )
        if nested is not None:
            given = default if isinstance(default, BaseModel) else None
            yield from _rows(nested, f"{path}{suffix}.", given)


def reference() -> str:
    """docs/config.md: every key of `PlatformConfig`, a table per top-level section."""
    lines = [
        "# Config reference",
        "",
        "<!-- Generated from model/config/ by `make docs`; edit the model, not this file. -->",
        "",
        f"Every key a stack file sets, under `{NAMESPACE}:` (a key without a namespace means "
        "the same). Nested keys are written as `pulumi config set --path` reads them; `[]` "
        "is any item of a list, `<key>` any key of a map. *Production default* is what "
        "`production: true` sets on AWS unless the stack sets the key itself "
        "(`PRODUCTION_DEFAULTS` in `model/config/__init__.py`). Rules that tie several keys "
        "together are checked too and named in the error when broken; they are not repeated "
        "here.",
        "",
        "The stack files' JSON Schema, for editors: [stack-schema.json](stack-schema.json).",
        "",
    ]
    header = "| key | type | default | production default | constraint | description |"
    for name, field in PlatformConfig.model_fields.items():
        nested, _ = _model_of(field.annotation)
        lines += [f"## `{name}`", ""]
        if nested is not None and nested.__doc__:
            lines += [" ".join(nested.__doc__.split()), ""]
        lines += [header, "|---|---|---|---|---|---|"]
        for row in _rows(PlatformConfig, ""):
            key = row[0].strip("`")
            if key == name or key.startswith((f"{name}.", f"{name}[].")):
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- schema

# A value `pulumi config set --secret` wrote: the CLI decrypts it before the program reads it.
SECRET = {
    "type": "object",
    "description": "An encrypted value, as `pulumi config set --secret` writes it.",
    "properties": {"secure": {"type": "string"}},
    "required": ["secure"],
    "additionalProperties": False,
}
# `pulumi config set` stores scalars as strings; the model reads "4" as 4 and "true" as true.
_AS_STRING = {
    "integer": {"type": "string", "pattern": "^-?[0-9]+$"},
    "number": {"type": "string", "pattern": "^-?[0-9]+(?:\\.[0-9]+)?$"},
    "boolean": {"type": "string", "pattern": "^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"},
}


def _loosen(node: Any) -> Any:
    """The model's schema as a stack file may write it: integers and booleans also as the
    strings the CLI stores, every string also as a secret."""
    if isinstance(node, list):
        return [_loosen(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _loosen(value) for key, value in node.items()}
    kind = node.get("type")
    if kind in _AS_STRING:
        return {"anyOf": [node, _AS_STRING[kind]]}
    if kind == "string":
        return {"anyOf": [node, {"$ref": "#/$defs/Secret"}]}
    return node


def stack_schema() -> dict[str, Any]:
    """JSON Schema of `stacks/Pulumi.<stack>.yaml`: `config:` holds this project's keys, with
    or without the namespace, and Pulumi's own `pulumi:` keys; any other namespace is refused,
    as the program refuses it."""
    model = _loosen(PlatformConfig.model_json_schema())
    defs = {**model.pop("$defs"), "Secret": SECRET}
    keys: dict[str, Any] = {}
    for name, prop in model["properties"].items():
        keys[f"{NAMESPACE}:{name}"] = prop
        keys[name] = {"$ref": f"#/properties/config/properties/{NAMESPACE}:{name}"}
    others = [n for n in READ_NAMESPACES if n != NAMESPACE]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpu-platform stack file",
        "description": "stacks/Pulumi.<stack>.yaml. Generated from model/config/ by `make docs`.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "description": model["description"],
                "properties": keys,
                "patternProperties": {f"^(?:{'|'.join(others)}):": {}},
                "additionalProperties": False,
            },
            # What Pulumi itself keeps in a stack file.
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
            "environment": {},
        },
        "additionalProperties": False,
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(stack_schema(), indent=2, sort_keys=True) + "\n"


# ------------------------------------------------------------------------------------- CLI


def generated() -> dict[Path, str]:
    return {REFERENCE: reference(), SCHEMA: schema_text()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.config_docs", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, text in generated().items():
        target = ROOT / path
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current == text:
            continue
        stale.append(str(path))
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run `make docs` and commit", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
