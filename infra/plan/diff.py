"""A plan diff without a cloud: this plan against an earlier plan's resources.json, printed the
way `terraform plan` prints one (+ create, ~ update attribute by attribute, - delete).

Both sides are offline plans, so the diff says what the program would declare differently, not
what the cloud holds: drift made outside Pulumi is `pulumi preview`'s job. Whether a provider
replaces a resource for a given change is written in each provider's schema and not in the SDK
we run offline; the diff does not guess it, and flags every change to a protected resource
instead, since those are the ones a replacement or delete would hurt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.plan.engine import SECRET

# Keys whose values are credentials even where the program did not mark them secret.
_SECRET_KEY = re.compile(r"password|secret|token", re.IGNORECASE)


@dataclass(frozen=True)
class Change:
    path: str
    before: Any  # ABSENT when the attribute is new
    after: Any  # ABSENT when the attribute is gone


@dataclass(frozen=True)
class ResourceDiff:
    action: str  # "create", "update" or "delete"
    type: str
    name: str
    protect: bool
    changes: tuple[Change, ...] = ()


ABSENT = object()
_SYMBOL = {"create": "+", "update": "~", "delete": "-"}


def read_previous(where: Path) -> list[dict[str, Any]]:
    """The resources of an earlier plan: a plan folder (out/<stack>) or its resources.json."""
    path = where / "resources.json" if where.is_dir() else where
    return json.loads(path.read_text())["resources"]


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf values by path, in the syntax Pulumi's ignoreChanges uses: `a.b[0].c`. An empty
    object or list is a leaf, so emptying one shows as a change."""
    if isinstance(value, dict) and value:
        found: dict[str, Any] = {}
        for key, item in value.items():
            found.update(flatten(item, f"{prefix}.{key}" if prefix else key))
        return found
    if isinstance(value, list) and value:
        found = {}
        for index, item in enumerate(value):
            found.update(flatten(item, f"{prefix}[{index}]"))
        return found
    return {prefix: value}


def _ignore_pattern(paths: list[str]) -> re.Pattern[str] | None:
    """One path of ignoreChanges covers itself and everything below it; `[*]` any index."""
    if not paths:
        return None
    alternatives = [re.escape(p).replace(r"\[\*\]", r"\[\d+\]") for p in paths]
    return re.compile(rf"(?:{'|'.join(alternatives)})(?:$|[.\[])")


def masked(path: str, value: Any) -> Any:
    """A value as the diff may show it: secrets in the plan stay (secret), and so does any
    value under a key named like a password, secret or token."""
    keys = re.split(r"[.\[\]]+", path)
    if value is ABSENT:
        return value
    return SECRET if any(_SECRET_KEY.search(k) for k in keys) else value


def attribute_changes(
    before: dict[str, Any], after: dict[str, Any], ignore_changes: list[str] = ()
) -> tuple[Change, ...]:
    old, new = flatten(before), flatten(after)
    ignored = _ignore_pattern(list(ignore_changes))
    changes = []
    for path in sorted(set(old) | set(new)):
        if ignored is not None and ignored.match(path):
            continue
        a, b = old.get(path, ABSENT), new.get(path, ABSENT)
        if a != b:
            changes.append(Change(path, masked(path, a), masked(path, b)))
    return tuple(changes)


def diff_plans(
    previous: list[dict[str, Any]],
    current: list[dict[str, Any]],
    ignore_changes: dict[str, list[str]] | None = None,
) -> list[ResourceDiff]:
    """Resource by resource, matched by URN; `ignore_changes` maps a URN to the input paths
    its registration told the engine to leave alone, which are therefore not drift."""
    ignore_changes = ignore_changes or {}
    before = {r["urn"]: r for r in previous}
    after = {r["urn"]: r for r in current}
    diffs = []
    for urn in sorted(set(before) | set(after)):
        old, new = before.get(urn), after.get(urn)
        if old is None:
            diffs.append(ResourceDiff("create", new["type"], new["name"], new["protect"]))
        elif new is None:
            diffs.append(ResourceDiff("delete", old["type"], old["name"], old["protect"]))
        else:
            changes = attribute_changes(old["inputs"], new["inputs"], ignore_changes.get(urn, []))
            if old["protect"] != new["protect"]:
                changes += (Change("(protect)", old["protect"], new["protect"]),)
            if changes:
                protect = old["protect"] or new["protect"]
                diffs.append(ResourceDiff("update", new["type"], new["name"], protect, changes))
    return diffs


def _shown(value: Any) -> str:
    return "(absent)" if value is ABSENT else json.dumps(value, sort_keys=True)


def format_diff(diffs: list[ResourceDiff], against: str) -> str:
    lines = [f"Changes against {against}:"]
    if not diffs:
        lines.append("  none: this plan declares what the earlier plan declared")
    for d in diffs:
        flag = "  [PROTECTED]" if d.protect else ""
        lines.append(f"  {_SYMBOL[d.action]} {d.type} {d.name}{flag}")
        for c in d.changes:
            if c.before is ABSENT:
                lines.append(f"      + {c.path}: {_shown(c.after)}")
            elif c.after is ABSENT:
                lines.append(f"      - {c.path}: {_shown(c.before)}")
            else:
                lines.append(f"      ~ {c.path}: {_shown(c.before)} -> {_shown(c.after)}")
    counts = {a: sum(d.action == a for d in diffs) for a in _SYMBOL}
    lines.append(
        f"Diff: {counts['create']} to create, {counts['update']} to update, "
        f"{counts['delete']} to delete."
    )
    touched = sorted(f"{d.name} ({d.action})" for d in diffs if d.protect)
    if touched:
        lines.append(
            "Protected resources changed: "
            + ", ".join(touched)
            + ". `pulumi up` refuses to delete or replace them while protected; whether the "
            "provider replaces one for an update is for `pulumi preview` to say."
        )
    return "\n".join(lines)
