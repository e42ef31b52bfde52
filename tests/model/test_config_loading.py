"""Config read as Pulumi reads it: values that arrive as strings mean what their typed form means,
keys without a namespace are the project's, and production decides its defaults on the value the
field will hold. On an existing cluster, production protects the data there and nothing else."""

from __future__ import annotations

import json
import typing
from typing import Annotated

import pytest
from pydantic import BaseModel

from model.config import PlatformConfig, config_from_pulumi
from model.config.base import _not_a_boolean
from model.config.loading import unwrap
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import make_project, stack_text

AWS = {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]}
# Every AWS stack names an admin, and a private endpoint (production's) a way in for the runner.
CLUSTER = {
    "admin_principal_arns": ["arn:aws:iam::210987654321:role/platform-admins"],
    "api_access_cidrs": ["10.0.240.0/24"],
}
CEPH = {
    "nodes": [{"name": "s1"}, {"name": "s2"}, {"name": "s3"}],
    "device_filter": "^nvme[1-9]n1$",
}


def plan_json(tmp_path, name: str, stack_text: str) -> str:
    root = make_project(tmp_path / name, {})
    (root / "stacks" / "Pulumi.s.yaml").write_text(stack_text)
    return build_plan(run_program("s", root)).to_json()


def dump(config: dict) -> str:
    return stack_text({"config": config})


def test_strings_from_pulumi_config_set_plan_as_their_typed_form(tmp_path):
    # `pulumi config set gpu-platform:production True` stores the string "True"; `--path ...
    # max_size 4` may store "4". Both must give the plan the typed values give.
    typed = {
        "gpu-platform:production": True,
        "gpu-platform:aws": AWS,
        "gpu-platform:cluster": CLUSTER,
        "gpu-platform:system_nodes": {"scaling": {"min_size": 2, "max_size": 3}},
        "gpu-platform:network": {"vpc_endpoints": False},
    }
    strings = {
        "gpu-platform:production": "True",
        "gpu-platform:aws": AWS,
        "gpu-platform:cluster": CLUSTER,
        "gpu-platform:system_nodes": {"scaling": {"min_size": "2", "max_size": "3"}},
        "gpu-platform:network": {"vpc_endpoints": "false"},
    }
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert plan_json(tmp_path, "a", dump(typed)) == plan_json(tmp_path, "b", dump(strings))


@pytest.mark.parametrize("spelling", ["True", "true", "TRUE"])
def test_production_as_a_string_gives_the_hardened_prod(spelling):
    cfg = config_from_pulumi(
        {
            "gpu-platform:production": spelling,
            "gpu-platform:aws": json.dumps(AWS),
            "gpu-platform:cluster": json.dumps(CLUSTER),
        },
        "stacks/Pulumi.s.yaml",
    )
    # README "Production": one NAT gateway per zone, flow logs, a private API endpoint,
    # deletion protection and protected stateful resources.
    assert cfg.network.nat_gateways == "per_zone"
    assert cfg.network.flow_logs is True
    assert cfg.cluster.endpoint_private_only is True
    assert cfg.cluster.deletion_protection is True
    assert cfg.protect_stateful is True


def test_keys_without_a_namespace_are_the_projects(tmp_path):
    # Pulumi config docs: a key without a namespace belongs to the project, so a bare
    # `production` is `gpu-platform:production`.
    namespaced = {
        "gpu-platform:production": True,
        "gpu-platform:aws": AWS,
        "gpu-platform:cluster": CLUSTER,
    }
    bare = {"production": True, "aws": AWS, "cluster": CLUSTER}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert plan_json(tmp_path, "a", dump(namespaced)) == plan_json(tmp_path, "b", dump(bare))


def test_the_engines_own_namespace_is_read_without_complaint():
    cfg = config_from_pulumi(
        {
            "gpu-platform:aws": json.dumps(AWS),
            "gpu-platform:cluster": json.dumps(CLUSTER),
            "pulumi:disable-default-providers": '["*"]',
        },
        "stacks/Pulumi.s.yaml",
    )
    assert cfg.aws.region == "us-east-1"


def test_production_on_an_existing_cluster_protects_ceph_and_adds_no_aws_key(tmp_path):
    stack = {
        "gpu-platform:provider": "existing",
        "gpu-platform:production": True,
        "gpu-platform:existing": {"name": "lab", "kubeconfig_path": "~/.kube/lab"},
        "gpu-platform:storage": {"ceph": CEPH},
    }
    root = make_project(tmp_path, {"p": stack, "d": {**stack, "gpu-platform:production": False}})
    protected = {
        r.type.rsplit(":", 1)[-1] for r in build_plan(run_program("p", root)).resources if r.protect
    }
    # The data lives in the CephCluster's OSDs, the CephFilesystem's pools and the claim.
    assert protected == {"CephCluster", "CephFilesystem", "PersistentVolumeClaim"}
    assert not any(r.protect for r in build_plan(run_program("d", root)).resources)


def _bare_ints(annotation) -> list[str]:
    """Integer types inside an annotation that are not the project's Int."""
    if annotation is int:
        return ["int"]
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Annotated:
        checked = any(getattr(m, "func", None) is _not_a_boolean for m in args[1:])
        return [] if args[0] is int and checked else _bare_ints(args[0])
    return [found for arg in args for found in _bare_ints(arg)]


def test_every_integer_of_the_config_refuses_booleans():
    """`max_size: true` must be an error wherever a count is asked for: every integer field
    uses model.config.base.Int."""
    bare, seen = [], set()

    def walk(model: type[BaseModel], path: str) -> None:
        seen.add(model)
        for name, field in model.model_fields.items():
            checked = any(getattr(m, "func", None) is _not_a_boolean for m in field.metadata)
            if not checked and _bare_ints(field.annotation):
                bare.append(f"{path}{name}")
            inner = unwrap(field.annotation)
            if isinstance(inner, type) and issubclass(inner, BaseModel) and inner not in seen:
                walk(inner, f"{path}{name}.")

    walk(PlatformConfig, "")
    assert bare == []
