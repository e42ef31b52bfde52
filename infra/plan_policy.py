"""The policy pack's offline run: every rule of `policy/rules` on every planned resource.

`python -m infra.plan <stack>` calls `check_plan` after planning; it prints the violations
grouped by level and fails the plan (exit 3) on any mandatory one, naming the resource, the rule
and the remediation. The CrossGuard pack (`policy/__main__.py`) runs the same rules under
`pulumi preview --policy-pack policy`.
"""

from __future__ import annotations

from pathlib import Path

from infra.config import PlatformConfig, config_from_pulumi, stack_file
from infra.cost import estimated_monthly_usd
from infra.plan import Plan
from infra.plan_engine import read_project, read_stack_config
from policy.rules import BY_NAME, Context, Subject, Violation, evaluate

EXIT_MANDATORY = 3


def subjects(plan: Plan) -> tuple[Subject, ...]:
    return tuple(Subject(r.type, r.name, r.inputs, r.protect, r.urn) for r in plan.resources)


def stack_config(stack: str, root: Path) -> PlatformConfig:
    """The stack's config as the program read it (the plan has already validated it)."""
    values, _ = read_stack_config(read_project(root), stack)
    return config_from_pulumi(values, stack_file(stack))


def context_for(plan: Plan, cfg: PlatformConfig) -> Context:
    return Context(
        resources=subjects(plan),
        production=cfg.production,
        settings=cfg.policy,
        monthly_usd=estimated_monthly_usd(cfg),
        monthly_budget_usd=cfg.cost.monthly_budget_usd,
    )


def format_violations(found: list[Violation]) -> str:
    if not found:
        return "Policies: every rule passes."
    lines = ["Policies:"]
    for level in ("mandatory", "advisory"):
        group = [v for v in found if v.rule.level == level]
        if group:
            lines.append(f"  {level} ({len(group)}):")
            for v in group:
                lines.append(f"    - {v.rule.name}: {v.resource.type} {v.resource.name}")
                lines.append(f"        {v.message}")
                lines.append(f"        fix: {v.rule.remediation}")
    return "\n".join(lines)


def stale_exemptions(cfg: PlatformConfig, plan: Plan) -> list[str]:
    """Exemptions that waive nothing: a misspelt rule or a resource the plan does not hold."""
    names = {r.name for r in plan.resources}
    return [
        f"policy.exemptions[{i}]: no rule {e.rule}"
        if e.rule not in BY_NAME
        else f"policy.exemptions[{i}]: no resource {e.resource} in this plan"
        for i, e in enumerate(cfg.policy.exemptions)
        if e.rule not in BY_NAME or e.resource not in names
    ]


def check_plan(plan: Plan, root: Path) -> tuple[str, int]:
    """The report to print and the exit status: EXIT_MANDATORY on a mandatory violation."""
    cfg = stack_config(plan.stack, root)
    found = evaluate(context_for(plan, cfg))
    failed = any(v.rule.level == "mandatory" for v in found)
    report = [format_violations(found)]
    report += [f"  stale exemption, waives nothing: {line}" for line in stale_exemptions(cfg, plan)]
    return "\n".join(report), EXIT_MANDATORY if failed else 0
