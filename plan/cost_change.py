"""The cost part of a diff against an earlier plan: each item whose monthly cost changed, and the
total, at the node groups' min, desired and max size, before and after, with the change
(`+$80,358.40/month at desired size`). Read from the two plans' `cost` outputs (model/cost.py),
so a change the resource diff does not show (a desired size, which the autoscaler owns and the
diff therefore skips) still shows its cost, and with it the nodes' root volumes: a size change
within capacity paid whether used or not still moves the EBS volumes its nodes have.
"""

from __future__ import annotations

import re
import typing

from model.config.nodes import CapacityType
from model.cost import SIZES
from plan.cost_text import money

# A figure an earlier plan's report lacks: plans from before the desired size was priced.
_MISSING = "n/a"
Monthly = tuple[str, tuple]  # (item, monthly figures at min, desired, max)
_NOTHING: Monthly = ("", (0, 0, 0))  # what an item one plan lacks costs in that plan

# How each capacity kind is billed, so what a change of size costs. None: by the instance-hour,
# so the figure at each size is what is paid at that size. Otherwise the kind is paid for its
# reserved instances whether they run or not, which the plan prices at max size (the group is
# sized to them): a min or desired change within them costs $0, a change at max size is a
# change of what is reserved, and costs.
BILLED_WHETHER_USED: dict[str, str | None] = {
    "on_demand": None,
    "spot": None,
    # EC2 User Guide, "Capacity Reservation pricing and billing": a reservation is charged at
    # the On-Demand rate whether instances run in it or not.
    "reservation": "a capacity reservation is billed for every reserved instance whether it "
    "runs or not",
    # EC2 User Guide, "Capacity Blocks pricing and billing"; the EC2 API's CapacityBlockOffering
    # upfrontFee: "The total price to be paid up front".
    "capacity_block": "a Capacity Block is paid up front for the whole block, whether its "
    "instances run or not",
}
assert set(BILLED_WHETHER_USED) == set(typing.get_args(CapacityType)), "a capacity kind unbilled"
# The kind as model/cost.py names an item: `GPU node group h100-block (p5.48xlarge,
# capacity_block)`; an item without one (system nodes) is on demand.
_KIND = re.compile(rf", ({'|'.join(BILLED_WHETHER_USED)})\)$")
_RESERVED_SIZES = SIZES[:-1]  # min and desired: sizes within what is reserved


def billing(item: str) -> str | None:
    """Why a size change of this item costs nothing below max size; None: billed by the hour."""
    found = _KIND.search(item)
    return BILLED_WHETHER_USED[found.group(1)] if found else None


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


def _billed(before: Monthly, after: Monthly) -> tuple:
    """The change the bill sees at each size (None: not comparable, _MISSING: not known):
    for a kind paid whether used, nothing below max size while both plans hold the item."""
    why = billing(after[0] or before[0])
    found = []
    for size, a, b in zip(SIZES, before[1], after[1], strict=True):
        if _MISSING in (a, b):
            found.append(_MISSING)
        elif a is None or b is None:
            found.append(None)
        elif why and size in _RESERVED_SIZES and before[0] and after[0]:
            found.append(0.0)
        else:
            found.append(round(b - a, 2))
    return tuple(found)


def _summed(column: tuple, before: float | str | None, after: float | str | None):
    """The total's billed change at one size: the items' billed changes added up."""
    if _MISSING in (before, after) or _MISSING in column:
        return _MISSING
    if None in (before, after) or None in column:
        return None
    return round(sum(column), 2)


def _changes(before: Monthly, after: Monthly, billed: tuple) -> list[str]:
    """The change at each size where both plans have a figure and it moved, as billed."""
    said = []
    why = billing(after[0] or before[0])
    for size, a, b, change in zip(SIZES, before[1], after[1], billed, strict=True):
        if change is _MISSING or a == b:
            continue
        if change is None:
            said.append(f"not comparable at {size} size ({money(a)} -> {money(b)})")
        elif change:
            sign = "+" if change > 0 else "-"
            said.append(f"{sign}${abs(change):,.2f}/month at {size} size")
        elif why:
            said.append(f"$0.00/month at {size} size: {why}")
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
    columns = [(0.0, 0.0, 0.0)]  # nothing changed adds up to nothing
    for key in [*new, *(k for k in old if k not in new)]:
        a, b = old.get(key), new.get(key)
        billed = _billed(a or _NOTHING, b or _NOTHING)
        columns.append(billed)
        said = _changes(a or _NOTHING, b or _NOTHING, billed)
        if said:
            item = (b or a)[0]
            lines += [f"  {item}: {_triple(a)} -> {_triple(b)}", f"      {'; '.join(said)}"]
    a, b = _total(before), _total(after)
    said = _changes(a, b, tuple(map(_summed, zip(*columns, strict=True), a[1], b[1])))
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
