"""The tree's layers: which top-level folder may import which, and no circle anywhere.

The model sits at the bottom and imports nothing above it; components by plane above it; the
program Pulumi runs (infra/) above them; the offline plan and the tools on top. policy/ reads the
model and planned resources, jobs/ the model and the builders. The image side (bootstrap's
packages, recipes/) shares only contract/ with the program (DESIGN.md, "Layout"). Imports are
read from the source (lazy and TYPE_CHECKING ones too: either closes a circle on the first
refactor that moves it up)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from components.base import PlatformComponent
from tests.helpers.source_graph import GRAPH, MODULES, PACKAGES, circles, without_package_faces

# What each top-level package may import of the others. bootstrap/ holds the image's packages
# (its Dockerfile puts bootstrap/ itself on PYTHONPATH), so each is a top-level package of its own.
MAY_IMPORT: dict[str, set[str]] = {
    "contract": set(),
    "model": {"contract"},
    "components": {"model", "contract"},
    "infra": {"components", "model", "contract"},
    "policy": {"model", "contract"},
    "jobs": {"components", "model", "contract"},
    "plan": {"infra", "components", "policy", "model", "contract"},
    "tools": {"plan", "infra", "components", "model", "contract"},
    "trainkit": {"contract"},
    "selftest": {"trainkit", "contract"},
    "gpu_check": {"contract"},
    "recipes": {"trainkit", "contract"},
}
PLANES = ("control", "data", "storage", "scheduling", "observability", "selftest")


def test_the_rule_names_every_package():
    assert set(MAY_IMPORT) == set(PACKAGES)


def test_the_graph_reads_the_tree():
    assert {"model.config", "components.data.gpu_node_group", "plan.cli", "selftest"} <= set(
        MODULES
    )
    assert "model.config" in GRAPH["components.data.gpu_node_group"]
    # The image side's packages import each other by their own names (bootstrap/ on the path).
    assert "trainkit" in {
        d.split(".")[0] for m in GRAPH if m.startswith("recipes.") for d in GRAPH[m]
    }


def test_no_import_runs_upward_between_top_level_folders():
    upward = sorted(
        f"{name} -> {dep}"
        for name, deps in GRAPH.items()
        for dep in deps
        if (a := name.split(".")[0]) != (b := dep.split(".")[0]) and b not in MAY_IMPORT[a]
    )
    assert upward == []


def test_the_model_imports_nothing_above_it():
    above = {d for n, deps in GRAPH.items() if n.startswith("model") for d in deps}
    assert {d.split(".")[0] for d in above} <= {"model", "contract"}


def test_no_circle_anywhere_in_the_tree():
    assert circles(without_package_faces(GRAPH)) == []


def folder_of(name: str) -> str:
    """components.<plane> for a plane's module, else the top-level package."""
    parts = name.split(".")
    if parts[0] == "components" and len(parts) > 2 and parts[1] in PLANES:
        return f"components.{parts[1]}"
    return "components" if parts[0] == "components" else parts[0]


def test_no_circle_between_folders_or_planes():
    """Folder to folder, each plane of components/ a folder of its own: the structure view
    shows no circle."""
    folders: dict[str, set[str]] = {}
    for name, deps in GRAPH.items():
        here = folder_of(name)
        folders.setdefault(here, set()).update(folder_of(d) for d in deps if folder_of(d) != here)
    assert circles(folders) == []


def test_the_shared_components_import_no_plane():
    """components/*.py (the skeleton, the vocabulary, Helm and Kubernetes objects) sit below
    every plane."""
    shared = [n for n in GRAPH if n.startswith("components.") and folder_of(n) == "components"]
    assert shared
    assert {(n, d) for n in shared for d in GRAPH[n] if folder_of(d) != "components"} <= {
        (n, d) for n in shared for d in GRAPH[n] if d.split(".")[0] in ("model", "contract")
    }


def test_the_circle_check_finds_a_circle():
    assert "a -> b -> c -> a" in circles({"a": {"b"}, "b": {"c"}, "c": {"a"}})
    assert circles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def component_classes() -> list[type[PlatformComponent]]:
    found = []
    for plane in PLANES:
        package = importlib.import_module(f"components.{plane}")
        for info in pkgutil.iter_modules(package.__path__, f"components.{plane}."):
            module = importlib.import_module(info.name)
            found += [
                c
                for _, c in inspect.getmembers(module, inspect.isclass)
                if issubclass(c, PlatformComponent) and c.__module__ == module.__name__
            ]
    return found


@pytest.mark.parametrize("plane", PLANES)
def test_each_plane_has_components_in_its_folder(plane):
    assert [c for c in component_classes() if c.__module__.startswith(f"components.{plane}.")]


def test_each_component_lives_in_the_folder_of_its_type_token():
    """`gpu-platform:<plane>:<Kind>`: the plane of the token names the folder."""
    misplaced = [
        f"{c.__module__}.{c.__name__}: gpu-platform:{c.PLANE}"
        for c in component_classes()
        if c.__module__.split(".")[1] != c.PLANE
    ]
    assert misplaced == []
