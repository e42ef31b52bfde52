"""The custom-resource fields the API server refuses to change once set, read from the CEL
transition rules (`x-kubernetes-validations` that name `oldSelf`) of every CRD schema the
platform pins (../shared/crds), and what follows for the program and the plan diff:

- the program declares such objects with `replace_on_changes` on those paths, so `pulumi up`
  replaces the object where the API server would refuse the update (`replace_options`);
- the plan diff marks a change there as a replacement when the object declares it, and as a
  change the API server refuses when it does not (`refused`).

The table, model/immutable_fields.json, is derived by `derive` (`python -m
model.immutable_fields` rewrites it) and kept beside the program so that `pulumi up` from a clean
clone has it; tests/model/test_immutable_fields.py fails when it drifts from the CRDs.

The rule forms the CRDs hold, and how each is read (Kubernetes runs a transition rule only where
both the old and the new object hold its field: "Transition rules", CRD validation rules,
kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions):

- `self == oldSelf` on a field: its value may not change while it is set (`value`); setting or
  removing it is not refused by the rule. Topology `spec.levels`, LocalQueue
  `spec.clusterQueue`, JobSet `spec.failurePolicy`, ...
- on an object, `!has(oldSelf.c) || (has(self.c) && self.c == oldSelf.c)`: once `c` is set it
  may neither change nor go (`value_or_removal`). Kueue ResourceFlavor `spec.topologyName`
  (apis/kueue/v1beta2/resourceflavor_types.go at v0.19.2).
- on an object, `!has(oldSelf.c) || (has(self.y) == has(oldSelf.y) && (!has(self.y) ||
  self.y == oldSelf.y))`: once `c` is set, `y` may not change, appear or go
  (`value_or_presence`). ResourceFlavor `spec.nodeLabels` and `spec.tolerations` when
  `topologyName` is set.
- every other rule that reads `oldSelf` (Rook's `keyGeneration` that may only grow, CephCluster
  `network.provider` that must pass through "" to change) is not an immutability: it is kept as
  `checked`, and the diff says the API server checks such a change, without evaluating CEL.

A rule under a map's values (`additionalProperties`) has no path the diff or Pulumi could name
per key; none of the pinned CRDs has one, and `derive` refuses it rather than guess.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("immutable_fields.json")
# What a change to an immutable path must do to be refused (see the module docstring).
VALUE, VALUE_OR_REMOVAL, VALUE_OR_PRESENCE = "value", "value_or_removal", "value_or_presence"

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_SELF_EQUALS_OLD = re.compile(r"self == oldSelf")
_ONCE_SET_KEEPS_ITSELF = re.compile(
    rf"!has\(oldSelf\.(?P<c>{_IDENT})\) \|\| \(has\(self\.(?P=c)\) && "
    rf"self\.(?P=c) == oldSelf\.(?P=c)\)"
)
_ONCE_SET_KEEPS_OTHER = re.compile(
    rf"!has\(oldSelf\.(?P<c>{_IDENT})\) \|\| \(has\(self\.(?P<y>{_IDENT})\) == "
    rf"has\(oldSelf\.(?P=y)\) && \(!has\(self\.(?P=y)\) \|\| self\.(?P=y) == oldSelf\.(?P=y)\)\)"
)


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def classify(path: str, rule: str, message: str) -> dict[str, Any]:
    """One transition rule found at `path` (`a.b`, `a[].b` inside list items) as a table row:
    `immutable` with the path it fixes and the field whose old value arms it, or `checked`."""
    text = " ".join(rule.split())
    if _SELF_EQUALS_OLD.fullmatch(text):
        return {"immutable": {"path": path, "when_set": path, "refuses": VALUE, "why": message}}
    if m := _ONCE_SET_KEEPS_ITSELF.fullmatch(text):
        field = _join(path, m["c"])
        return {
            "immutable": {
                "path": field,
                "when_set": field,
                "refuses": VALUE_OR_REMOVAL,
                "why": message,
            }
        }
    if m := _ONCE_SET_KEEPS_OTHER.fullmatch(text):
        return {
            "immutable": {
                "path": _join(path, m["y"]),
                "when_set": _join(path, m["c"]),
                "refuses": VALUE_OR_PRESENCE,
                "why": message,
            }
        }
    return {"checked": {"path": path, "rule": rule, "why": message}}


def transition_rules(schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(path, rule, message) of every rule that reads `oldSelf`, walking properties and list
    items; a rule under a map's values is refused (no diff path names it per key)."""
    found = []

    def walk(node: Any, path: str, in_map: bool) -> None:
        if not isinstance(node, dict):
            return
        for rule in node.get("x-kubernetes-validations") or []:
            if "oldSelf" in rule.get("rule", ""):
                if in_map:
                    raise ValueError(f"a transition rule under a map's values at {path}: not read")
                found.append((path, rule["rule"], rule.get("message", "")))
        for name, child in (node.get("properties") or {}).items():
            walk(child, _join(path, name), in_map)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]", in_map)
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}.*", True)

    walk(schema, "", False)
    return found


def derive(crds: Path) -> dict[str, Any]:
    """The table, from every `<group>/<Kind>.<version>.json` under `crds`, keyed by the
    pulumi-kubernetes type token (`kubernetes:<group>/<version>:<Kind>`)."""
    kinds = {}
    for file in sorted(crds.glob("*/*.json")):
        kind, version = file.stem.rsplit(".", 1)
        rows: dict[str, list] = {"immutable": [], "checked": []}
        for path, rule, message in transition_rules(json.loads(file.read_text())):
            ((key, row),) = classify(path, rule, message).items()
            rows[key].append(row)
        if rows["immutable"] or rows["checked"]:
            kinds[f"kubernetes:{file.parent.name}/{version}:{kind}"] = rows
    return {"source": "derived from ../shared/crds by model/immutable_fields.py", "kinds": kinds}


@functools.cache
def table() -> dict[str, dict[str, list[dict[str, str]]]]:
    return json.loads(TABLE.read_text())["kinds"]


def rows(token: str) -> dict[str, list[dict[str, str]]]:
    return table().get(token, {"immutable": [], "checked": []})


ABSENT = object()


def values_at(obj: Any, path: str) -> dict[str, Any]:
    """The values a table path reaches in an object, by the diff's path for each (`a[2].b`):
    a `[]` step takes every item."""
    found = {"": obj}
    for step in path.split("."):
        name, items = step.removesuffix("[]"), step.endswith("[]")
        nxt: dict[str, Any] = {}
        for where, value in found.items():
            if not isinstance(value, dict) or name not in value:
                continue
            child, here = value[name], _join(where, name)
            if items and isinstance(child, list):
                nxt.update({f"{here}[{i}]": item for i, item in enumerate(child)})
            elif not items:
                nxt[here] = child
        found = nxt
    return found


def _sets(obj: dict[str, Any], path: str) -> bool:
    return any(v is not None for v in values_at(obj, path).values())


def pulumi_path(path: str) -> str:
    """A table path as a Pulumi property path: any list item is `[*]`."""
    return path.replace("[]", "[*]")


def replace_paths(token: str, obj: dict[str, Any]) -> list[str]:
    """The immutable paths of a kind, as Pulumi property paths, whose rule the object arms:
    those it sets the guarding field of (a ResourceFlavor's `nodeLabels` only with a
    `topologyName`)."""
    return sorted(
        {pulumi_path(r["path"]) for r in rows(token)["immutable"] if _sets(obj, r["when_set"])}
    )


def refused(token: str, before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, why) of each immutable field an update from `before` to `after` changes where the
    API server refuses it: the rule is armed by the old object, and the change is of the kind
    the rule forbids."""
    found = []
    for row in rows(token)["immutable"]:
        if not _sets(before, row["when_set"]):
            continue
        old, new = values_at(before, row["path"]), values_at(after, row["path"])
        for where in sorted(old.keys() | new.keys()):
            a, b = old.get(where, ABSENT), new.get(where, ABSENT)
            if a == b:
                continue
            both = a is not ABSENT and b is not ABSENT
            if (
                both
                or (row["refuses"] == VALUE_OR_REMOVAL and b is ABSENT)
                or row["refuses"] == VALUE_OR_PRESENCE
            ):
                found.append((row["path"], row["why"]))
                break
    return found


def checked(token: str, paths: list[str]) -> list[tuple[str, str]]:
    """(rule path, what the rule says) of the other transition rules over any changed path."""
    found = []
    for row in rows(token)["checked"]:
        body = re.escape(row["path"]).replace(r"\[\]", r"\[\d+\]")
        if any(re.match(rf"{body}(?:$|[.\[])", p) for p in paths):
            found.append((row["path"], f"{row['why']} (CRD rule `{row['rule']}`)"))
    return found


if __name__ == "__main__":
    crds = Path(sys.argv[1]) if len(sys.argv) > 1 else TABLE.parents[2] / "shared" / "crds"
    TABLE.write_text(json.dumps(derive(crds), indent=1, sort_keys=True) + "\n")
