"""Every kind of warning the program and the offline plan give, by a stable id.

A warning is a message that plans fine but asks for a person: an example account, a quota over a
pool, a budget exceeded. Each ends with its id (`... [warning over-budget]`), so `pulumi up`,
the plan and CI name the same kind, and a stack waives a kind by that id under
`gpu-platform:policy.waivers` (`python -m plan <stack> --strict` fails on any warning not
waived). An id is a promise to the stack files that name it: rename one only with an alias.
"""

from __future__ import annotations

import re

# id -> what the warning says, as docs/review.md lists it.
WARNINGS: dict[str, str] = {
    "documentation-account": "a config value names an AWS documentation example account id",
    "documentation-cidr": "an API access range is inside an RFC 5737 documentation block",
    "kubernetes-extended-support": "the EKS minor is past standard support (billed extra)",
    "kubernetes-support-ending": "the EKS minor leaves standard support within 30 days",
    "kubernetes-untested-minor": "an existing cluster's minor is older than EKS serves",
    "host-driver-rdma": "GPUDirect RDMA on the nodes' own driver needs nvidia-peermem or DMA-BUF",
    "unconfirmed-addon-build": "a managed add-on build no recorded listing confirms",
    "existing-addon-unchecked": "an add-on the cluster runs, which the plan cannot check offline",
    "over-budget": "the cost estimate at max size is over cost.monthly_budget_usd",
    "burst-over-budget": "a queue's burst may spend more than its burst.monthly_budget_usd",
    "quota-gpus-only": "Kueue counts GPUs only: a pool lacks cpus and memory per node",
    "quota-over-pool": "the nominal quotas of a pool add up to more GPUs than it holds",
    "topology-labels-unapplied": "an on-prem pool's nodes lack the topology labels Kueue needs",
    "selftest-example-image": "selftest.image has the all-zero EXAMPLE digest",
    "selftest-mode-warn": "selftest.mode warn: `pulumi up` does not wait for the self-test",
    "capacity-block-roll": "a Capacity Block group rolls its nodes since the previous plan",
    "mig-fabric-pool": "a MIG pool has a multi-node fabric that no job of it can use",
    "reservation-window-cold": "a windowed Capacity Block scales from zero: no node is warmed",
    "reservation-drain-waits": "a window requeues, but a queue has no other flavor to requeue to",
    "chart-not-cached": "a pinned chart is not in the chart cache: its release is not rendered",
    "shared-data-unprovided": "an AWS stack declares no shared-data: its jobs' pods stay Pending",
    "shared-data-claim-unchecked": "shared-data is the admin's claim, which the plan cannot see",
    "nvidia-images-uncopied": "NVIDIA's images still come from nvcr.io: copy them into ECR",
}

_TAG = re.compile(r" \[warning ([a-z0-9-]+)\]$")


def warning(kind: str, message: str) -> str:
    """`message` tagged with its kind; an id not in WARNINGS is a programming error."""
    if kind not in WARNINGS:
        raise KeyError(f"warning kind {kind!r} is not in model/warning_kinds.py WARNINGS")
    return f"{message} [warning {kind}]"


def warning_kind(message: str) -> str | None:
    """The kind a warning's message ends with; None for one that names none."""
    match = _TAG.search(message)
    return match.group(1) if match else None
