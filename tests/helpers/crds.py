"""Validate custom resources against the upstream CRD schemas in ../shared/crds.

The files are Kubernetes structural OpenAPI v3 schemas, not plain JSON Schema; the validator
closes the gaps that matter (shared/crds/README.md, "Caveats"):

1. Go RE2 patterns with a leading `^(?i)` are rewritten to `(?i)^`, which Python compiles.
2. `null` values are dropped before validation, as the API server prunes them (and `nullable`
   schemas accept them): an empty YAML key is not an error.
3. Objects that list `properties` and neither preserve unknown fields nor say what extra keys
   may hold are closed (`additionalProperties: false`), so a misspelt field fails as the API
   server's strict field validation would reject it.

4. CEL rules (`x-kubernetes-validations`) are evaluated as the API server evaluates them on a
   create (k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel/validation.go): on the
   object with the schema's defaults applied, at each schema node the object holds, `self`
   bound to that node's value (at the root: the object, its metadata only name and
   generateName); transition rules (those naming `oldSelf`) are skipped, but with
   `optionalOldSelf` they run with `oldSelf` = `optional.none()`. A false rule reads
   `messageExpression`, else `message`, else `failed rule: <rule>`; an evaluation error reads
   `<error> evaluating rule: <message or rule>`, as the API server words them. The runtime is
   CEL's own (cel-expr-python, the C++ implementation) with the extensions Kubernetes' base
   environment adds that it has (strings v2, optionals, bindings); a rule that calls a function
   it lacks (Kubernetes' quantity, url, ip, lists, regex, semver, format libraries) fails
   loudly with `CelLibraryError`, never passes. Each rule is compiled once per process.

List-type uniqueness and formats are not checked.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from jsonschema import validators

from model.stacks import ROOT

CRDS = ROOT.parent / "shared" / "crds"
_CASE_INSENSITIVE = re.compile(r"^\^\(\?i\)")


def is_custom_resource(obj: dict[str, Any]) -> bool:
    """A kind that Kubernetes itself does not serve: its API group has a dot and is not one of
    the `*.k8s.io` groups (core, apps, batch, policy and autoscaling have no dot)."""
    api_version = obj.get("apiVersion", "")
    if "/" not in api_version:
        return False
    group = api_version.split("/", 1)[0]
    return "." in group and not group.endswith(".k8s.io")


def schema_path(api_version: str, kind: str) -> Path:
    group, version = api_version.split("/", 1)
    return CRDS / group / f"{kind}.{version}.json"


def _close(schema: Any) -> Any:
    """A copy of `schema` with every object that lists properties closed to unknown keys."""
    if isinstance(schema, list):
        return [_close(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _close(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _pattern(validator, pattern, instance, schema):
    """`pattern` as Kubernetes (Go RE2) reads it, for the one form Python rejects."""
    if not validator.is_type(instance, "string"):
        return
    if not re.search(_CASE_INSENSITIVE.sub("(?i)^", pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_BASE = validators.validator_for({})
StructuralValidator = validators.extend(_BASE, {"pattern": _pattern})


def structural_validator(crd: dict[str, Any]) -> jsonschema.protocols.Validator:
    schema = _close(crd)
    # The CRD schema says nothing of metadata beyond `type: object`; it is the API server's.
    schema["properties"]["metadata"] = {"type": "object"}
    return StructuralValidator(schema)


@functools.cache
def validator_for(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    return structural_validator(crd_schema(api_version, kind))


def chart_crd_schema(chart: Path, member: str, version: str) -> dict[str, Any]:
    """The openAPIV3Schema of `version` in a CRD a packaged chart ships under its crds/: the
    schema that wins where that chart installs the CRD first."""
    with tarfile.open(chart) as archive:
        crd = yaml.safe_load(archive.extractfile(member).read())
    (found,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return found["schema"]["openAPIV3Schema"]


def strip_nulls(value: Any) -> Any:
    """What the API server keeps of a value: no null map entries or list items."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value if v is not None]
    return value


def errors(obj: dict[str, Any], schema: dict[str, Any] | None = None) -> list[str]:
    """Every schema violation of a custom resource (against its CRD in ../shared/crds, or
    `schema`), as `kind name: path: message`; on an object the schema admits, every CEL rule it
    breaks (`cel_errors`): a rule reads fields by the types the schema gives them."""
    validator = (
        validator_for(obj["apiVersion"], obj["kind"])
        if schema is None
        else structural_validator(schema)
    )
    name = f"{obj['kind']} {obj.get('metadata', {}).get('name')}"
    found = []
    for error in sorted(validator.iter_errors(strip_nulls(copy.deepcopy(obj))), key=str):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        found.append(f"{name}: {where}: {error.message}")
    return found or cel_errors(obj, schema)


# ------------------------------------------------------------------------------ CEL rules


class CelLibraryError(Exception):
    """A rule this CEL runtime cannot compile: a function of Kubernetes' libraries it lacks,
    or a syntax it does not read. The rule is not checked, so nothing may pass on it."""


@functools.cache
def _environment(with_old_self: bool) -> Any:
    variables = {"self": cel.Type.DYN}
    if with_old_self:
        variables["oldSelf"] = cel.Type.DYN
    extensions = [ext_strings.ExtStrings(2), ext_optional.ExtOptional(), ext_bindings.ExtBindings()]
    return cel.NewEnv(variables=variables, extensions=extensions)


@dataclass(frozen=True)
class CompiledRule:
    rule: dict[str, Any]
    # None: a transition rule, which the API server evaluates only on an update.
    program: Any
    message: Any  # the compiled messageExpression, if any


def _compile(expression: str, with_old_self: bool, where: str) -> Any:
    try:
        return _environment(with_old_self).compile(expression)
    except RuntimeError as error:
        raise CelLibraryError(f"{where}: cannot compile {expression!r}: {error}") from None


@functools.cache
def compile_rule(crd: str, where: str, rule_json: str) -> CompiledRule:
    """One `x-kubernetes-validations` entry of `crd` at schema path `where`, compiled: a rule
    that names `oldSelf` (in its syntax tree: it compiles only where `oldSelf` is declared) is
    a transition rule; with `optionalOldSelf` it runs on create with `oldSelf` unset."""
    rule = json.loads(rule_json)
    named = f"CRD {crd} at {where or '(root)'}"
    _compile(rule["rule"], True, named)  # every rule compiles, transition rules too
    message = rule.get("messageExpression")
    try:
        program = _environment(False).compile(rule["rule"])
    except RuntimeError:
        if not rule.get("optionalOldSelf"):
            return CompiledRule(rule, None, None)

        def unset(expression: str) -> str:
            return f"cel.bind(oldSelf, optional.none(), {expression})"

        program = _compile(unset(rule["rule"]), False, named)
        message = message and unset(message)
    return CompiledRule(rule, program, message and _compile(message, False, named))


# validation.go `fieldErrorForReason`: how the API server words each `reason`
# (k8s.io/apimachinery pkg/util/validation/field/errors.go); FieldValueInvalid, the default,
# reads "Invalid value".
REASONS = {
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}


def _rule_text(rule: dict[str, Any]) -> str:
    """validation.go `ruleErrorString`: the message, else the rule."""
    return (rule.get("message") or "").strip() or rule["rule"].strip()


def _detail(compiled: CompiledRule, self_value: Any) -> str:
    """validation.go: the messageExpression's non-empty one-line string, else `message`, else
    `failed rule: <rule>`."""
    if compiled.message is not None:
        value = compiled.message.eval(data={"self": self_value})
        text = value.value().strip() if value.type() == cel.Type.STRING else ""
        if text and "\n" not in text:
            return text
    message = (compiled.rule.get("message") or "").strip()
    return message or f"failed rule: {compiled.rule['rule'].strip()}"


def _defaulted(schema: dict[str, Any], value: Any) -> None:
    """The schema's `default`s set in place where the value lacks the field, as the API server
    defaults an object before it validates it."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None:
                _defaulted(sub, child)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for child in value:
            _defaulted(schema["items"], child)


def _nodes(schema: dict[str, Any], value: Any, path: str):
    """(schema node, value, field path) of every value the object holds under a schema node,
    field paths as the API server writes them (`spec.tolerations[0]`, `spec.nodeLabels[k]`)."""
    yield schema, value, path
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            if key in props:
                yield from _nodes(props[key], child, f"{path}.{key}" if path else key)
            elif isinstance(extra, dict):
                yield from _nodes(extra, child, f"{path}[{key}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, child in enumerate(value):
            yield from _nodes(schema["items"], child, f"{path}[{i}]")


def rules_of(schema: dict[str, Any], where: str = ""):
    """(schema path, rule) of every rule the walk of an object can reach: under `properties`,
    `items` and `additionalProperties`, the only places a structural schema holds them."""
    for rule in schema.get("x-kubernetes-validations") or []:
        yield where, rule
    for key, sub in (schema.get("properties") or {}).items():
        yield from rules_of(sub, f"{where}.{key}" if where else key)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from rules_of(schema[key], f"{where}[*]")


def _schema_where(path: str) -> str:
    """A field path as the schema path of its node: indexes and map keys as `[*]`."""
    return re.sub(r"\[[^\]]*\]", "[*]", path)


@functools.cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any]:
    return json.loads(schema_path(api_version, kind).read_text())


def cel_errors(obj: dict[str, Any], schema: dict[str, Any] | None = None) -> list[str]:
    """Every CEL rule of the object's CRD (or of `schema`) that a create of it breaks, as
    `kind name: path: Invalid value: detail (CRD group/version Kind, rule ...)`."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    schema = schema or crd_schema(api_version, kind)
    crd = f"{api_version} {kind}"
    value = strip_nulls(copy.deepcopy(obj))
    _defaulted(schema, value)
    meta = value.get("metadata") or {}
    # At the root a rule sees only these of the metadata (Kubernetes "Validation rules").
    value["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    name = f"{kind} {meta.get('name')}"
    found = []
    for node, self_value, path in _nodes(schema, value, ""):
        for rule in node.get("x-kubernetes-validations") or []:
            compiled = compile_rule(crd, _schema_where(path), json.dumps(rule, sort_keys=True))
            if compiled.program is None:
                continue
            result = compiled.program.eval(data={"self": self_value})
            where = path or "(root)"
            if result.type() == cel.Type.ERROR:
                if "No matching overload" in str(result.value()):
                    raise CelLibraryError(
                        f"{name}: {where}: CRD {crd}: rule {rule['rule']!r}: {result.value()}"
                    )
                detail = f"{result.value()} evaluating rule: {_rule_text(rule)}"
            elif result.value() is True:
                continue
            else:
                # Only a false rule's error names the field `fieldPath` points at.
                where = f"{path}{rule['fieldPath']}" if rule.get("fieldPath") else where
                detail = _detail(compiled, self_value)
            reason = REASONS.get(rule.get("reason", ""), "Invalid value")
            found.append(f"{name}: {where}: {reason}: {detail} (CRD {crd}, rule {rule['rule']!r})")
    return found
