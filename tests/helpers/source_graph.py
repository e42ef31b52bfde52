"""The tree's import graph, read from the source: each module of the project and the modules of
the project it imports (lazy and TYPE_CHECKING imports too: either closes a circle on the first
refactor that moves it up). The image side's packages live in bootstrap/ and import by their own
names, as the image's PYTHONPATH has them."""

from __future__ import annotations

import ast
from pathlib import Path

from model.stacks import ROOT

# Every top-level package of the tree: the program's, and the image side's (bootstrap/<name>).
PACKAGES = (
    "contract", "model", "components", "infra", "policy", "jobs", "plan", "tools",
    "trainkit", "selftest", "gpu_check", "recipes",
)  # fmt: skip


def source_files() -> dict[str, Path]:
    """Every module of the tree, by its dotted name as it imports."""
    found = {}
    for top in PACKAGES:
        base = ROOT / "bootstrap" if (ROOT / "bootstrap" / top).is_dir() else ROOT
        for path in (base / top).rglob("*.py"):
            parts = path.relative_to(base).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = source_files()


def imports_of(name: str, path: Path) -> set[str]:
    """The tree's modules that `name` imports (a name taken from a package that is one of its
    modules counts as that module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" for a in node.names]
            targets = [t if t in MODULES else base for t in targets]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imports_of(name, path) for name, path in MODULES.items()}


def circles(graph: dict[str, set[str]]) -> list[str]:
    found: list[str] = []
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        for dep in sorted(graph.get(node, ())):
            if dep in path:
                found.append(" -> ".join((*path[path.index(dep) :], dep)))
            elif dep not in done:
                visit(dep, (*path, dep))
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node, (node,))
    return found


def without_package_faces(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's __init__ composes its modules (model.config builds PlatformConfig from its
    sections); a module of the package naming the package for a type is not a circle of code."""
    return {name: {d for d in deps if not name.startswith(f"{d}.")} for name, deps in graph.items()}
