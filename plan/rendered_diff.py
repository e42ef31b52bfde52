"""`--against` for what the Helm releases render, object by object as `helm diff` shows it:
`+ DaemonSet gpu-operator/nvidia-device-plugin-daemonset (prod-gpu-operator)`, a changed
object field by field, with the same replacement marks as the program's own Kubernetes objects
(the provider-facts tables, by kind: a changed Deployment selector is `-/+`).

The earlier side is the earlier plan folder's rendered/<release>.yaml files (read before this
plan writes its own). Only the chart files whose text changed are parsed: a chart bump that
leaves kube-prometheus-stack's CRDs alone never parses their schemas.
"""

from __future__ import annotations

from typing import Any

from plan.diff import ResourceDiff, diff_plans
from plan.manifests import Source, parse_source
from plan.render import Rendering


def current_sources(rendering: Rendering) -> dict[str, tuple[Source, ...]]:
    return {r.release: (*r.crd_files, *r.templates) for r in rendering.releases}


def _changed(before: tuple[Source, ...], after: tuple[Source, ...]) -> tuple[list, list]:
    """The texts of the files that differ between two renders of one release."""
    old = {path: text.strip() for path, text in before}
    new = {path: text.strip() for path, text in after}
    paths = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
    return [old[p] for p in sorted(paths) if p in old], [new[p] for p in sorted(paths) if p in new]


def _records(release: str, texts: list[str]) -> list[dict[str, Any]]:
    """Rendered objects in the diff's resource form, keyed by release, kind, namespace and
    name, typed as the program's own objects so the replacement tables apply."""
    records = []
    for text in texts:
        for obj in parse_source(text):
            meta = obj.get("metadata") or {}
            api, kind = obj.get("apiVersion", ""), obj["kind"]
            scope = f"{meta['namespace']}/" if meta.get("namespace") else ""
            label = f"{kind} {scope}{meta.get('name')} ({release})"
            records.append(
                {
                    "urn": f"{release}/{kind}/{scope}{meta.get('name')}",
                    "type": f"kubernetes:{api if '/' in api else f'core/{api}'}:{kind}",
                    "name": label,
                    "protect": False,
                    "inputs": obj,
                }
            )
    return records


def diff_rendered(
    before: dict[str, tuple[Source, ...]],
    after: dict[str, tuple[Source, ...]],
    unknown: frozenset[str] = frozenset(),
) -> list[ResourceDiff]:
    """Object by object; the `unknown` releases (not rendered this time: their chart is not in
    the cache) are left out on both sides, since what they render now is not known, and an
    object not known is never a deletion."""
    previous, current = [], []
    for release in sorted((before.keys() | after.keys()) - unknown):
        old, new = _changed(before.get(release, ()), after.get(release, ()))
        previous += _records(release, old)
        current += _records(release, new)
    return diff_plans(previous, current)
