"""Every rule of the pack, and the one function that runs them on a stack's resources.

`python -m plan` and the CrossGuard pack (`policy/__main__.py`) both run `RULES`; the
plan through `evaluate`, the pack by wrapping each rule in a policy.
"""

from __future__ import annotations

from collections.abc import Iterable

from policy.rules import correctness, reliability, security, sizing, software
from policy.rules.base import Context, Rule, Subject, Violation

RULES: list[Rule] = [
    *security.RULES,
    *software.RULES,
    *reliability.RULES,
    *correctness.RULES,
    *sizing.RULES,
]
BY_NAME = {r.name: r for r in RULES}


def findings(rule: Rule, subject: Subject, ctx: Context) -> list[Violation]:
    """One rule on one resource; what the stack's exemptions waive carries the reason."""
    if subject.type not in rule.types:
        return []
    reason = next(
        (
            e.reason
            for e in ctx.settings.exemptions
            if e.rule == rule.name and e.resource == subject.name
        ),
        None,
    )
    return [Violation(rule, subject, message, reason) for message in rule.check(subject, ctx)]


def violations(rule: Rule, subject: Subject, ctx: Context) -> list[Violation]:
    """One rule on one resource, less what the stack's exemptions waive."""
    return [v for v in findings(rule, subject, ctx) if v.waived is None]


def review(ctx: Context, rules: Iterable[Rule] = RULES) -> list[Violation]:
    """Every rule on every resource of the stack (and on every rendered object, for the rules
    that hold for them), waived violations included, so that a report can show what each
    exemption hides."""
    return [
        v
        for rule in rules
        for subject in (*ctx.resources, *(ctx.rendered if rule.rendered else ()))
        for v in findings(rule, subject, ctx)
    ]


def evaluate(ctx: Context, rules: Iterable[Rule] = RULES) -> list[Violation]:
    """Every rule on every resource of the stack, less what its exemptions waive."""
    return [v for v in review(ctx, rules) if v.waived is None]


__all__ = [
    "BY_NAME",
    "RULES",
    "Context",
    "Rule",
    "Subject",
    "Violation",
    "evaluate",
    "findings",
    "review",
    "violations",
]
