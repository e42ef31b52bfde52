"""The knock-on effects of a diff: what rolls, restarts or is replaced because of a change
although the change is not its own (or is only a value derived from another's), each with why.
A launch template's new root volume is one update in the diff; the node group that follows the
template's latest version rolls every node because of it.

One mechanism, three tables:

- MOVES: which outputs of a resource a change of it moves. A replacement moves all of them (a
  new physical resource: new ID, ARN); an update moves only the outputs listed.
- which inputs of a resource read which output: the plan's `(known after apply: X.attr)`
  placeholders, X one of the resource's recorded dependencies; READS names the output where
  the placeholder does not.
- ROLLS: what an update of an input does where it is more than an update in place (a node
  group on a new template version replaces its nodes; a workload's pod template replaces its
  pods). A moved input the provider-facts table replaces on replaces its reader, which moves
  the reader's own outputs in turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from plan.diff import ResourceDiff, flatten
from plan.replacements import path_pattern, verdict

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
WORKLOADS = (
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:apps/v1:StatefulSet",
)
# `(known after apply: prod-h100-block.id)`: the resource's name, then the output if named.
_PLACEHOLDER = re.compile(r"^\(known after apply: ([^.\s)]+)(?:\.([^\s)]+))?\)$")
# A pod-template annotation charts set to a hash of the config the pods read, to roll them
# when it changes (Helm docs, "Charts Tips and Tricks": "Automatically Roll Deployments").
_CHECKSUM = re.compile(r"^spec\.template\.metadata\.annotations\.checksum/")
_CONFIG = ("kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:Secret")


@dataclass(frozen=True)
class Moves:
    type: str  # "*": any type
    action: str  # the change of the resource: "update" or "replace"
    outputs: tuple[str, ...]  # "*": every output
    why: str
    unless: tuple[str, ...] = ()  # changes to these paths alone move nothing


MOVES = (
    Moves("*", "replace", ("*",), "is replaced: a new resource, with new IDs"),
    # terraform-provider-aws internal/service/ec2/ec2_launch_template.go,
    # resourceLaunchTemplateUpdate: a change to anything but the default version, the
    # description and the tags calls CreateLaunchTemplateVersion, and latest_version is the
    # new one.
    Moves(
        LAUNCH_TEMPLATE,
        "update",
        ("latestVersion",),
        "changes: every update of a launch template's data is a new version of it",
        unless=("defaultVersion", "description", "tags", "tagsAll", "updateDefaultVersion"),
    ),
)

# Inputs whose placeholder names the resource alone: components/data/nodes.py registers the group
# with `version=launch_template.latest_version.apply(str)`, which the plan labels by name.
READS = {(NODE_GROUP, "launchTemplate.version"): "latestVersion"}


@dataclass(frozen=True)
class Rolls:
    type: str
    path: str  # the provider-facts table's path syntax: covers every change at or below it
    effect: str
    why: str


_DRAINS = (
    "draining its pods first (running training included), updateConfig.maxUnavailable at a time"
)
ROLLS = (
    # terraform-provider-aws internal/service/eks/node_group.go, resourceNodeGroupUpdate:
    # d.HasChanges("launch_template", "release_version", "version") calls
    # UpdateNodegroupVersion, and EKS User Guide, "Understand each phase of node updates"
    # (managed-node-update-behavior): that update launches new nodes and drains and terminates
    # every old one.
    Rolls(
        NODE_GROUP,
        "launchTemplate",
        "rolls every node",
        f"EKS replaces each node of the group with one from the new template version, {_DRAINS}",
    ),
    Rolls(
        NODE_GROUP,
        "releaseVersion",
        "rolls every node",
        f"EKS replaces each node of the group with one of the new AMI release, {_DRAINS}",
    ),
    Rolls(
        NODE_GROUP,
        "version",
        "rolls every node",
        f"EKS replaces each node of the group with one of the new Kubernetes version, {_DRAINS}",
    ),
    # Kubernetes docs, Deployments: "A Deployment's rollout is triggered if and only if the
    # Deployment's Pod template (that is, .spec.template) is changed"; DaemonSet and
    # StatefulSet RollingUpdate replace their pods on the same change.
    *(
        Rolls(
            kind,
            "spec.template",
            "rolls every pod",
            "its pod template changed, and any change to it replaces every pod",
        )
        for kind in WORKLOADS
    ),
)


@dataclass(frozen=True)
class KnockOn:
    type: str
    name: str
    effect: str  # "rolls every node", "rolls every pod", "is replaced", "is updated in place"
    why: str

    @property
    def counted(self) -> str:
        """How the totals count it: `to roll`, `to replace` or `to update`."""
        if self.effect.startswith("rolls"):
            return "to roll"
        return "to replace" if self.effect == "is replaced" else "to update"


def _type_and_name(urn: str) -> tuple[str, str]:
    """A URN's resource type and name: `...$aws:eks/nodeGroup:NodeGroup::prod-h100-block`."""
    head, _, name = urn.rpartition("::")
    return head.rpartition("$")[2].rpartition("::")[2], name


def _moved_by(change: ResourceDiff | None, output: str | None) -> Moves | None:
    """The MOVES row by which a change moves this output of its resource, if any."""
    if change is None:
        return None
    paths = [c.path for c in change.changes]
    for row in MOVES:
        covers = "*" in row.outputs or output in row.outputs
        kept = bool(row.unless) and all(
            any(path_pattern(u).match(p) for u in row.unless) for p in paths
        )
        if row.action == change.action and row.type in ("*", change.type) and covers and not kept:
            return row
    return None


def _rolls(token: str, paths: list[str]) -> Rolls | None:
    return next(
        (r for r in ROLLS if r.type == token and any(path_pattern(r.path).match(p) for p in paths)),
        None,
    )


def _checksum_note(d: ResourceDiff, diffs: list[ResourceDiff]) -> str:
    """A changed checksum annotation: which config of the same release it follows changed."""
    if not any(_CHECKSUM.match(c.path) for c in d.changes):
        return ""
    release = d.name.rpartition(" (")[2]
    changed = [x.name for x in diffs if x.type in _CONFIG and x.name.endswith(f" ({release}")]
    said = f": {', '.join(changed)} changed" if changed else ""
    return f" (a checksum/ annotation, a hash of the config its pods read{said})"


def own_rolls(diffs: list[ResourceDiff]) -> list[KnockOn]:
    """Updates that do more than update: a workload whose pod template changed rolls its
    pods, a checksum annotation saying which config made it."""
    found = []
    for d in diffs:
        row = _rolls(d.type, [c.path for c in d.changes]) if d.action == "update" else None
        if row is not None:
            found.append(KnockOn(d.type, d.name, row.effect, row.why + _checksum_note(d, diffs)))
    return found


def flowing(diffs: list[ResourceDiff], current: list[dict[str, Any]]) -> list[KnockOn]:
    """Resources this diff leaves alone, or only updates, whose inputs read an output that a
    change moves: replaced where a moved input forces it (moving their own outputs in turn),
    rolled where ROLLS says so, otherwise updated in place."""
    action = {(d.type, d.name): d for d in diffs}
    reads = []  # (reader, input path, producer type, producer name, output or None)
    for resource in current:
        change = action.get((resource["type"], resource["name"]))
        if change is not None and change.action in ("create", "replace"):
            continue
        deps = [_type_and_name(u) for u in resource.get("dependencies", [])]
        for path, value in flatten(resource["inputs"]).items():
            found = _PLACEHOLDER.match(value) if isinstance(value, str) else None
            if found is None:
                continue
            name, output = found.groups()
            output = output or READS.get((resource["type"], path))
            reads += [(resource, path, t, n, output) for t, n in deps if n == name]
    found: dict[tuple[str, str], KnockOn] = {}
    while True:
        moved: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for resource, path, token, name, output in reads:
            key = (resource["type"], resource["name"])
            row = _moved_by(action.get((token, name)), output)
            if row is not None and key not in found:
                what = f"{name}'s {output}" if output else name
                moved.setdefault(key, []).append(
                    (path, f"{path} reads {token} {what}, which {row.why}")
                )
        if not moved:
            return list(found.values())
        for (token, name), paths in moved.items():
            why = "; ".join(w for _, w in paths)
            rolled = _rolls(token, [p for p, _ in paths])
            if verdict(token, [p for p, _ in paths]).replaces:
                found[(token, name)] = KnockOn(token, name, "is replaced", why)
                action[(token, name)] = ResourceDiff("replace", token, name, False)
            elif rolled is not None:
                found[(token, name)] = KnockOn(token, name, rolled.effect, f"{why}; {rolled.why}")
            else:
                found[(token, name)] = KnockOn(token, name, "is updated in place", why)


def format_knock_on(effects: list[KnockOn], rendered: bool) -> list[str]:
    """A section after the changes: each effect with why, one line for resources of one type
    that one cause moves alike (a replaced node group's autoscaling tags)."""
    if not effects:
        return []
    alike: dict[tuple[str, str, str], list[str]] = {}
    for k in effects:
        alike.setdefault((k.type, k.effect, k.why), []).append(k.name)
    lines = ["  Knock-on effects (rolled, restarted or replaced because of the changes above):"]
    for (token, effect, why), names in alike.items():
        kind = "" if rendered else f"{token} "
        if len(names) == 1:
            lines.append(f"  ! {kind}{names[0]} {effect}: {why}")
        else:
            lines.append(f"  ! {len(names)} × {kind}({', '.join(names)}), each {effect}: {why}")
    return lines


def knock_on_totals(effects: list[KnockOn]) -> list[str]:
    """The totals line's sequel: `Knock-on: 1 to roll, 0 to replace, 0 to update.`"""
    if not effects:
        return []
    n = {c: sum(k.counted == c for k in effects) for c in ("to roll", "to replace", "to update")}
    return ["Knock-on: " + ", ".join(f"{count} {what}" for what, count in n.items()) + "."]
