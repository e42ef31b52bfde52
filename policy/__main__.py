"""Builds the CrossGuard PolicyPack from `policy.rules`; nothing else. Never imported by tests.

Every rule becomes a stack validation policy: the rules look at one resource at a time but may
follow its links to others. Rules that follow links (`Rule.linked`) run advisory here, because
those links are unknown until apply; `python -m plan` resolves them and enforces them.
"""

import os
import sys
from pathlib import Path

from pulumi_policy import EnforcementLevel, PolicyPack, StackValidationPolicy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from model.cost import estimated_monthly_usd  # noqa: E402
from model.stacks import stack_config  # noqa: E402
from policy.rules import RULES, Context, Subject, violations  # noqa: E402

STACK = os.environ.get("GPU_PLATFORM_STACK")
if not STACK:
    sys.exit("set GPU_PLATFORM_STACK to the stack being previewed (its policy settings apply)")
CONFIG = stack_config(STACK, ROOT)
MONTHLY_USD = estimated_monthly_usd(CONFIG)


def _subject(resource) -> Subject:
    protect = bool(getattr(resource.opts, "protect", False))
    return Subject(resource.resource_type, resource.name, resource.props, protect, resource.urn)


def _policy(rule) -> StackValidationPolicy:
    def validate(args, report_violation) -> None:
        resources = tuple(map(_subject, args.resources))
        ctx = Context(
            resources,
            CONFIG.production,
            CONFIG.policy,
            MONTHLY_USD,
            CONFIG.cost.monthly_budget_usd,
        )
        for subject in ctx.resources:
            for found in violations(rule, subject, ctx):
                report_violation(f"{found.message}. Fix: {rule.remediation}", subject.urn)

    mandatory = rule.level == "mandatory" and not rule.linked
    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY if mandatory else EnforcementLevel.ADVISORY,
    )


PolicyPack(name="gpu-platform", policies=[_policy(rule) for rule in RULES])
