"""Names the stack declares, and the fields that name them: one rule for every one of them.

A field whose value declares a name carries `names(kind)`; a field whose value must name
something declared carries `refers(kind)`, in its type (`Annotated[DnsLabel, refers(GPU_POOL)]`,
a map's key type for maps keyed by name). `check_references` walks the validated config by
these marks: every reference resolves to a name of its kind, every name is declared once, and
every problem is reported together, each at its key path. A field named without a mark cannot
be checked, so tests/model/test_references.py fails on a name-shaped field that carries neither.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel

from model.config.base import Documented, FieldProblem


@dataclass(frozen=True)
class Kind:
    what: str
    # Where a reader finds the names of this kind, said before the list of them.
    listing: str


GPU_POOL = "GPU pool"
CLUSTER_QUEUE = "cluster queue"
# Every Namespace object the platform declares, and the ones Kubernetes brings.
K8S_NAMESPACE = "namespace"
# The namespaces workloads run in: the training namespace and the teams'.
TEAM_NAMESPACE = "team namespace"
LOCAL_QUEUE = "local queue"
PRIORITY_CLASS = "priority class"
STAGED_MODEL = "staged model"
# One flavor setting per pool.
FLAVOR = "flavor"
MULTIKUEUE_WORKER = "MultiKueue worker"

KINDS = {
    GPU_POOL: Kind("a GPU pool of this stack", "pools"),
    CLUSTER_QUEUE: Kind("a ClusterQueue", "scheduling.cluster_queues"),
    K8S_NAMESPACE: Kind("a namespace", "namespaces"),
    TEAM_NAMESPACE: Kind(
        "a team namespace (namespaces.training or scheduling.teams[].name)", "team namespaces"
    ),
    LOCAL_QUEUE: Kind("a LocalQueue the platform declares", "LocalQueues"),
    PRIORITY_CLASS: Kind("a priority class the platform declares", "priority classes"),
    STAGED_MODEL: Kind("a model a recipe reads", "models"),
    FLAVOR: Kind("a pool's flavor settings", "flavors"),
    MULTIKUEUE_WORKER: Kind("a worker stack of multikueue.workers", "multikueue.workers"),
}


@dataclass(frozen=True)
class Names(Documented):
    """The field declares a name of each of `kinds`. A name equal to the field at `joins`
    configures that one rather than declaring a second."""

    kinds: tuple[str, ...] = ()
    joins: str | None = None


@dataclass(frozen=True)
class Refers(Documented):
    """The field names something of `kind`; checked only where `when(cfg)` holds (the part
    of the platform that reads the field is on)."""

    kind: str = ""
    when: Callable[[Any], bool] | None = None


def names(*kinds: str, joins: str | None = None) -> Names:
    plural = " and ".join(f"{kind}s" for kind in kinds)
    return Names(f"unique among the stack's {plural}", kinds=kinds, joins=joins)


def refers(kind: str, when: Callable[[Any], bool] | None = None) -> Refers:
    return Refers(f"names {KINDS[kind].what}", kind=kind, when=when)


# ------------------------------------------------------------------------------ the walk


def marks(annotation: Any) -> tuple[Any, list[Names | Refers]]:
    """The type under Annotated[...], and the name marks Annotated added to it."""
    found: list[Names | Refers] = []
    while typing.get_origin(annotation) is Annotated:
        annotation, *metadata = typing.get_args(annotation)
        found += [m for m in metadata if isinstance(m, Names | Refers)]
    return annotation, found


def walk(
    value: Any, annotation: Any, path: str, outer: tuple[Any, ...] = ()
) -> Iterator[tuple[str, str, Names | Refers]]:
    """(path, value, mark) of every marked value under `value`, in config order."""
    annotation, found = marks(annotation)
    found += [m for m in outer if isinstance(m, Names | Refers)]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if value is None:
        return
    if origin in (typing.Union, types.UnionType):
        present = [a for a in args if a is not type(None)]
        if len(present) == 1:
            yield from walk(value, present[0], path, tuple(found))
    elif isinstance(value, str):
        yield from ((path, value, mark) for mark in found)
    elif isinstance(value, BaseModel):
        for name, field in type(value).model_fields.items():
            where = f"{path}.{name}" if path else name
            yield from walk(getattr(value, name), field.annotation, where, tuple(field.metadata))
    elif origin is list:
        for i, item in enumerate(value):
            yield from walk(item, args[0], f"{path}[{i}]")
    elif origin is dict:
        for key, item in value.items():
            yield from walk(key, args[0], f"{path}.{key}")
            yield from walk(item, args[1], f"{path}.{key}")


# ------------------------------------------------------------------------------ the rule


def check_references(cfg: BaseModel, given: dict[str, dict[str, str]]) -> list[FieldProblem]:
    """Every problem with the stack's names: a name declared twice (or one that `given`
    already holds: what Kubernetes or the platform itself declares, kind -> name -> what
    declared it), and a reference to no declared name."""
    declared: dict[str, dict[str, str]] = {kind: dict(v) for kind, v in given.items()}
    refs: list[tuple[str, str, Refers]] = []
    problems = []
    for path, value, mark in walk(cfg, type(cfg), ""):
        if isinstance(mark, Refers):
            if mark.when is None or mark.when(cfg):
                refs.append((path, value, mark))
            continue
        for kind in mark.kinds:
            seen = declared.setdefault(kind, {})
            first = seen.get(value)
            if first is None:
                seen[value] = path
            elif first != mark.joins:
                problems.append(
                    FieldProblem(
                        path, f"{value!r} is used twice: {first} has it; give each its own"
                    )
                )
                break
    for path, value, mark in refs:
        known = sorted(declared.get(mark.kind, {}))
        if value not in known:
            kind = KINDS[mark.kind]
            close = difflib.get_close_matches(value, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            listing = ", ".join(known) or "none"
            problems.append(
                FieldProblem(path, f"{value!r} is not {kind.what}; {hint}{kind.listing}: {listing}")
            )
    return problems


def overlapping_selectors(pools: list[tuple[str, dict[str, str]]]) -> list[FieldProblem]:
    """Pools whose node selectors take the same nodes: a pool selecting a superset of another's
    labels picks only nodes the other has, so Kueue would offer their GPUs twice."""
    problems = []
    for i, (path_b, labels_b) in enumerate(pools):
        for path_a, labels_a in pools[:i]:
            wider, narrower = sorted((labels_a, labels_b), key=len)
            if wider.items() <= narrower.items():
                problems.append(
                    FieldProblem(
                        f"{path_b}.node_selector",
                        f"selects nodes {path_a} selects too ({labels_b} against {labels_a}): "
                        "Kueue would count their GPUs in both pools; give each pool a label "
                        "only its own nodes carry",
                    )
                )
    return problems
