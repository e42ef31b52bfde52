"""The README's table of knobs holds to the code: every top-level key of the config has a row,
the model module it names defines that key's settings, and the component and test it names
exist. A renamed module or a new key fails here instead of leaving a reader at a dead path."""

from __future__ import annotations

import re
import types
import typing

import pytest
from pydantic import BaseModel

from model.config import PlatformConfig
from model.stacks import ROOT

HEADER = "| knob (`gpu-platform:`) | model module | component | test |"


def table_rows() -> list[tuple[list[str], str, str, str]]:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        knobs, model, component, test = (c.strip() for c in line.strip("|").split("|"))
        rows.append((re.findall(r"`([^`]+)`", knobs), model, component, test))
    return rows


ROWS = table_rows()


def settings_class(path: str) -> type[BaseModel] | None:
    """The settings model a knob's value is, or None for a plain value (`production`)."""
    model: type[BaseModel] = PlatformConfig
    for key in path.split("."):
        annotation = model.model_fields[key].annotation
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        if typing.get_origin(annotation) is list:
            (annotation,) = typing.get_args(annotation)
        if typing.get_origin(annotation) is dict:  # keyed by names the stack chooses
            annotation = typing.get_args(annotation)[1]
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def test_every_top_level_key_has_one_row():
    top = [k for knobs, *_ in ROWS for k in knobs if "." not in k]
    assert sorted(top) == sorted(PlatformConfig.model_fields)


@pytest.mark.parametrize(("knobs", "model", "component", "test"), ROWS, ids=lambda v: str(v))
def test_each_row_names_the_module_that_defines_the_knob_and_paths_that_exist(
    knobs, model, component, test
):
    for knob in knobs:
        found = settings_class(knob)
        defined_in = PlatformConfig if found is None else found
        module = defined_in.__module__.replace(".", "/")
        assert model in (f"{module}.py", f"{module}/__init__.py"), (knob, defined_in.__module__)
    for path in (model, component, test):
        assert (ROOT / path).is_file(), path
