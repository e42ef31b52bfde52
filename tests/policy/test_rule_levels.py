"""Which policy rules are mandatory and which advisory is a promise to the operator (STYLE.md
§15): this table lists every rule of policy/rules with its level as a literal, by module, and
whether it follows references between resources (`linked`: such a rule holds the deploy only in
`python -m plan`; under `pulumi preview --policy-pack policy` policy/__main__.py runs it as
advisory, since the references are still unknown there). A rule added, removed, renamed, moved
to another level or made linked fails here until the table says so, in review."""

from __future__ import annotations

from policy.rules import RULES, correctness, reliability, security, sizing, software

M, A = "mandatory", "advisory"
LINKED = True

# policy/rules/<module>.py -> rule name -> (level, linked), in the order the pack runs them.
BY_MODULE = {
    "security": {
        "eks-secrets-encrypted": (M, False),
        "prod-api-endpoint-private": (M, False),
        "api-endpoint-world-open": (A, False),
        "imdsv2-required": (M, False),
        "no-open-ingress": (M, False),
        "ebs-encrypted": (M, False),
        "prod-fsx-customer-key": (M, False),
        "s3-encrypted": (M, LINKED),
        "log-groups-encrypted": (A, False),
        "s3-public-access-blocked": (M, LINKED),
        "default-security-group-closed": (M, False),
        "kms-key-policy-and-rotation": (M, False),
        "node-groups-in-private-subnets": (M, LINKED),
        "efa-no-public-ip": (M, False),
        "iam-no-wildcard-write": (M, False),
        "privileged-only-where-needed": (M, False),
    },
    "software": {
        "images-pinned": (M, False),
        "helm-charts-pinned": (M, False),
    },
    "reliability": {
        "prod-stateful-protected": (M, False),
        "prod-fsx-backups": (M, LINKED),
        "control-plane-logs": (M, False),
        "log-retention-set": (M, False),
        "flow-logs-on": (A, LINKED),
        "containers-requests-limits": (M, False),
        "gpu-pods-tolerate-and-request": (M, False),
        "versioned-buckets-expire-old-versions": (M, LINKED),
    },
    "correctness": {
        "efa-security-group-self-rules": (M, LINKED),
        "efa-interface-count": (M, LINKED),
        "efa-single-subnet": (M, LINKED),
        "efa-device-plugin-installed": (M, False),
        "capacity-block-instance-type": (M, False),
        "fsx-in-gpu-zone": (M, LINKED),
        "fsx-lustre-ports": (M, LINKED),
        "no-placement-group-with-reservation": (M, False),
        "one-dcgm-exporter": (M, False),
        "node-labels-name-operator-configs": (M, False),
        "autoscaler-bounds": (M, False),
    },
    "sizing": {
        "host-memory-per-gpu-memory": (A, LINKED),
        "vcpus-per-gpu": (A, LINKED),
        "spot-outside-prod": (A, LINKED),
        "monthly-cost-within-budget": (A, False),
        "burst-queue-has-budget": (M, False),
    },
}  # fmt: skip
LEVELS = {name: level for rules in BY_MODULE.values() for name, level in rules.items()}
MODULES = {
    "security": security, "software": software, "reliability": reliability,
    "correctness": correctness, "sizing": sizing,
}  # fmt: skip


def test_every_rule_has_the_level_the_table_promises():
    assert {
        module: {r.name: (r.level, r.linked) for r in MODULES[module].RULES} for module in MODULES
    } == BY_MODULE


def test_the_pack_runs_every_module_s_rules_in_order_and_no_others():
    assert [r.name for r in RULES] == list(LEVELS)
    assert len(RULES) == 42


def test_the_preview_holds_the_deploy_on_the_25_unlinked_mandatory_rules():
    # policy/__main__.py: EnforcementLevel.MANDATORY only where the level is mandatory and the
    # rule needs no reference resolved. Counted by hand from the table: 35 mandatory, 10 linked.
    assert sum(1 for level, linked in LEVELS.values() if level == M and not linked) == 25
    assert sum(1 for r in RULES if r.level == "mandatory" and not r.linked) == 25
