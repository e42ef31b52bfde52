"""Plans of a changed stack diffed against the shipped one, for the diff's tests."""

from __future__ import annotations

from plan.diff import PreviousPlan
from plan.diff_report import changes_block
from plan.engine import run_program
from plan.model import build_plan
from plan.rendered_diff import current_sources
from tests.conftest import make_project, planned, rendered, stack_file_config


def prod_changed(tmp_path, group: str, **settings) -> str:
    """The changes block of prod with one GPU group's settings changed, against shipped prod."""
    config = stack_file_config("prod")
    (found,) = [g for g in config["gpu-platform:gpu_node_groups"] if g["name"] == group]
    for key, value in settings.items():
        found[key] = {**found.get(key, {}), **value} if isinstance(value, dict) else value
    changed = build_plan(run_program("prod", make_project(tmp_path, {"prod": config})))
    shipped = planned("prod")
    earlier = PreviousPlan([r.as_json() for r in shipped.resources], shipped.outputs)
    return changes_block(changed, earlier, "out/prod")


def edited_render(stack: str, release: str, path: str, old: str, new: str) -> dict:
    """The stack's rendered releases with one chart file's text edited: an earlier render."""
    sources = dict(current_sources(rendered(stack)))
    files = dict(sources[release])
    assert old in files[path], f"{stack}: {path} no longer holds {old!r}"
    files[path] = files[path].replace(old, new, 1)
    sources[release] = tuple(files.items())
    return sources
