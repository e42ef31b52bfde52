"""Policy settings: the stack's monthly budget and the exemptions a reviewer granted.

The rules themselves live in `policy/rules/`; what a stack may change about them is here, so that
an exemption is a reviewed line in a stack file with its reason, never an edit to a rule.
"""

from __future__ import annotations

from pydantic import Field

from model.config.base import DnsLabel, Int, Reason, Settings


class PolicyExemption(Settings):
    """One rule waived for one resource, with the reason a reviewer accepted."""

    rule: str = Field(description="Rule name, as the plan prints it (e.g. no-open-ingress).")
    resource: str = Field(description="Logical name of the resource, as the plan prints it.")
    reason: Reason = Field(min_length=10, description="Why the rule does not apply here.")


class PolicySettings(Settings):
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
