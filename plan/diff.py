"""A plan diff without a cloud: this plan against an earlier plan's resources.json, resource by
resource and attribute by attribute, with the replacements `pulumi up` would make marked the way
`terraform plan` marks them. plan/diff_report.py prints it.

Both sides are offline plans, so the diff says what the program would declare differently, not
what the cloud holds: drift made outside Pulumi is `pulumi preview`'s job. Whether a change
replaces a resource comes from the provider-facts table (plan/replacements.py): a change to a
field the provider marks ForceNew or RequiresReplace makes the update a replacement.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model import immutable_fields
from model.stacks import SECRET
from plan.manifests import split_manifest
from plan.replacements import Verdict, path_pattern, verdict

# Keys whose values are credentials even where the program did not mark them secret.
SECRET_KEY = re.compile(r"password|secret|token", re.IGNORECASE)
# A list item in a flattened path: `networkInterfaces[16]`.
_INDEX = re.compile(r"\[(\d+)\]")
# Consecutive list items added or removed together show as one range from this many on.
RANGE_FROM = 2


@dataclass(frozen=True)
class Items:
    """The value of a collapsed range: this many whole list items."""

    count: int


@dataclass(frozen=True)
class Change:
    path: str
    before: Any  # ABSENT when the attribute is new
    after: Any  # ABSENT when the attribute is gone


@dataclass(frozen=True)
class ResourceDiff:
    action: str  # "create", "update", "replace" or "delete"
    type: str
    name: str
    protect: bool
    changes: tuple[Change, ...] = ()
    verdict: Verdict = field(default_factory=Verdict)
    # A delete of a resource declared with `retain_on_delete`: Pulumi forgets it and leaves the
    # object where it is.
    retained: bool = False


@dataclass(frozen=True)
class PreviousPlan:
    resources: list[dict[str, Any]]
    outputs: dict[str, Any]
    # Its rendered releases, by release name: each chart file with its text (a plan folder's
    # rendered/; none where only a resources.json was given).
    rendered: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


ABSENT = object()


def read_previous(where: Path) -> PreviousPlan:
    """An earlier plan: a plan folder (out/<stack>, its rendered releases too) or its
    resources.json."""
    path = where / "resources.json" if where.is_dir() else where
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("resources"), list):
        raise ValueError("no resources list")
    rendered = read_rendered(where) if where.is_dir() else {}
    return PreviousPlan(doc["resources"], doc.get("outputs") or {}, rendered)


# An earlier plan's rendered release as one source when its file has no `# Source:` lines.
WHOLE = "(the whole release)"


def read_rendered(folder: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    """A plan folder's rendered releases, by release name: each chart file with its text."""
    found = {}
    for path in sorted((folder / "rendered").glob("*.yaml")):
        text = path.read_text()
        found[path.stem] = split_manifest(text) or ((WHOLE, text),)
    return found


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
    return SECRET if any(SECRET_KEY.search(k) for k in keys) else value


def _natural(path: str) -> tuple:
    """Paths in reading order: `a[2]` before `a[10]`."""
    return tuple(int(p) if i % 2 else p for i, p in enumerate(re.split(r"(\d+)", path)))


def _items(flat: dict[str, Any]) -> set[str]:
    """The path of every list item in a flattened value: `a[0]`, `a[0].b[2]`."""
    return {path[: m.end()] for path in flat for m in _INDEX.finditer(path)}


def _runs(indices: list[int]) -> list[list[int]]:
    """Sorted indices as runs of consecutive ones: [1, 2, 3, 7] -> [[1, 2, 3], [7]]."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and runs[-1][-1] + 1 == index:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


def _collapsed(
    changes: list[Change], old: dict[str, Any], new: dict[str, Any]
) -> tuple[Change, ...]:
    """Runs of whole list items added or removed together become one change over the range
    (`networkInterfaces[16..31]`, 16 items removed) instead of a line per leaf of each item."""
    before, after = _items(old), _items(new)
    whole: dict[int, tuple[str, int, bool]] = {}  # change index -> (list, item, removed)
    for n, change in enumerate(changes):
        for m in _INDEX.finditer(change.path):
            item = change.path[: m.end()]
            if (item in before) != (item in after):
                whole[n] = (change.path[: m.start()], int(m.group(1)), item in before)
                break
    indices: dict[tuple[str, bool], set[int]] = {}
    for listed, index, removed in whole.values():
        indices.setdefault((listed, removed), set()).add(index)
    span_of = {}
    for (listed, removed), found in indices.items():
        for span in _runs(sorted(found)):
            if len(span) >= RANGE_FROM:
                span_of.update({(listed, i, removed): (span[0], span[-1]) for i in span})
    shown, emitted = [], set()
    for n, change in enumerate(changes):
        span = span_of.get(whole.get(n, ("", -1, False)))
        if span is None:
            shown.append(change)
            continue
        listed, _, removed = whole[n]
        if (listed, span, removed) in emitted:
            continue
        emitted.add((listed, span, removed))
        items = Items(span[1] - span[0] + 1)
        path = f"{listed}[{span[0]}..{span[1]}]"
        shown.append(Change(path, items, ABSENT) if removed else Change(path, ABSENT, items))
    return tuple(shown)


def attribute_changes(
    before: dict[str, Any], after: dict[str, Any], ignore_changes: list[str] = ()
) -> tuple[Change, ...]:
    old, new = flatten(before), flatten(after)
    ignored = _ignore_pattern(list(ignore_changes))
    changes = []
    for path in sorted(set(old) | set(new), key=_natural):
        if ignored is not None and ignored.match(path):
            continue
        a, b = old.get(path, ABSENT), new.get(path, ABSENT)
        if a != b:
            changes.append(Change(path, masked(path, a), masked(path, b)))
    return _collapsed(changes, old, new)


@dataclass(frozen=True)
class Declared:
    """What a registration told the engine about replacing it: `replace_on_changes` (Pulumi's
    paths, `a[*].b`) and `delete_before_replace`."""

    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False


def _covers(declared: str, path: str) -> bool:
    """Whether a declared path covers a diff path (`a[2].b`) or a table path (`a[].b`)."""
    return bool(path_pattern(declared.replace("[*]", "[]")).match(path.replace("[]", "[0]")))


def with_declared(
    found: Verdict,
    token: str,
    old: dict[str, Any],
    new: dict[str, Any],
    changed: list[str],
    declared: Declared,
) -> Verdict:
    """The provider's verdict, plus what the engine adds: a change under a declared
    `replace_on_changes` path replaces, a declared `delete_before_replace` deletes first
    whatever forced it; an update that
    changes an immutable custom-resource field is one the API server refuses."""
    by_option = tuple(
        d.replace("[*]", "[]")
        for d in declared.replace_on_changes
        if any(_covers(d, p) for p in changed)
    )
    forced = tuple(dict.fromkeys((*found.forced_by, *by_option)))
    # A replaced object is created anew, whatever forced it: no update to refuse.
    refused = () if forced else tuple(immutable_fields.refused(token, old, new))
    # The option deletes first whatever forced the replacement (Pulumi's deleteBeforeReplace).
    first = found.delete_before_replace or declared.delete_before_replace
    return dataclasses.replace(
        found,
        forced_by=forced,
        delete_before_replace=first and bool(forced),
        refused=refused,
        checked=tuple(immutable_fields.checked(token, changed)),
    )


def diff_plans(
    previous: list[dict[str, Any]],
    current: list[dict[str, Any]],
    ignore_changes: dict[str, list[str]] | None = None,
    declared: dict[str, Declared] | None = None,
) -> list[ResourceDiff]:
    """Resource by resource, matched by URN; `ignore_changes` maps a URN to the input paths
    its registration told the engine to leave alone, which are therefore not drift, and
    `declared` to its replacement options. An update that changes a field the provider or the
    registration replaces on is a replacement."""
    ignore_changes = ignore_changes or {}
    declared = declared or {}
    before = {r["urn"]: r for r in previous}
    after = {r["urn"]: r for r in current}
    diffs = []
    for urn in sorted(set(before) | set(after)):
        old, new = before.get(urn), after.get(urn)
        if old is None:
            diffs.append(ResourceDiff("create", new["type"], new["name"], new["protect"]))
        elif new is None:
            retained = bool(old.get("retain_on_delete"))
            diffs.append(
                ResourceDiff("delete", old["type"], old["name"], old["protect"], retained=retained)
            )
        else:
            changes = attribute_changes(old["inputs"], new["inputs"], ignore_changes.get(urn, []))
            found = Verdict()
            if changes:
                paths = [c.path for c in changes]
                found = with_declared(
                    verdict(new["type"], paths),
                    new["type"],
                    old["inputs"],
                    new["inputs"],
                    paths,
                    declared.get(urn, Declared()),
                )
            if old["protect"] != new["protect"]:
                changes += (Change("(protect)", old["protect"], new["protect"]),)
            # resources.json holds the flag only where it is set.
            kept = [bool(r.get("retain_on_delete")) for r in (old, new)]
            if kept[0] != kept[1]:
                changes += (Change("(retain_on_delete)", *kept),)
            if changes:
                protect = old["protect"] or new["protect"]
                action = "replace" if found.replaces else "update"
                diffs.append(
                    ResourceDiff(action, new["type"], new["name"], protect, changes, found)
                )
    return diffs
