"""The policy pack's offline run: every rule of `policy/rules` on every planned resource.

`python -m plan <stack>` calls `check_plan` after planning; it prints the violations
grouped by level (mandatory first), each naming the resource, the rule and the remediation, then
what the stack's exemptions waive with their reasons; a mandatory violation makes the plan's last
line a FAILED line and its exit status 3. `--strict` (`strict_check`) fails, exit 4, on any
warning the stack's `policy.waivers` do not name and any advisory its exemptions do not waive:
the gate a CI holds. The CrossGuard pack (`policy/__main__.py`) runs the
same rules under `pulumi preview --policy-pack policy`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from model.config import PlatformConfig
from model.config.policy import WarningWaiver
from model.cost import estimated_monthly_usd
from model.stacks import stack_config
from model.warning_kinds import warning_kind
from plan.model import Plan
from plan.render import Rendering
from policy.rules import BY_NAME, Context, Subject, Violation, review

EXIT_MANDATORY = 3
# `--strict`: a warning or an advisory the stack did not waive (docs/review.md, "Strict mode").
EXIT_STRICT = 4


def subjects(plan: Plan) -> tuple[Subject, ...]:
    return tuple(Subject(r.type, r.name, r.inputs, r.protect, r.urn) for r in plan.resources)


def rendered_subjects(rendering: Rendering | None) -> tuple[Subject, ...]:
    """Every object the releases render, typed as the program's own (`kubernetes:apps/v1:
    DaemonSet`) and named `<release>/<Kind>/<namespace>/<name>`; an object without a namespace
    is in the release's, where Helm installs it."""
    found = []
    for release, obj in rendering.outlines() if rendering else ():
        api = obj.get("apiVersion", "")
        meta = {"namespace": release.namespace, **(obj.get("metadata") or {})}
        found.append(
            Subject(
                f"kubernetes:{api if '/' in api else f'core/{api}'}:{obj['kind']}",
                f"{release.release}/{obj['kind']}/{meta['namespace']}/{meta.get('name')}",
                {**obj, "metadata": meta},
                release=release.release,
            )
        )
    return tuple(found)


def context_for(plan: Plan, cfg: PlatformConfig, rendering: Rendering | None = None) -> Context:
    return Context(
        resources=subjects(plan),
        rendered=rendered_subjects(rendering),
        production=cfg.production,
        settings=cfg.policy,
        monthly_usd=estimated_monthly_usd(cfg),
        monthly_budget_usd=cfg.cost.monthly_budget_usd,
    )


def format_violations(found: list[Violation]) -> str:
    """Mandatory violations first, then advisory ones, then what the stack's exemptions waive,
    each with its reason: a waiver is a decision a reviewer should keep seeing."""
    active = [v for v in found if v.waived is None]
    waived = {(v.rule.name, v.resource.name): v.waived for v in found if v.waived is not None}
    if not active:
        head = "Policies: every rule passes" + (", less what the stack waives:" if waived else ".")
        lines = [head]
    else:
        lines = ["Policies:"]
    for level in ("mandatory", "advisory"):
        group = [v for v in active if v.rule.level == level]
        if group:
            lines.append(f"  {level} ({len(group)}):")
            for v in group:
                lines.append(f"    - {v.rule.name}: {v.resource.type} {v.resource.name}")
                lines.append(f"        {v.message}")
                lines.append(f"        fix: {v.rule.remediation}")
    lines += [f"  waived: {rule} on {name}: {reason}" for (rule, name), reason in waived.items()]
    return "\n".join(lines)


def stale_exemptions(cfg: PlatformConfig, ctx: Context) -> list[str]:
    """Exemptions that waive nothing: a misspelt rule, or a resource neither the plan holds
    nor a release renders."""
    names = {r.name for r in (*ctx.resources, *ctx.rendered)}
    return [
        f"policy.exemptions[{i}]: no rule {e.rule}"
        if e.rule not in BY_NAME
        else f"policy.exemptions[{i}]: no resource {e.resource} in this plan"
        for i, e in enumerate(cfg.policy.exemptions)
        if e.rule not in BY_NAME or e.resource not in names
    ]


@dataclass(frozen=True)
class PolicyCheck:
    """The policy pack's verdict on one plan: the report, and what the summary line counts."""

    report: str
    failed: list[Violation]
    advisories: list[Violation]
    waived: int

    @property
    def advisory(self) -> int:
        return len(self.advisories)

    @property
    def status(self) -> int:
        return EXIT_MANDATORY if self.failed else 0

    def summary(self, stack: str, resources: int, seconds: float) -> str:
        """The plan's last line; FAILED on a mandatory violation, so that neither advisories
        nor a long plan above it hide the verdict (and `--quiet` prints only this line)."""
        counts = f"{self.advisory} advisory, {self.waived} waived"
        if not self.failed:
            return (
                f"Planned {stack}: {resources} resources in {seconds:.2f} s; "
                f"policies: 0 mandatory, {counts}"
            )
        which = ", ".join(f"{v.rule.name} on {v.resource.name}" for v in self.failed)
        return (
            f"FAILED {stack}: {len(self.failed)} mandatory policy violation"
            f"{'s' if len(self.failed) > 1 else ''} ({which}); {counts}; "
            f"{resources} resources planned in {seconds:.2f} s; exit {EXIT_MANDATORY}"
        )


def check_plan(plan: Plan, root: Path, rendering: Rendering | None = None) -> PolicyCheck:
    """Every rule on the plan (and the rendered objects): the report to print and the
    verdict."""
    cfg = stack_config(plan.stack, root)
    ctx = context_for(plan, cfg, rendering)
    found = review(ctx)
    report = [format_violations(found)]
    report += [f"  stale exemption, waives nothing: {line}" for line in stale_exemptions(cfg, ctx)]
    active = [v for v in found if v.waived is None]
    return PolicyCheck(
        "\n".join(report),
        failed=[v for v in active if v.rule.level == "mandatory"],
        advisories=[v for v in active if v.rule.level == "advisory"],
        waived=sum(v.waived is not None for v in found),
    )


@dataclass(frozen=True)
class StrictCheck:
    """`--strict`'s verdict: the warnings and advisories the stack did not waive."""

    warnings: list[str]
    waived: list[tuple[str, str]]
    advisories: list[Violation]
    stale: list[str]

    @property
    def status(self) -> int:
        return EXIT_STRICT if self.warnings or self.advisories else 0

    def lines(self) -> list[str]:
        """One line for each warning and each advisory not waived, then each waived warning
        with its reason: what `--quiet` prints above the last line."""
        ads = self.advisories
        return [
            *(f"warning: {w}" for w in self.warnings),
            *(f"advisory: {v.rule.name} on {v.resource.name}: {v.message}" for v in ads),
            *(f"waived warning: {w} (reason: {reason})" for w, reason in self.waived),
            *(f"stale waiver, waives nothing: {line}" for line in self.stale),
        ]

    def summary(self, stack: str, resources: int, seconds: float) -> str:
        if not self.status:
            return f"strict: no warning or advisory unwaived ({len(self.waived)} warnings waived)"
        kinds = sorted({warning_kind(w) or "no id" for w in self.warnings})
        rules = sorted({v.rule.name for v in self.advisories})
        which = "; ".join(
            part
            for part in (
                f"{len(self.warnings)} warnings ({', '.join(kinds)})" if kinds else "",
                f"{len(self.advisories)} advisories ({', '.join(rules)})" if rules else "",
            )
            if part
        )
        return (
            f"FAILED {stack} (strict): not waived: {which}; {resources} resources planned in "
            f"{seconds:.2f} s; exit {EXIT_STRICT}"
        )


def strict_check(
    warnings: list[str], waivers: list[WarningWaiver], policies: PolicyCheck
) -> StrictCheck:
    """Each warning waived by its id, or not (a warning with no id cannot be waived); the
    advisories the stack's exemptions left; the waivers that waive nothing."""
    reasons = {w.id: w.reason for w in waivers}
    kinds = {warning_kind(w) for w in warnings}
    return StrictCheck(
        warnings=[w for w in warnings if warning_kind(w) not in reasons],
        waived=[(w, reasons[kind]) for w in warnings if (kind := warning_kind(w)) in reasons],
        advisories=policies.advisories,
        stale=[
            f"policy.waivers[{i}]: no {w.id} warning in this plan"
            for i, w in enumerate(waivers)
            if w.id not in kinds
        ],
    )
