"""Every resource type a stack declares is one the engine that runs `pulumi up` accepts.

The mock engine takes any string as a type; the real providers do not. pulumi-kubernetes splits
the middle of `kubernetes:<group>/<version>:<Kind>` into group and version and refuses a type
without both in `Check`, so preview fails (`kubernetes:v1:Service` is such a type; the core
group is spelt `core` in tokens). The tokens the providers know are read here from the installed
SDKs themselves: the literal each resource class hands to its base class.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace

import pytest

from components.kubernetes_object import type_token
from plan.engine import run_program
from plan.model import Plan, PlannedResource, build_plan
from tests.conftest import (
    AWS_STACKS,
    make_project,
    stack_config,
    stack_file_config,
)
from tests.helpers import crds
from tests.helpers.team_stacks import STACKS_AND_TEAMS, plan_of

SDKS = ("pulumi_aws", "pulumi_kubernetes", "pulumi_random")
# What each generated resource class does: `super(Vpc, __self__).__init__('aws:ec2/vpc:Vpc', …`;
# a provider class passes its package name, which the engine types `pulumi:providers:<name>`.
_SUPER_INIT = re.compile(r"super\(\w+, __self__\)\.__init__\(\s*'([^']+)'")
# Operators' kinds: a group with a dot, a Kubernetes version, a kind.
CUSTOM_RESOURCE = re.compile(
    r"kubernetes:(?P<group>[a-z0-9-]+(?:\.[a-z0-9-]+)+)/(?P<version>v\d+(?:(?:alpha|beta)\d+)?)"
    r":(?P<kind>[A-Z][A-Za-z0-9]*)"
)
COMPONENT = re.compile(r"gpu-platform:[a-z]+:[A-Z][A-Za-z0-9]*")
STACK = "pulumi:pulumi:Stack"
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest@sha256:" + "0" * 64


@functools.cache
def sdk_tokens() -> frozenset[str]:
    tokens = set()
    for package in SDKS:
        root = Path(importlib.util.find_spec(package).origin).parent
        for source in root.rglob("*.py"):
            for token in _SUPER_INIT.findall(source.read_text()):
                tokens.add(token if ":" in token else f"pulumi:providers:{token}")
    return frozenset(tokens)


def unknown_types(resources: Iterable[PlannedResource]) -> list[str]:
    """Each resource whose type no provider declares, with why it is not one of ours either."""
    known = sdk_tokens()
    found = []
    for r in resources:
        if r.type in known or (r.type == STACK and not r.custom):
            continue
        if not r.custom and COMPONENT.fullmatch(r.type):
            continue
        custom = CUSTOM_RESOURCE.fullmatch(r.type)
        if r.custom and custom:
            group, version, kind = custom.group("group", "version", "kind")
            # The cluster serves it only if a pinned operator's CRD does.
            if crds.schema_path(f"{group}/{version}", kind).is_file():
                continue
            found.append(f"{r.name}: {r.type} is served by no CRD in {crds.CRDS}")
            continue
        found.append(f"{r.name}: {r.type} is declared by no provider SDK ({', '.join(SDKS)})")
    return found


def test_the_sdk_scan_reads_the_tokens_the_classes_declare():
    tokens = sdk_tokens()
    # The literals in the installed classes: pulumi_kubernetes/core/v1/Service.py,
    # pulumi_kubernetes/helm/v3/Release.py, pulumi_aws/ec2/vpc.py,
    # pulumi_random/random_password.py; a provider's type is pulumi:providers:<package>
    # (Pulumi docs, "Providers": default providers are named pulumi:providers:<package>).
    for token in (
        "kubernetes:core/v1:Service",
        "kubernetes:helm.sh/v3:Release",
        "kubernetes:yaml/v2:ConfigFile",
        "aws:ec2/vpc:Vpc",
        "random:index/randomPassword:RandomPassword",
        "pulumi:providers:aws",
        "pulumi:providers:kubernetes",
    ):
        assert token in tokens, token
    assert "kubernetes:v1:Service" not in tokens


def test_the_check_refuses_what_the_providers_would():
    """The check itself can fail: a core kind without its group, a custom kind no CRD serves,
    a misspelt AWS type, and a component type on a custom resource."""

    def stub(type_: str, custom: bool = True) -> SimpleNamespace:
        return SimpleNamespace(name=type_, type=type_, custom=custom)

    found = unknown_types(
        [
            stub("kubernetes:v1:Service"),
            stub("kubernetes:ceph.rook.io/v1:CephClustr"),
            stub("aws:ec2/vpc:VPC"),
            stub("gpu-platform:storage:RookCeph"),
            stub("kubernetes:ceph.rook.io/v1:CephCluster"),
            stub("gpu-platform:storage:RookCeph", custom=False),
        ]
    )
    assert [f.split(": ", 1)[0] for f in found] == [
        "kubernetes:v1:Service",
        "kubernetes:ceph.rook.io/v1:CephClustr",
        "aws:ec2/vpc:VPC",
        "gpu-platform:storage:RookCeph",
    ]


def test_objects_declared_whole_get_the_group_the_provider_splits_out():
    # The literals the installed SDK classes declare (pulumi_kubernetes/core/v1/Service.py,
    # batch/v1/Job.py); kueue's kinds are custom resources of group kueue.x-k8s.io.
    assert type_token("v1", "Service") == "kubernetes:core/v1:Service"
    assert type_token("batch/v1", "Job") == "kubernetes:batch/v1:Job"
    assert (
        type_token("kueue.x-k8s.io/v1beta2", "LocalQueue")
        == "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
    )


@pytest.mark.parametrize("stack", STACKS_AND_TEAMS)
def test_every_resource_type_of_every_stack_is_known_to_its_provider(stack):
    assert unknown_types(plan_of(stack).resources) == []


@pytest.fixture(scope="module")
def with_image(tmp_path_factory) -> dict[str, Plan]:
    """Each AWS stack as shipped, with the self-test switched on: that path declares the Job
    and its Service on AWS, which the shipped AWS stacks (no image) never reach."""
    stacks = {}
    for stack in AWS_STACKS:
        config = stack_file_config(stack)
        config["gpu-platform:selftest"] = {
            **config.get("gpu-platform:selftest", {}),
            "image": IMAGE,
        }
        stacks[stack] = config
    root = make_project(tmp_path_factory.mktemp("with-image"), stacks)
    return {stack: build_plan(run_program(stack, root)) for stack in stacks}


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_an_aws_stack_with_a_selftest_image_declares_only_known_types(with_image, stack):
    assert stack_config(stack).provider == "aws"
    plan = with_image[stack]
    # The path this covers: the launcher's ConfigMap, one per namespace jobs run in
    # (components/scheduling/launcher.py): the training namespace, each team's, and the
    # self-test's, which the image switches on (components/namespaces.job_namespaces); and the
    # self-test's JobSet.
    cfg = stack_config(stack)
    teams = [t.name for t in cfg.scheduling.teams if t.name != "training"]
    launchers = [r.name for r in plan.resources if r.name.startswith(f"{stack}-training-launcher-")]
    assert sorted(launchers) == sorted(
        f"{stack}-training-launcher-{ns}" for ns in ["training", *teams, cfg.namespaces.selftest]
    )
    assert [r.type for r in plan.resources if r.name == f"{stack}-selftest-job"] == [
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
    ]
    assert unknown_types(plan.resources) == []
