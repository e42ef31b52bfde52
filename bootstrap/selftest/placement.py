"""Where each rank ran in the network (issue 21): its node's topology labels, read from the API
server (GET /api/v1/nodes/$NODE_NAME: the downward API cannot expose a node's labels), so a slow
cross-node all-reduce can be traced to placement.

The labels are the Kueue Topology levels of the pool, broadest first, in
SELFTEST_TOPOLOGY_LABELS (the program sets them: `topology.k8s.aws/network-node-layer-1..N` on
AWS, the admin's spine / rack labels on-prem, then `kubernetes.io/hostname`). Every rank records
its node's (`inventory.topology_domain`); rank 0 then writes one row for the run, and names the
domains the cross-node busbw check spanned: the narrowest level all its nodes share, and how
they split below it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from contract.env import SELFTEST_TOPOLOGY_LABELS
from selftest.context import SelfTestContext
from selftest.kube import ApiServer, KubeError
from selftest.result import SEVERITY, CheckResult

NAME = "inventory.topology_domain"
HOSTNAME = "kubernetes.io/hostname"
INTER_NODE = "collectives.allreduce_busbw_inter_node"
SOURCE = "node labels (GET /api/v1/nodes/<node>), the pool's Kueue Topology levels"


def levels(env: Mapping[str, str]) -> list[str]:
    return [
        label.strip() for label in env.get(SELFTEST_TOPOLOGY_LABELS, "").split(",") if label.strip()
    ]


def _describe(domain: Mapping[str, str | None]) -> str:
    return ", ".join(f"{label}={value or '(absent)'}" for label, value in domain.items())


def domain_check(ctx: SelfTestContext, env: Mapping[str, str]) -> CheckResult:
    """This rank's node and the value of each topology label on it."""
    wanted = levels(env)
    if not wanted:
        return CheckResult(
            NAME,
            "SKIP",
            reason=f"the pool has no topology levels ({SELFTEST_TOPOLOGY_LABELS} unset)",
        )
    try:
        server = ApiServer.in_cluster(dict(env))
    except KubeError as error:
        return CheckResult(NAME, "SKIP", reason=f"node labels unreadable: {error}")
    try:
        labels = server.get_node(ctx.node).get("metadata", {}).get("labels") or {}
    except KubeError as error:
        return CheckResult(NAME, "WARN", reason=f"node {ctx.node}: {error}", source=SOURCE)
    domain = {label: labels.get(label) for label in wanted}
    missing = [label for label, value in domain.items() if value is None]
    return CheckResult(
        NAME, "WARN" if missing else "INFO", _describe(domain), source=SOURCE,
        reason=f"node {ctx.node} lacks {', '.join(missing)}: Kueue cannot place pods by "
        "these levels" if missing else "",
        details={"node": ctx.node, "topology": domain},
    )  # fmt: skip


def spread(domains: Mapping[str, Mapping[str, str | None]]) -> str:
    """Where a set of nodes sits: the narrowest network level they all share, then how they
    split at the next one (the host level is left out: each node is its own host)."""
    nodes = sorted(domains)
    network = [label for label in next(iter(domains.values())) if label != HOSTNAME]
    shared = ""
    for label in network:
        values = {node: domains[node].get(label) for node in nodes}
        if None in values.values():
            lacking = ", ".join(n for n, v in values.items() if v is None)
            return f"{shared}{lacking} without {label}".strip()
        if len(set(values.values())) > 1:
            by_value: dict[str, list[str]] = {}
            for node, value in values.items():
                by_value.setdefault(value, []).append(node)
            split = ", ".join(f"{v} ({', '.join(ns)})" for v, ns in sorted(by_value.items()))
            return f"{shared}split across {len(by_value)} {label} domains: {split}"
        shared = f"under {label}={values[nodes[0]]}, "
    if not network:
        return f"nodes {', '.join(nodes)}: no network levels"
    return f"all {len(nodes)} nodes {shared.rstrip(', ')}"


def name_domains(per_rank: list[tuple[str, int, list[CheckResult]]], results: list[CheckResult]):
    """Rank 0, after gathering: one topology row for the run listing each node's ranks and
    domain, and the cross-node busbw row naming the domains it spanned."""
    domains: dict[str, dict] = {}
    ranks: dict[str, list[int]] = {}
    rows = []
    for rank, (node, _, mine) in enumerate(per_rank):
        ranks.setdefault(node, []).append(rank)
        for row in mine:
            if row.name == NAME:
                rows.append(row)
                if "topology" in row.details:
                    domains.setdefault(node, row.details["topology"])
    if not domains:
        return results
    summary = "; ".join(
        f"{node} (ranks {_ranges(ranks[node])}): {_describe(domains[node])}"
        for node in sorted(domains)
    )
    worst = max(rows, key=lambda r: SEVERITY[r.status])
    run_row = CheckResult(
        NAME, worst.status, f"{len(domains)} nodes", source=SOURCE,
        reason="; ".join(filter(None, [worst.reason, summary])),
        details={"topology": domains, "ranks": ranks},
    )  # fmt: skip
    out = []
    for result in results:
        if result.name == NAME:
            result = run_row
        elif result.name == INTER_NODE and result.status != "SKIP":
            where = f"placement: {spread(domains)}"
            reason = f"{result.reason}; {where}" if result.reason else where
            result = replace(
                result, reason=reason, details={**result.details, "placement": domains}
            )
        out.append(result)
    return out


def _ranges(numbers: list[int]) -> str:
    """0, 1, 2, 5 as '0-2, 5'."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)
