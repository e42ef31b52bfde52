"""The generated config reference and stack-file schema: current, valid, and as strict as the
program (README "How config is read" says what the program accepts and refuses)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from model.config.loading import read_yaml
from model.stacks import ROOT
from tests.conftest import STACKS
from tools.config_docs import SCHEMA, generated, main, reference, stack_schema

VALIDATOR = jsonschema.Draft202012Validator(stack_schema())


def errors(doc: dict) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)
    ]


def test_reference_and_schema_are_current():
    stale = [
        str(path)
        for path, text in generated().items()
        if not (ROOT / path).is_file() or (ROOT / path).read_text(encoding="utf-8") != text
    ]
    assert not stale, f"stale: {stale}; run `make docs`, review the diff and commit it"


def test_check_mode_names_a_stale_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("tools.config_docs.ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "config.md").write_text("# an old reference\n")
    assert main(["--check"]) == 1
    assert "docs/config.md, docs/stack-schema.json" in capsys.readouterr().err
    assert main([]) == 0
    assert main(["--check"]) == 0


def test_schema_is_valid_json_schema_2020_12():
    jsonschema.Draft202012Validator.check_schema(json.loads((ROOT / SCHEMA).read_text()))


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_file_validates_against_the_schema(stack):
    doc = read_yaml(ROOT / "stacks" / f"Pulumi.{stack}.yaml", stack)
    assert errors(doc) == []


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "onprem"])
def test_shipped_stack_files_name_the_schema_on_their_first_line(stack):
    # yaml-language-server (the YAML extension of VS Code and others) reads this modeline; the
    # path is relative to the stack file.
    first = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../docs/stack-schema.json"


# What the program refuses, the schema refuses too, at the same key.
@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"gpu-platform:cluster": {"endpoint_privat_only": True}}, "config/gpu-platform:cluster"),
        # A key without a namespace is the project's: checked the same way.
        ({"cluster": {"endpoint_privat_only": True}}, "config/cluster"),
        # Other providers' keys are refused (the program names the key to set instead).
        ({"aws:region": "us-east-1"}, "config"),
        ({"kubernetes:context": "admin"}, "config"),
        ({"gpu-platfrom:production": True}, "config"),
        ({"production": "maybe"}, "config/production"),
        (
            {"gpu-platform:network": {"nat_gateways": "per_az"}},
            "config/gpu-platform:network/nat_gateways",
        ),
        # A node group name is a DNS-label-like name of at most 32 characters.
        (
            {"gpu-platform:gpu_node_groups": [{"name": "GPU_big",
                                               "instance_types": ["g5.2xlarge"]}]},
            "config/gpu-platform:gpu_node_groups/0/name",
        ),
        # "A boolean is never a number: `max_size: true` is refused."
        (
            {"gpu-platform:gpu_node_groups": [{"name": "a", "instance_types": ["g5.2xlarge"],
                                               "scaling": {"min_size": 0, "max_size": True}}]},
            "config/gpu-platform:gpu_node_groups/0/scaling/max_size",
        ),
        # Instance types come from the catalog; the schema lists them, so editors complete them.
        (
            {"gpu-platform:gpu_node_groups": [{"name": "a", "instance_types": ["p5.48xlarg"]}]},
            "config/gpu-platform:gpu_node_groups/0/instance_types/0",
        ),
        # An IAM ARN holds a 12-digit account (IAM user guide, "IAM identifiers").
        (
            {"cluster": {"admin_principal_arns": ["arn:aws:iam::1234:role/admins"]}},
            "config/cluster/admin_principal_arns/0",
        ),
        # CloudWatch Logs keeps logs 1, 3, 5, 7, 14, 30, ... days, never 100 (PutRetentionPolicy).
        (
            {"gpu-platform:cluster": {"log_retention_days": 100}},
            "config/gpu-platform:cluster/log_retention_days",
        ),
        # instance_types is required.
        (
            {"gpu-platform:gpu_node_groups": [{"name": "a"}]},
            "config/gpu-platform:gpu_node_groups/0",
        ),
    ],
)  # fmt: skip
def test_schema_refuses_what_the_program_refuses(config, where):
    found = errors({"config": config})
    assert found and all(e.startswith(f"{where}: ") for e in found), found


# What the program reads, the schema accepts: `pulumi config set` stores "4" and "true" as
# strings, `--secret` an encrypted value, and Pulumi's own `pulumi:` keys are read.
@pytest.mark.parametrize(
    "config",
    [
        {"gpu-platform:production": "True"},
        {"production": "false"},
        {"gpu-platform:gpu_node_groups": [{"name": "a", "instance_types": ["g5.2xlarge"],
                                           "scaling": {"min_size": "0", "max_size": "4"}}]},
        {"gpu-platform:provider": "existing",
         "gpu-platform:existing": {"name": "lab", "kubeconfig": {"secure": "v1:AAAA"}}},
        {"pulumi:tags": {"team": "ml"}, "pulumi:disable-default-providers": ["*"]},
    ],
)  # fmt: skip
def test_schema_accepts_what_the_program_reads(config):
    assert errors({"config": config}) == []


def row(key: str) -> list[str]:
    line = next(r for r in reference().splitlines() if r.startswith(f"| `{key}` |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_reference_gives_type_default_production_default_and_constraint():
    # README "Stacks and overrides": production: true sets one NAT per zone and a year (365
    # days) of control-plane log retention; the defaults are a single NAT and 90 days.
    assert row("network.nat_gateways")[1:5] == [
        "string",
        '`"single"`',
        '`"per_zone"`',
        "one of `single`, `per_zone`",
    ]
    assert row("cluster.log_retention_days")[1:4] == ["integer", "`90`", "`365`"]
    # EKS allows at most 40 public access CIDRs (cluster endpoint access control).
    assert row("cluster.public_access_cidrs")[4] == "at least 1 long; at most 40 long"
    assert row("gpu_node_groups[].name")[1:5] == [
        "string",
        "required",
        "",
        "a group name: at most 32 characters: lowercase letters, digits and hyphens, "
        "beginning and ending with a letter or digit; unique among the stack's GPU pools",
    ]


def test_reference_gives_nested_keys_the_defaults_their_parent_gives():
    # SystemNodeSettings declares scaling = Scaling(min_size=2, max_size=4), where Scaling's own
    # fields default to 0 and 1: the reference shows what a stack that sets nothing gets.
    assert row("system_nodes.scaling.min_size")[2] == "`2`"
    assert row("system_nodes.scaling.max_size")[2] == "`4`"


def test_reference_says_what_function_checks_accept():
    assert row("gpu_node_groups[].instance_types")[4] == (
        "at least 1 long; an instance type of the catalog (model/catalog.py)"
    )
    # A map's key checks are said as such: the autoscaler's priority expander takes one
    # priority per capacity kind.
    assert row("autoscaler.priorities")[4] == (
        "keys: one of `on_demand`, `spot`, `reservation`, `capacity_block`"
    )
    assert row("gpu_node_groups[].kubelet.system_reserved")[4] == (
        "keys cpu, memory, ephemeral-storage, pid; values Kubernetes quantities (500m, 1Gi)"
    )


def test_reference_lists_every_top_level_key():
    headings = [line for line in reference().splitlines() if line.startswith("## ")]
    # The sections of README "Stacks and overrides" and the model's planes.
    for key in ("provider", "production", "aws", "network", "cluster", "gpu_node_groups",
                "storage", "scheduling", "selftest"):  # fmt: skip
        assert f"## `{key}`" in headings
