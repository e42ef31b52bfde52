"""Stack files read as Pulumi reads them. Pulumi parses YAML with go-yaml v3, which follows the
YAML 1.2 core schema: only true and false (and their True / TRUE spellings) are booleans, and
the YAML 1.1 words PyYAML turns into booleans (yes, no, on, off, y, n) are strings. A boolean
field takes only true or false, so a word meant as a string never flips a switch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from model.config import PlatformConfig, config_from_pulumi
from model.config.loading import read_yaml, unwrap
from model.stacks import ROOT, read_project, read_stack_config
from tests.conftest import make_project

# go-yaml v3 resolve.go, resolveMapList: {true, boolTag, "true", "True", "TRUE"} and
# {false, boolTag, "false", "False", "FALSE"}; YAML 1.2.2 section 10.3.2 "Tag Resolution".
BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
            "FALSE": False}  # fmt: skip
# YAML 1.1's booleans (yaml.org/type/bool.html), strings in YAML 1.2.
YAML_11_WORDS = ["on", "off", "yes", "no", "y", "n", "On", "OFF", "Yes", "NO", "Y", "N"]
STACK = """\
config:
  gpu-platform:aws: {region: us-east-1, zones: [us-east-1a, us-east-1b]}
  gpu-platform:cluster:
    admin_principal_arns: ["arn:aws:iam::210987654321:role/platform-admins"]
  gpu-platform:selftest:
    mode: off
"""


def read_text(tmp_path: Path, text: str):
    path = tmp_path / "doc.yaml"
    path.write_text(text)
    return read_yaml(path, "doc.yaml")


@pytest.mark.parametrize("word", YAML_11_WORDS)
def test_yaml_11_booleans_are_strings_as_pulumi_reads_them(tmp_path, word):
    assert read_text(tmp_path, f"a: {word}\n{word}: 1\n") == {"a": word, word: 1}


@pytest.mark.parametrize("word", sorted(BOOLEANS))
def test_true_and_false_are_booleans(tmp_path, word):
    assert read_text(tmp_path, f"a: {word}\n") == {"a": BOOLEANS[word]}


def test_selftest_mode_off_as_the_plan_tells_users_to_write_it_plans(tmp_path):
    root = make_project(tmp_path, {})
    (root / "stacks" / "Pulumi.s.yaml").write_text(STACK)
    values, _ = read_stack_config(read_project(root), "s")
    cfg = config_from_pulumi(values, "stacks/Pulumi.s.yaml")
    assert cfg.selftest.mode == "off"


def boolean_fields() -> list[tuple[type[BaseModel], str, str]]:
    """(model, field, path) of every boolean field of the config model."""
    found, seen = [], set()

    def walk(model: type[BaseModel], path: str) -> None:
        seen.add(model)
        for name, field in model.model_fields.items():
            if field.annotation is bool or bool in getattr(field.annotation, "__args__", ()):
                found.append((model, name, f"{path}{name}"))
            inner = unwrap(field.annotation)
            if isinstance(inner, type) and issubclass(inner, BaseModel) and inner not in seen:
                walk(inner, f"{path}{name}.")

    walk(PlatformConfig, "")
    return found


def errors_at(model: type[BaseModel], name: str, value) -> list[str]:
    try:
        model.model_validate({name: value})
    except ValidationError as error:
        return [e["msg"] for e in error.errors() if e["loc"] == (name,)]
    return []


def test_the_config_has_boolean_fields_to_check():
    paths = [path for _, _, path in boolean_fields()]
    # A few the README documents, so an empty walk cannot pass the next test.
    assert {"production", "network.flow_logs", "gpu_node_groups.efa"} <= set(paths)


@pytest.mark.parametrize("value", [*YAML_11_WORDS, 1, 0, "1", "0"])
def test_every_boolean_field_refuses_anything_but_true_or_false(value):
    taken = [path for model, name, path in boolean_fields() if not errors_at(model, name, value)]
    assert taken == [], f"{value!r} read as a boolean by: {', '.join(taken)}"


@pytest.mark.parametrize("word", sorted(BOOLEANS))
def test_every_boolean_field_takes_true_and_false_as_pulumi_config_set_stores_them(word):
    refused = [path for model, name, path in boolean_fields() if errors_at(model, name, word)]
    assert refused == []


def test_the_refusal_names_the_key_and_what_to_write():
    with pytest.raises(Exception, match=r"gpu-platform:network\.flow_logs: not a boolean; write "
                       r"true or false .*\(got 'on'\)"):  # fmt: skip
        config_from_pulumi(
            {
                "gpu-platform:aws": '{"region": "us-east-1", "zones": ["us-east-1a"]}',
                "gpu-platform:network": '{"flow_logs": "on"}',
            },
            "stacks/Pulumi.s.yaml",
        )


# A YAML reader applied to a stack file, anywhere in the repository's Python.
PYYAML_ON_STACKS = re.compile(r"yaml\.(safe_)?load\(.*(\"stacks\"|Pulumi\.)")


def test_nothing_reads_a_stack_file_with_pyyaml_rules():
    """Every reader of stack files, the tests' helpers too, goes through model.config.loading:
    a helper with YAML 1.1 rules would read another config than the plan."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("infra", "components", "jobs", "policy", "recipes", "bootstrap", "tests")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PYYAML_ON_STACKS.search(line) and path.name != "test_stack_yaml.py"
    ]
    assert offenders == []
