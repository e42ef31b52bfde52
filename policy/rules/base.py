"""What every rule sees: one resource as a small adapter, and the stack around it.

The same rule code runs under `pulumi preview --policy-pack policy` (CrossGuard hands each
resource's type, name, URN and properties) and in `python -m plan` (the planned resources);
neither needs the other. A rule is a plain function `(subject, context) -> messages`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from model.config.policy import PolicySettings

Level = Literal["mandatory", "advisory"]

# The offline plan shows a value known only after apply as "(known after apply: <name>.<attr>)";
# the name is the logical name of the resource it comes from.
_REFERENCE = re.compile(r"\(known after apply: ([^).]+)")


@dataclass(frozen=True)
class Subject:
    """One resource: its type token, logical name, properties and protection."""

    type: str
    name: str
    props: dict[str, Any]
    protect: bool = False
    urn: str = ""
    # The Helm release whose chart renders this object (offline plan only); None: declared.
    release: str | None = None


@dataclass(frozen=True)
class Context:
    """The whole stack, for rules that look beyond one resource, and the stack's settings."""

    resources: tuple[Subject, ...]
    production: bool = False
    settings: PolicySettings = field(default_factory=PolicySettings)
    # The estimated monthly cost at maximum size; None where no estimate is available.
    monthly_usd: float | None = None
    # The stack's budget (cost.monthly_budget_usd); None: no budget check.
    monthly_budget_usd: float | None = None
    # What the Helm releases render (the offline plan renders them; a preview cannot): only
    # rules marked `rendered` check these, and `of_type` never returns them.
    rendered: tuple[Subject, ...] = ()

    def of_type(self, token: str) -> list[Subject]:
        return [r for r in self.resources if r.type == token]

    def named(self, token: str, name: str | None) -> Subject | None:
        return next((r for r in self.of_type(token) if r.name == name), None)


Check = Callable[[Subject, Context], Iterable[str]]


@dataclass(frozen=True)
class Rule:
    name: str
    level: Level
    types: tuple[str, ...]
    description: str
    remediation: str
    check: Check
    # The check follows references between resources ("(known after apply: <name>...)"), which
    # only the offline plan resolves; under `pulumi preview` they are still unknown.
    linked: bool = False
    # The check also holds for every object a Helm release renders (Context.rendered).
    rendered: bool = False


@dataclass(frozen=True)
class Violation:
    rule: Rule
    resource: Subject
    message: str
    # The reason of the stack's exemption that waives this violation; None: not waived.
    waived: str | None = None

    def __str__(self) -> str:
        return (
            f"[{self.rule.level}] {self.rule.name}: {self.resource.type} {self.resource.name}: "
            f"{self.message}. Fix: {self.rule.remediation}"
        )


def rule(
    name: str,
    level: Level,
    types: Iterable[str],
    description: str,
    remediation: str,
    linked: bool = False,
    rendered: bool = False,
):
    """Turn a check function into a Rule with its metadata."""

    def wrap(check: Check) -> Rule:
        return Rule(name, level, tuple(types), description, remediation, check, linked, rendered)

    return wrap


def reference(value: Any) -> str | None:
    """The logical name a known-after-apply value points at, or None."""
    match = _REFERENCE.search(value) if isinstance(value, str) else None
    return match.group(1) if match else None


def truthy(value: Any) -> bool:
    # Launch-template booleans travel as strings ("true") in pulumi-aws.
    return value is True or value == "true"


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


POD_SPEC_KINDS = {"Pod", "Job", "CronJob", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"}


def pod_spec(props: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec of a Kubernetes workload object, or None for anything else."""
    kind = props.get("kind")
    if kind not in POD_SPEC_KINDS:
        return None
    spec = props.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec") or {}


def pod_specs(props: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod spec of a workload: a JobSet's, one per replicatedJob (its Job's template,
    jobset.x-k8s.io/v1alpha2); the one of any other workload; none for anything else."""
    if props.get("kind") == "JobSet":
        return [
            (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            for rj in (props.get("spec") or {}).get("replicatedJobs") or []
        ]
    spec = pod_spec(props)
    return [] if spec is None else [spec]


def containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


KUBERNETES_WORKLOADS = tuple(
    f"kubernetes:{group}:{kind}"
    for group, kind in (
        ("core/v1", "Pod"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "ReplicaSet"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    )
)
