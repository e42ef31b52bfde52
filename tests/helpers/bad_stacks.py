"""Shared by the bad-stack tables: stack builders, and the one check every refused stack passes
through `python -m plan`'s main()."""

from __future__ import annotations

import re
import typing

import pytest
from pydantic import BaseModel

from model.config import PlatformConfig
from model.config.loading import NOT_CHECKED, ON_DEFAULTS, unwrap
from plan.cli import main
from tests.conftest import make_project
from tests.helpers.shared_data import RWX_STORAGE

SOURCE = "stacks/Pulumi.bad.yaml"
NS = "gpu-platform"
ADMIN = "arn:aws:iam::210987654321:role/platform-admins"
AWS = {
    f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
    f"{NS}:cluster": {"admin_principal_arns": [ADMIN]},
}
EXISTING = {
    f"{NS}:provider": "existing",
    f"{NS}:existing": {"name": "lab", "kubeconfig_path": "~/.kube/lab.yaml"},
    f"{NS}:storage": RWX_STORAGE,
}
GROUP = {"name": "a100", "instance_types": ["p4d.24xlarge"]}


def first_round(problems: list[str]) -> list[str]:
    """The problems a stack's keys have, less what the rules across sections then found with
    those keys set aside, or that they could not run (model/config/loading.py,
    past_field_problems): a test of one key's refusal reads its own."""
    return [p for p in problems if p != NOT_CHECKED and not p.endswith(ON_DEFAULTS)]


def aws(**sections) -> dict:
    """A minimal AWS stack with `sections` set; a given `cluster` keeps the admin principal
    unless it names its own."""
    if "cluster" in sections:
        sections["cluster"] = {"admin_principal_arns": [ADMIN], **sections["cluster"]}
    return {**AWS, **{f"{NS}:{k}": v for k, v in sections.items()}}


def existing(**sections) -> dict:
    return {**EXISTING, **{f"{NS}:{k}": v for k, v in sections.items()}}


def group(**fields) -> dict:
    return aws(gpu_node_groups=[{**GROUP, **fields}])


def tags(value: dict) -> dict:
    return aws(aws={"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"], **value})


def case(stack, path, value, valid, id):
    return pytest.param(stack, path, value, valid, id=id)


def plan_bad(tmp_path, monkeypatch, capsys, stack) -> tuple[int, str]:
    raw = isinstance(stack, (str, bytes))
    root = make_project(tmp_path, {} if raw else {"bad": stack})
    if raw:
        data = stack.encode() if isinstance(stack, str) else stack
        (root / SOURCE).write_bytes(data)
    monkeypatch.setattr("plan.cli.ROOT", root)
    code = main(["bad", "--quiet", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert not (tmp_path / "out").exists(), "a refused stack wrote a plan"
    return code, captured.out + captured.err


def assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid) -> None:
    """Exit 2, the one ConfigError format naming the stack file, a problem at `path` holding
    the bad value and what is valid, no traceback, and a path the user can set."""
    code, output = plan_bad(tmp_path, monkeypatch, capsys, stack)
    assert code == 2, output
    assert "Traceback" not in output
    assert output.startswith(f"{SOURCE}: invalid gpu-platform configuration"), output
    assert output.rstrip().endswith(
        "Nothing was declared. Fix the stack file, or `pulumi config set --path`."
    )
    lines = [line for line in output.splitlines() if line.startswith(f"  - {path}")]
    assert lines, f"no problem at {path}:\n{output}"
    assert any(value in line and valid in line for line in lines), output
    if path.startswith(f"{NS}:") and value != "unknown key":
        assert_is_a_key(path.removeprefix(f"{NS}:"))


def assert_is_a_key(path: str) -> None:
    """A reported path must be one the user can set: every part a field of the model, down to
    a field that is not a section (the rest names a key inside its value: an instance type)."""
    model = PlatformConfig
    parts = iter(re.split(r"\.|\[\d+\]", path))
    for part in parts:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return
        if part:
            assert part in model.model_fields, f"{path}: {part} is not a key of {model.__name__}"
            annotation = model.model_fields[part].annotation
            if typing.get_origin(annotation) is dict:  # the next part is a key the user names
                next(parts, None)
            model = unwrap(annotation)
