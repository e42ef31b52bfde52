"""What the offline engine answers for a resource's outputs: the inputs echoed, and for each
output the cloud computes a labelled placeholder of its declared type, read from the provider
SDK class, so the program's own code runs on it and the plan says where each value comes from."""

from __future__ import annotations

import collections.abc
import functools
import importlib
import sys
import types
import typing
from typing import Any

import pulumi
from pulumi import _types


def known_after_apply(source: str | None = None) -> str:
    return f"(known after apply: {source})" if source else "(known after apply)"


def is_known_after_apply(value: object) -> bool:
    return isinstance(value, str) and value.startswith("(known after apply")


def _getters(cls: type) -> dict[str, Any]:
    """Wire name -> resolved return type of each `@pulumi.getter` property of an SDK class."""
    found = {}
    for attr in vars(cls).values():
        getter = getattr(attr, "fget", None)
        if getter is None or not hasattr(getter, "_pulumi_name"):
            continue
        hints = typing.get_type_hints(getter, globalns=vars(sys.modules[getter.__module__]))
        found[getter._pulumi_name] = hints.get("return")
    return found


def _placeholder(annotation: Any, path: str, depth: int = 0) -> Any:
    """A value of the declared output type whose strings are labelled placeholders; None where
    no honest placeholder exists (numbers, booleans, maps), which leaves the value unknown."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is str:
        return known_after_apply(path)
    if depth > 4:
        return None
    if origin is pulumi.Output or origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _placeholder(inner[0], path, depth) if len(inner) == 1 else None
    if origin in (list, collections.abc.Sequence):
        item = _placeholder(args[0], f"{path}[0]", depth + 1)
        return None if item is None else [item]
    if isinstance(annotation, type) and _types.is_output_type(annotation):
        fields = {
            name: _placeholder(hint, f"{path}.{name}", depth + 1)
            for name, hint in _getters(annotation).items()
        }
        return {k: v for k, v in fields.items() if v is not None} or None
    return None


@functools.cache
def sdk_class(token: str) -> type | None:
    """The provider SDK class of a resource type token, if any: `aws:ec2/vpc:Vpc` lives in
    pulumi_aws.ec2, `kubernetes:storage.k8s.io/v1:StorageClass` in pulumi_kubernetes.storage.v1.
    Custom resources of operators (`kubernetes:ceph.rook.io/v1:CephCluster`) have none."""
    try:
        package, module, cls_name = token.split(":")
        group, _, version = module.partition("/")
        path = group.split(".")[0] + (f".{version}" if package == "kubernetes" else "")
        # A provider's top-level resources (`random:index/randomPassword:RandomPassword`) live
        # in the package itself.
        where = f"pulumi_{package}" if path == "index" else f"pulumi_{package}.{path}"
        return getattr(importlib.import_module(where), cls_name)
    except (ValueError, ImportError, AttributeError):
        return None


@functools.cache
def computed_outputs(token: str, name: str) -> dict[str, Any]:
    """Placeholders for the outputs a provider resource type declares (read from its SDK class),
    each naming the resource and attribute it will come from."""
    cls = sdk_class(token)
    if cls is None:
        return {}
    placeholders = {
        output: _placeholder(hint, f"{name}.{output}") for output, hint in _getters(cls).items()
    }
    return {k: v for k, v in placeholders.items() if v is not None}


def overlay(computed: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs win; an input object keeps the placeholders of computed fields it does not set
    (EKS's `vpcConfig.clusterSecurityGroupId` beside the subnets we pass)."""
    merged = dict(computed)
    for key, value in inputs.items():
        below = computed.get(key)
        both_dicts = isinstance(value, dict) and isinstance(below, dict)
        merged[key] = overlay(below, value) if both_dicts else value
    return merged
