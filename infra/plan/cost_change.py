"""The cost part of a diff against an earlier plan: each item whose monthly cost changed, and the
total, at the node groups' min, desired and max size, before and after, with the change
(`+$80,358.40/month at desired size`). Read from the two plans' `cost` outputs (infra/cost.py),
so a change the resource diff does not show (a desired size, which the autoscaler owns and the
diff therefore skips) still shows its cost.
"""

from __future__ import annotations

from infra.cost import SIZES, money

# A figure an earlier plan's report lacks: plans from before the desired size was priced.
_MISSING = "n/a"
Monthly = tuple[str, tuple]  # (item, monthly figures at min, desired, max)
_NOTHING: Monthly = ("", (0, 0, 0))  # what an item one plan lacks costs in that plan


def _monthly(report: dict, by_key: bool) -> dict[str, Monthly]:
    """Each item's monthly figures (an unpriced item's are None), by the item's key, or by
    its words for a report from before lines had keys."""
    found = {}
    for line in report["lines"]:
        figures = tuple(line.get(f"monthly_{size}", _MISSING) for size in SIZES)
        found[line["key"] if by_key else line["item"]] = (line["item"], figures)
    for item in report["unpriced"]:
        found[item["key"] if by_key else item["item"]] = (item["item"], (None, None, None))
    return found


def _triple(entry: Monthly | None) -> str:
    if entry is None:
        return "(none)"
    return " / ".join(money(v) for v in entry[1])


def _changes(before: Monthly, after: Monthly) -> list[str]:
    """The change at each size where both plans have a figure and it moved."""
    said = []
    for size, a, b in zip(SIZES, before[1], after[1], strict=True):
        if _MISSING in (a, b) or a == b:
            continue
        if a is None or b is None:
            said.append(f"not comparable at {size} size ({money(a)} -> {money(b)})")
            continue
        change = round(b - a, 2)
        if change:
            sign = "+" if change > 0 else "-"
            said.append(f"{sign}${abs(change):,.2f}/month at {size} size")
    return said


def _total(report: dict) -> Monthly:
    return ("total", tuple(report.get(f"total_monthly_{s}", _MISSING) for s in SIZES))


def format_cost_change(before: dict | None, after: dict | None) -> list[str]:
    """The cost part of a diff, from the two plans' `cost` outputs: each node group and other
    item whose monthly cost changed, and the total, at min / desired / max size, before and
    after, with the change (`+$80,358.40/month at desired size`)."""
    old_priced, new_priced = bool((before or {}).get("priced")), bool((after or {}).get("priced"))
    if not (old_priced or new_priced):
        return []
    lines = ["", "Cost change (USD/month at node groups' min / desired / max size):"]
    if not (old_priced and new_priced):
        side = "the earlier plan" if new_priced else "this plan"
        why = (after or {}).get("why") or (before or {}).get("why") or "no cost estimate"
        return [*lines, f"  not compared: {side} is not priced ({why})"]
    by_key = all("key" in line for line in before["lines"])
    old, new = _monthly(before, by_key), _monthly(after, by_key)
    for key in [*new, *(k for k in old if k not in new)]:
        a, b = old.get(key), new.get(key)
        said = _changes(a or _NOTHING, b or _NOTHING)
        if said:
            item = (b or a)[0]
            lines += [f"  {item}: {_triple(a)} -> {_triple(b)}", f"      {'; '.join(said)}"]
    a, b = _total(before), _total(after)
    said = _changes(a, b)
    if not said:
        lines.append(f"  none: {_triple(b)}, as in the earlier plan")
    else:
        lines += [f"  total: {_triple(a)} -> {_triple(b)}", f"      {'; '.join(said)}"]
    if _MISSING in a[1]:
        lines.append("  the earlier plan has no figures at desired size: not compared there")
    elif a[1][1] != b[1][1]:
        lines.append(
            "  a node group starts at its desired size when it is created or replaced; after "
            "that cluster-autoscaler owns its size (ignore_changes: scalingConfig.desiredSize)"
        )
    return lines
