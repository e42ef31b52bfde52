"""The plan's cost section as a reviewer reads it: the `cost` output (infra/cost.cost_report)
printed figure by figure, with its budget verdicts. It reads only the report, so a report an
earlier plan wrote prints the same way (plan/cost_change.py compares two of them)."""

from __future__ import annotations

from model.cost import SIZES


def money(value: float | str | None, places: int = 2) -> str:
    if isinstance(value, str):  # a figure an earlier plan's report did not hold
        return value
    return "not priced" if value is None else f"${value:,.{places}f}"


def _figures(source: dict, prefix: str, places: int = 2) -> str:
    """At min / desired / max size, or the one figure of an item whose sizes agree."""
    values = [source.get(f"{prefix}_{size}") for size in SIZES]
    if len(set(values)) == 1:
        return money(values[0], places)
    return " / ".join(money(v, places) for v in values)


def format_cost(report: dict) -> list[str]:
    """The plan's cost section, from the `cost` output."""
    lines = ["", "Cost estimate (USD at node groups' min / desired / max size; one figure where "]
    lines[-1] += "they agree; desired is what runs from day one):"
    if not report.get("priced"):
        return [*lines, f"  {report['why']}", *_format_bursts(report)]
    lines.append(f"  rates: {report['region']}'s (model/catalog_prices.py, dated per line)")
    for line in report["lines"]:
        hourly, monthly = _figures(line, "hourly", 3), _figures(line, "monthly")
        lines.append(f"  {line['item']}: {hourly}/h, {monthly}/month")
        lines.append(f"      {line['basis']}")
    hourly, monthly = _figures(report, "total_hourly", 3), _figures(report, "total_monthly")
    lines.append(f"  total: {hourly}/h, {monthly}/month ({report['hours_per_month']} h)")
    for item in report["unpriced"]:
        lines.append(f"  {item['item']}: not priced, not in the total")
        lines.append(f"      {item['why']}")
    for window in report.get("reservations", []):
        paid = f"{window['paid_instance_hours']:,g} instance-h paid"
        idle = f"{window['idle_instance_hours']:,g} instance-h paid but idle"
        usd = f" ({money(window['idle_usd'])})" if "idle_usd" in window else ""
        lines.append(
            f"  reservation window of {window['group']}, {window['start']} to {window['end']}: "
            f"{paid}, {idle}{usd}"
        )
        lines.append(f"      {window['idle_why']}, when no job runs")
    lines.append(f"  left out: {report['left_out']}")
    # A report from before resource types were listed holds `left_out` only.
    for kind in report.get("not_priced", []):
        lines.append(f"  not priced, billed by use: {kind['resource_type']}: {kind['why']}")
    budget = report.get("monthly_budget_usd")
    if budget is None:
        lines.append("  budget: none set (gpu-platform:cost.monthly_budget_usd)")
    else:
        verdict = "OVER BUDGET" if report["over_budget"] else "within budget"
        # The total a budget is checked against leaves the unpriced items out: say how many.
        unpriced = len(report["unpriced"])
        short = f" (the total leaves out {unpriced} items not priced)" if unpriced else ""
        lines.append(f"  budget: {money(budget)}/month; at max size {verdict}{short}")
    return [*lines, *_format_bursts(report), *_format_teams(report)]


def _format_teams(report: dict) -> list[str]:
    """Each team's share of its ClusterQueue's nominal GPUs, priced for the month (model/cost.py,
    team_quota_lines): what its own quota may cost, beside its budget."""
    teams = report.get("teams", [])
    if not teams:
        return []
    lines = ["  by team quota (each team's share of its queue's nominal GPUs, all month):"]
    for team in teams:
        shared = f", shared with {team['shared_with']} other team(s)" if team["shared_with"] else ""
        budget = team.get("monthly_budget_usd")
        said = f"; budget {money(budget)}/month" if budget is not None else ""
        unpriced = team["unpriced_pools"]
        left = f" (not priced: {', '.join(unpriced)})" if unpriced else ""
        lines.append(
            f"    {team['team']} (queue {team['cluster_queue']}{shared}): "
            f"{money(team['monthly_usd'])}/month{left}{said}"
        )
        for pool in team["pools"]:
            price = pool.get("gpu_hour_usd")
            priced = (
                f"{pool['gpus']:g} GPUs x ${price:g}/GPU-h = {money(pool['monthly_usd'])}/month"
                if price is not None
                else f"{pool['gpus']:g} GPUs, not priced: {pool['basis']}"
            )
            lines.append(f"      {pool['pool']}: {priced}")
    return lines


def _format_bursts(report: dict) -> list[str]:
    """Each bursting queue's most spend on its MultiKueue workers, against its own budget."""
    lines = []
    for burst in report.get("burst", []):
        budget = burst["monthly_budget_usd"]
        if burst["monthly_max"] is None:
            verdict = "not priced, budget not checked"
        else:
            over = burst["monthly_max"] > budget
            verdict = f"budget {money(budget)}: {'OVER BUDGET' if over else 'within budget'}"
        lines.append(f"  {burst['item']}: at most {money(burst['monthly_max'])}/month; {verdict}")
        lines.append(f"      {burst['basis']}")
    return lines
