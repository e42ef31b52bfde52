"""Which input changes make Pulumi replace a resource (delete and create) instead of updating it,
read from the provider-facts table (plan/replacements.json).

The table is ../shared/provider-facts/replacements.json, derived from the provider sources at the
pinned versions (ForceNew and RequiresReplace in terraform-provider-aws and -random, the
immutable fields pulumi-kubernetes replaces on), copied here so that a plan from a clean clone
marks replacements too; tests/plan/test_replacements.py fails when the copy drifts from it. Its
README says how to read a path: `a.b` is `b` inside `a`, `a[].b` is `b` in any item of the list
`a`, and a path covers every change at or below it.

Built-in Kubernetes kinds and AWS types the shared table has no row for take theirs from
plan/replacements_builtin.json, read as the shared table is: the forceNew table of
pulumi-kubernetes, and ForceNew in each type's terraform-provider-aws file.

Fields that replace only in some cases (`replace_on_conditional`) and fields whose status the
table could not verify (`unverified_fields`) are reported as "may replace", with the table's own
words: the diff does not evaluate them.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).with_name("replacements.json")
BUILTIN_TABLE = Path(__file__).with_name("replacements_builtin.json")
# Custom resources and any kind the table has no row for replace only on name and namespace.
KUBERNETES_ANY_KIND = "kubernetes:<group>/<version>:<Kind>"
# Kinds Kueue keeps, by its finalizer kueue.x-k8s.io/resource-in-use, while another object
# names them, and what names them (kubernetes-sigs/kueue v0.19.2:
# pkg/controller/core/resourceflavor_controller.go and admissioncheck_controller.go, Reconcile,
# ClusterQueuesUsing*; pkg/controller/tas/topology_controller.go, the flavors' topologyName).
# Deleting one first, to re-create it under its name, waits until nothing names it.
HELD_WHILE_NAMED = {
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": "a ClusterQueue lists it as a flavor",
    "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck": "a ClusterQueue lists it as a check",
    "kubernetes:kueue.x-k8s.io/v1beta2:Topology": "a ResourceFlavor names it as its topology",
}

# What is missing between the delete and the create of a resource deleted before its
# replacement is created (the program deletes these first: their names are fixed).
GONE_UNTIL_CREATED = {
    "aws:eks/nodeGroup:NodeGroup": "no node of this group until the new group's nodes join: "
    "its capacity is gone in between and the training running on it is evicted",
    "aws:eks/cluster:Cluster": "no Kubernetes API, and nothing running on the cluster, until "
    "the new cluster is up",
}


@dataclass(frozen=True)
class Rule:
    """The table's row for one resource type, with its paths compiled."""

    type: str
    replace_on: tuple[tuple[str, re.Pattern[str]], ...]
    conditional: tuple[tuple[str, re.Pattern[str], str], ...]
    unverified: tuple[tuple[str, re.Pattern[str]], ...]
    delete_before_replace: bool


@dataclass(frozen=True)
class Verdict:
    """What the table says about one resource's changed paths."""

    forced_by: tuple[str, ...] = ()  # the table's paths that force a replacement
    maybe: tuple[tuple[str, str], ...] = ()  # (path, when it replaces)
    delete_before_replace: bool = False
    unknown_type: bool = False  # the table has no row for the type
    # (path, why) of immutable custom-resource fields changed where nothing replaces the object:
    # the API server refuses the update (model/immutable_fields.py).
    refused: tuple[tuple[str, str], ...] = ()
    # (path, what the rule says) of the CRDs' other transition rules over a changed path.
    checked: tuple[tuple[str, str], ...] = ()

    @property
    def replaces(self) -> bool:
        return bool(self.forced_by)


def path_pattern(table_path: str) -> re.Pattern[str]:
    """A table path as a match on the diff's paths (`a.b[0].c`): `a[].b` takes any index, a
    `["key"]` lookup is the `.key` the diff writes, and a path covers what lies below it. A
    range the diff collapsed (`a[16..31]`) counts as an index."""
    dotted = re.sub(r'\["([^"]+)"\]', r".\1", table_path)
    body = r"\[[\d.]+\]".join(re.escape(part) for part in dotted.split("[]"))
    return re.compile(rf"{body}(?:$|[.\[])")


def _alternatives(key: str) -> re.Pattern[str]:
    """`cidrIpv4|cidrIpv6` in a conditional key means any of them."""
    return re.compile("|".join(f"(?:{path_pattern(p).pattern})" for p in key.split("|")))


@functools.cache
def rules() -> dict[str, Rule]:
    found = {}
    rows = {
        **json.loads(BUILTIN_TABLE.read_text())["types"],
        **json.loads(TABLE.read_text())["types"],
    }
    for token, row in rows.items():
        found[token] = Rule(
            token,
            tuple((p, path_pattern(p)) for p in row.get("replace_on", [])),
            tuple(
                (k, _alternatives(k), why)
                for k, why in row.get("replace_on_conditional", {}).items()
            ),
            tuple((p, path_pattern(p)) for p in row.get("unverified_fields", [])),
            bool(row.get("delete_before_replace")),
        )
    return found


def _custom_kind(token: str) -> bool:
    """`kubernetes:<group>/<version>:<Kind>` of a kind Kubernetes itself does not serve: its
    group has a dot and is not a `*.k8s.io` group. ConfigFile (`yaml/v2`) is a component."""
    parts = token.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
        return False
    group = parts[1].rsplit("/", 1)[0]
    return "." in group and not group.endswith(".k8s.io")


def rule_for(token: str) -> Rule | None:
    """The row for a type token; a custom resource kind takes the table's row for any kind,
    as pulumi-kubernetes does for kinds outside its forceNew table. None for a type the table
    does not know, a built-in kind it does not list included: pulumi-kubernetes has its own
    rules for many of them (a DaemonSet's selector), which the table would have to carry."""
    table = rules()
    if token in table:
        return table[token]
    return table[KUBERNETES_ANY_KIND] if _custom_kind(token) else None


def verdict(token: str, paths: list[str]) -> Verdict:
    """Which of a resource's changed input paths force a replacement, which may, and whether
    the table knows the type at all."""
    rule = rule_for(token)
    if rule is None:
        return Verdict(unknown_type=True)
    forced = [p for p, pattern in rule.replace_on if any(pattern.match(x) for x in paths)]
    maybe = [
        (key, why) for key, pattern, why in rule.conditional if any(pattern.match(x) for x in paths)
    ]
    maybe += [
        (p, "its ForceNew status is not verified in the provider source read (provider-facts)")
        for p, pattern in rule.unverified
        if any(pattern.match(x) for x in paths)
    ]
    return Verdict(tuple(forced), tuple(maybe), rule.delete_before_replace and bool(forced))
