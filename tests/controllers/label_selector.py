"""How Kubernetes matches a label selector against a set of labels, one matcher for every model
and the cluster in a box: a metav1.LabelSelector (a NetworkPolicy's, a ClusterQueue's
namespaceSelector, Kueue's managedJobsNamespaceSelector) and a node selector term of a pod's node
affinity (core/v1 NodeSelectorRequirement, which adds `Gt` and `Lt`). Both become
k8s.io/apimachinery pkg/labels/selector.go requirements; `Requirement.Matches` is the rule."""

from __future__ import annotations

from typing import Any


def label_selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Every matchLabels entry and every requirement holds; `NotIn` and `DoesNotExist` hold
    where the label is absent, `Gt` and `Lt` only where it is present and an integer
    (k8s.io/apimachinery pkg/labels/selector.go `Requirement.Matches`)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise ValueError(f"not a label selector operator: {op!r}")
        if op == "In" and not (key in labels and labels[key] in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op in ("Gt", "Lt") and not _compares(op, labels.get(key), values):
            return False
    return True


def _compares(op: str, have: str | None, values: list[str]) -> bool:
    """`Gt` / `Lt`: the label's value and the one given, both integers, compare so."""
    try:
        have_n, (want_n,) = int(have or ""), [int(v) for v in values]
    except ValueError:
        return False
    return have_n > want_n if op == "Gt" else have_n < want_n
