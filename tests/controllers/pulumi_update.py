"""A model of how `pulumi up` orders and stops an update (STYLE.md §17): the engine that the
canary roll relies on (components/selftest/canary.py).

- What changes: a resource whose inputs name another's output (`(known after apply: NAME...)`
  in the offline plan) changes when that one does: its input is unknown until the other's
  update is done, and Pulumi diffs it then (Pulumi docs, "Inputs and outputs": an output is
  known only once its resource is created or updated).
- When a step runs: after the steps of every resource it depends on (`dependsOn` and the
  resources its inputs come from) have succeeded (Pulumi docs, "Resource options: dependsOn":
  "the dependent resource will not be created, updated, or deleted until the dependency has
  been").
- What a failure stops: no step of a resource that depends on a failed (or skipped) one runs.
  Without `--continue-on-error` the engine starts no further step at all after the first
  failure; with it (Pulumi docs, `pulumi up`, "--continue-on-error: Continue updating
  resources even if an error is encountered"), it still skips the failed resource's
  dependents. The model takes the second, weaker rule, which every run of `up` keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from plan.critical_path import waits_for
from plan.model import Plan

UNKNOWN = re.compile(r"\(known after apply: ([^.)]+)")


def _names_in(value) -> set[str]:
    if isinstance(value, str):
        return set(UNKNOWN.findall(value))
    if isinstance(value, dict):
        return set().union(*(_names_in(v) for v in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(_names_in(v) for v in value))
    return set()


def changed(plan: Plan, first: set[str]) -> set[str]:
    """The URNs an update of `first` (URNs) changes: those and, to a fixed point, every resource
    whose inputs read an output of a changed one."""
    found = set(first)
    reads = {r.urn: _names_in(r.inputs) for r in plan.resources if r.custom}
    index = plan.by_urn
    while True:
        names = {index[u].name for u in found}
        more = {u for u, read in reads.items() if u not in found and read & names}
        if not more:
            return found
        found |= more


@dataclass
class Update:
    done: list[str] = field(default_factory=list)  # in the order their steps succeeded
    failed: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)


def update(plan: Plan, first: set[str], fails: set[str]) -> Update:
    """`pulumi up` of a change to `first`, where the steps of `fails` fail."""
    steps = changed(plan, first)
    graph = waits_for(plan)
    result = Update()
    settled: set[str] = set()
    while len(settled) < len(steps):
        ready = sorted(
            u for u in steps - settled if all(d in settled or d not in steps for d in graph[u])
        )
        assert ready, "a cycle among the changed resources"
        for urn in ready:
            blocked = graph[urn] & (result.failed | result.skipped)
            if blocked:
                result.skipped.add(urn)
            elif urn in fails:
                result.failed.add(urn)
            else:
                result.done.append(urn)
            settled.add(urn)
    return result
