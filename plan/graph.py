"""The plan's resource graph for `--graph`: parents (solid) and dependencies (dashed), as a
Graphviz DOT file and a Mermaid file a README can embed.

Two views: every resource, and the components alone with each dependency lifted to the
components that hold its two ends, small enough to read on a page (docs/review.md shows prod's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from plan.model import Plan, PlannedResource


@dataclass(frozen=True)
class Graph:
    nodes: tuple[tuple[str, str, bool], ...]  # (URN, label, is a component)
    parents: tuple[tuple[str, str], ...]  # (parent URN, child URN)
    depends: tuple[tuple[str, str], ...]  # (dependent URN, dependency URN)


def _label(r: PlannedResource) -> str:
    return f"{r.name}\n{r.type}"


def resource_graph(plan: Plan) -> Graph:
    known = plan.by_urn
    nodes = tuple((r.urn, _label(r), not r.custom) for r in plan.resources)
    parents = tuple((r.parent, r.urn) for r in plan.resources if r.parent in known)
    depends = tuple((r.urn, d) for r in plan.resources for d in r.dependencies if d in known)
    return Graph(nodes, parents, tuple(sorted(set(depends))))


def component_graph(plan: Plan) -> Graph:
    """Components only; a resource's dependency becomes one between the components holding
    the dependent and the dependency, unless one holds the other."""
    known = plan.by_urn

    def holder(urn: str) -> str:
        node = known[urn]
        while node.custom:
            node = known[node.parent]
        return node.urn

    def ancestors(urn: str) -> set[str]:
        found = set()
        while urn in known:
            found.add(urn)
            urn = known[urn].parent
        return found

    components = [r for r in plan.resources if not r.custom]
    parents = tuple((r.parent, r.urn) for r in components if r.parent in known)
    lifted = set()
    for r in plan.resources:
        for d in r.dependencies:
            if d not in known:
                continue
            a, b = holder(r.urn), holder(d)
            if a not in ancestors(b) and b not in ancestors(a):
                lifted.add((a, b))
    nodes = tuple((r.urn, _label(r), True) for r in components)
    return Graph(nodes, parents, tuple(sorted(lifted)))


def _ids(graph: Graph) -> dict[str, str]:
    """Node ids from the type and name, so adding a resource leaves the others' lines alone."""
    ids: dict[str, str] = {}
    for urn, _, _ in graph.nodes:
        kind, name = urn.split("::")[-2].split(":")[-1].split("$")[-1], urn.split("::")[-1]
        base = re.sub(r"\W", "_", f"{kind}_{name}")
        ids[urn] = base
        suffix = 2
        while list(ids.values()).count(ids[urn]) > 1:
            ids[urn], suffix = f"{base}_{suffix}", suffix + 1
    return ids


def to_dot(graph: Graph, title: str) -> str:
    ids = _ids(graph)
    lines = [
        f'digraph "{title}" {{',
        "  rankdir=LR;",
        '  node [shape=box, fontname="Helvetica", fontsize=10];',
    ]
    for urn, label, component in graph.nodes:
        text = label.replace('"', r"\"").replace("\n", r"\n")
        style = ', style="rounded,filled", fillcolor="#e8eef7"' if component else ""
        lines.append(f'  {ids[urn]} [label="{text}"{style}];')
    lines += [f"  {ids[p]} -> {ids[c]};" for p, c in graph.parents]
    lines += [f'  {ids[a]} -> {ids[b]} [style=dashed, label="needs"];' for a, b in graph.depends]
    return "\n".join([*lines, "}"]) + "\n"


def to_mermaid(graph: Graph) -> str:
    ids = _ids(graph)
    lines = ["flowchart LR"]
    for urn, label, component in graph.nodes:
        text = label.replace('"', "#quot;").replace("\n", "<br/>")
        lines.append(f'  {ids[urn]}("{text}")' if component else f'  {ids[urn]}["{text}"]')
    lines += [f"  {ids[p]} --> {ids[c]}" for p, c in graph.parents]
    lines += [f"  {ids[a]} -. needs .-> {ids[b]}" for a, b in graph.depends]
    return "\n".join(lines) + "\n"


def write_graphs(plan: Plan, out_dir: Path) -> list[Path]:
    """graph.dot and graph.mmd (every resource), components.dot and components.mmd."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, graph in (("graph", resource_graph(plan)), ("components", component_graph(plan))):
        for suffix, text in (
            (".dot", to_dot(graph, f"{plan.stack} {stem}")),
            (".mmd", to_mermaid(graph)),
        ):
            path = out_dir / f"{stem}{suffix}"
            path.write_text(text)
            written.append(path)
    return written
