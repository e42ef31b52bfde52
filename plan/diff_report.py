"""The changes block of `python -m plan <stack> --against <earlier plan>`, printed before
the plan (or alone with --changes-only), the way `terraform plan` prints one: `+` create, `~`
update attribute by attribute, `-/+` replace (naming the fields that force it), `-` delete; user
data decoded MIME part by MIME part; whole list items added or removed as one range; then what
the change costs per month at the node groups' min, desired and max size.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from plan.blast_radius import blast_radius
from plan.cost_change import format_cost_change
from plan.diff import (
    ABSENT,
    Change,
    Declared,
    Items,
    PreviousPlan,
    ResourceDiff,
    diff_plans,
)
from plan.knock_on import (
    KnockOn,
    flowing,
    format_knock_on,
    knock_on_totals,
    own_rolls,
)
from plan.migration import migration_block
from plan.rendered_diff import current_sources, diff_rendered
from plan.replacements import GONE_UNTIL_CREATED, HELD_WHILE_NAMED, path_pattern
from plan.userdata_diff import userdata_lines

if TYPE_CHECKING:  # plan imports this module to print the block
    from plan.model import Plan
    from plan.render import Rendering

_SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}
# A launch template's user data: base64 of a MIME document, diffed as decoded text.
USER_DATA = "userData"


def _shown(value: Any) -> str:
    return "(absent)" if value is ABSENT else json.dumps(value, sort_keys=True)


def _change_lines(d: ResourceDiff, c: Change) -> list[str]:
    forced = any(path_pattern(p).match(c.path) for p in d.verdict.forced_by)
    mark = "  # forces replacement" if forced else ""
    before, after = c.before, c.after
    if c.path == USER_DATA and all(isinstance(v, str) or v is ABSENT for v in (before, after)):
        text = ["" if v is ABSENT else v for v in (before, after)]
        decoded = userdata_lines(*text)
        return [f"      ~ {c.path} (decoded){mark}:", *(f"          {x}" for x in decoded)]
    if isinstance(before, Items):
        return [f"      - {c.path} removed ({before.count} items){mark}"]
    if isinstance(after, Items):
        return [f"      + {c.path} added ({after.count} items){mark}"]
    if before is ABSENT:
        return [f"      + {c.path}: {_shown(after)}{mark}"]
    if after is ABSENT:
        return [f"      - {c.path}: {_shown(before)}{mark}"]
    return [f"      ~ {c.path}: {_shown(before)} -> {_shown(after)}{mark}"]


def _heading(d: ResourceDiff, rendered: bool) -> str:
    # A rendered object's name already says its kind, as `helm diff` prints it.
    line = f"  {_SYMBOL[d.action]} {d.name if rendered else f'{d.type} {d.name}'}"
    if d.action == "replace":
        line += f" (forces replacement: {', '.join(d.verdict.forced_by)}"
        if d.verdict.delete_before_replace:
            line += "; deleted before the new one is created"
        line += ")"
    if d.retained:
        line += "  [RETAINED: forgotten, left on the cluster]"
    return line + ("  [PROTECTED]" if d.protect else "")


def _notes(d: ResourceDiff) -> list[str]:
    """What the provider-facts table cannot decide for this change, in its own words."""
    notes = [f"      may force replacement: {path}: {why}" for path, why in d.verdict.maybe]
    notes += [
        f"      refused by the API server: {path}: {why} (immutable in the CRD, and nothing "
        "replaces the object on it: `pulumi up` fails here)"
        for path, why in d.verdict.refused
    ]
    notes += [f"      checked by the API server: {path}: {why}" for path, why in d.verdict.checked]
    if d.action == "replace" and d.verdict.delete_before_replace and d.type in HELD_WHILE_NAMED:
        notes.append(
            f"      Kueue keeps it (finalizer kueue.x-k8s.io/resource-in-use) while "
            f"{HELD_WHILE_NAMED[d.type]}: the delete waits until none does"
        )
    if d.action == "replace" and d.verdict.delete_before_replace and d.type in GONE_UNTIL_CREATED:
        notes.append(f"      deleted first: {GONE_UNTIL_CREATED[d.type]}")
    if d.type.startswith("pulumi:providers:"):
        notes.append(
            "      a provider's settings: `pulumi preview` decides what this replaces (changing "
            "aws:region replaces every regional AWS resource)"
        )
    elif d.verdict.unknown_type:
        notes.append(
            f"      replacement not known: the provider-facts table has no row for {d.type}"
        )
    return notes


def format_diff(
    diffs: list[ResourceDiff],
    against: str,
    rendered: bool = False,
    unknown: dict[str, str] | None = None,
    knock_on: list[KnockOn] = (),
    unchecked: dict[str, str] | None = None,
) -> str:
    """The program's resources, or (`rendered`) what the Helm releases render. `unknown` maps
    each release this plan could not render to why: its objects are unknown, said at the
    release and in the totals, never counted as deleted. `unchecked` maps each release whose
    custom resources were validated against another release's CRDs to why, said at the
    release."""
    unknown, unchecked = unknown or {}, unchecked or {}
    if rendered:
        lines = [f"Rendered objects against {against}:"]
        none = "  none: the releases render what they rendered"
        lines += [f"  ? {release}: unknown ({why})" for release, why in sorted(unknown.items())]
    else:
        lines = [f"Changes against {against}:"]
        none = "  none: this plan declares what the earlier plan declared"
    if not diffs and not (rendered and unknown):
        lines.append(none)
    for d in diffs:
        lines.append(_heading(d, rendered))
        for change in d.changes:
            lines += _change_lines(d, change)
        lines += _notes(d)
        if not rendered and d.name in unknown:
            lines.append(f"      what it renders: unknown ({unknown[d.name]})")
        if not rendered and d.name in unchecked:
            lines.append(f"      {unchecked[d.name]}")
    lines += format_knock_on(list(knock_on), rendered)
    counts = {a: sum(d.action == a for d in diffs) for a in _SYMBOL}
    unknown_count = f", {len(unknown)} unknown" if rendered and unknown else ""
    lines.append(
        f"{'Rendered' if rendered else 'Diff'}: {counts['create']} to create, "
        f"{counts['update']} to update, "
        f"{counts['replace']} to replace, {counts['delete']} to delete{unknown_count}."
    )
    lines += knock_on_totals(list(knock_on))
    maybe = sorted(d.name for d in diffs if d.action == "update" and d.verdict.maybe)
    if maybe:
        lines.append(
            f"  {len(maybe)} of the updates may replace (see `may force replacement`): "
            + ", ".join(maybe)
        )
    refused = sorted(d.name for d in diffs if d.verdict.refused)
    if refused:
        lines.append(
            f"  {len(refused)} of the changes the API server refuses (see `refused by the API "
            "server`): " + ", ".join(refused)
        )
    touched = sorted(f"{d.name} ({d.action})" for d in diffs if d.protect)
    if touched:
        lines.append(
            "Protected resources changed: "
            + ", ".join(touched)
            + ". `pulumi up` refuses to delete or replace them while protected: lift `protect` "
            "first, or undo the change that forces the replacement."
        )
    return "\n".join(lines)


def changes_block(
    plan: Plan, previous: PreviousPlan, against: str, rendering: Rendering | None = None
) -> str:
    """The resource diff, the rendered objects' diff (where both plans rendered) and the cost
    change against an earlier plan."""
    current = [r.as_json() for r in plan.resources]
    ignored = {r.urn: list(r.ignore_changes) for r in plan.resources}
    declared = {
        r.urn: Declared(r.replace_on_changes, r.delete_before_replace) for r in plan.resources
    }
    diffs = diff_plans(previous.resources, current, ignored, declared)
    unknown = {u.release: u.why() for u in rendering.unrendered} if rendering else {}
    unchecked = rendering.unchecked_crds if rendering else {}
    effects = [*own_rolls(diffs), *flowing(diffs, current)]
    blocks = [format_diff(diffs, against, unknown=unknown, knock_on=effects, unchecked=unchecked)]
    found, sources = [], current_sources(rendering) if rendering is not None else {}
    if rendering is not None and previous.rendered:
        found = diff_rendered(previous.rendered, sources, frozenset(unknown))
        blocks.append(
            format_diff(found, against, rendered=True, unknown=unknown, knock_on=own_rolls(found))
        )
    blocks += blast_radius(previous, current, plan.outputs, diffs, effects, found, sources)
    blocks += migration_block(previous, current, plan.outputs)
    cost = format_cost_change(previous.outputs.get("cost"), plan.outputs.get("cost"))
    return "\n".join([*blocks, *cost])
