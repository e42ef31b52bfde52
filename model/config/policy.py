"""Policy settings: the stack's monthly budget and the exemptions a reviewer granted.

The rules themselves live in `policy/rules/`; what a stack may change about them is here, so that
an exemption is a reviewed line in a stack file with its reason, never an edit to a rule.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from model.config.base import DnsLabel, Int, Reason, Settings
from model.warning_kinds import WARNINGS

# Every warning id, so that a misspelt waiver is refused with the valid ones, and the stack
# files' JSON Schema lists them.
WarningId = Literal[tuple(WARNINGS)]


class PolicyExemption(Settings):
    """One rule waived for one resource, with the reason a reviewer accepted."""

    rule: str = Field(description="Rule name, as the plan prints it (e.g. no-open-ingress).")
    resource: str = Field(description="Logical name of the resource, as the plan prints it.")
    reason: Reason = Field(min_length=10, description="Why the rule does not apply here.")


class WarningWaiver(Settings):
    """One kind of warning accepted for this stack, with the reason a reviewer accepted: the
    plan still prints it (as waived), and `python -m plan --strict` no longer fails on it."""

    id: WarningId = Field(
        description="The warning's id, as the plan prints it at the end of the warning "
        "(`[warning over-budget]`); docs/review.md lists them."
    )
    reason: Reason = Field(min_length=10, description="Why the warning is accepted here.")


class PolicySettings(Settings):
    waivers: list[WarningWaiver] = Field(
        default_factory=list,
        description="Warnings accepted for this stack, by id, each with its reason: "
        "`python -m plan <stack> --strict` fails on every other warning.",
    )
    exemptions: list[PolicyExemption] = Field(
        default_factory=list,
        description="Rules waived for named resources (for instance an ingress rule that must "
        "be open to 0.0.0.0/0), each with its reason.",
    )
    allow_placement_group_with_reservation: bool = Field(
        False,
        description="Allow a cluster placement group on a group that launches into a capacity "
        "reservation: only when the reservation was made in that placement group.",
    )
    privileged_namespaces: list[DnsLabel] = Field(
        # monitoring: kube-prometheus-stack's node-exporter mounts the host's /proc, /sys and /.
        default_factory=lambda: [
            "kube-system",
            "gpu-operator",
            "nvidia-network-operator",
            "monitoring",
        ],
        description="Namespaces whose pods may run privileged or mount hostPath (drivers, "
        "device plugins, node agents such as node-exporter), the charts' rendered pods included.",
    )
    min_vcpus_per_gpu: Int = Field(
        8,
        ge=1,
        le=1024,
        description="Advisory floor of vCPUs per GPU for data loading and the launcher.",
    )
