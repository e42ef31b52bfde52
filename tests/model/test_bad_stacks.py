"""Bad stack files, each run through `python -m plan`'s main(): exit 2, one message naming
the stack file, the key path, the bad value and what is valid, and never a traceback. This file:
the stack file itself, Pulumi's namespaces, value types, and AWS-only keys on an existing cluster;
AWS's limits are in test_bad_aws_stacks.py (their table in tests/helpers/aws_limits.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from model.stacks import ROOT
from tests.conftest import STACKS
from tests.helpers.aws_limits import AWS_LIMITS
from tests.helpers.bad_stacks import (
    AWS,
    EXISTING,
    GROUP,
    NS,
    assert_refused,
    aws,
    case,
    existing,
    plan_bad,
)

YAML_FILES = [
    # YAML syntax: the parser's own words, with the line and column.
    case(
        "config:\n  gpu-platform:aws: {region: us-east-1\n",
        "line 3, column 1",
        "not valid YAML",
        "expected ',' or '}'",
        "unclosed-flow-mapping",
    ),
    case(
        "config:\n\tgpu-platform:production: true\n",
        "line 2, column 1",
        "not valid YAML",
        "cannot start any token",
        "tab-indent",
    ),
    case(
        "config:\n  gpu-platform:aws:\n    region: us-east-1\n   zones: [a]\n",
        "line 4",
        "not valid YAML",
        "did not find expected key",
        "bad-indent",
    ),
    # Pulumi refuses a key given twice; YAML would keep only the last.
    case(
        "config:\n  gpu-platform:production: true\n  gpu-platform:production: false\n",
        "line 3",
        "'gpu-platform:production'",
        "given twice (first on line 2)",
        "dup-top",
    ),
    case(
        "config:\n  gpu-platform:network:\n    vpc_cidr: 10.1.0.0/16\n    vpc_cidr: 10.2.0.0/16\n",
        "line 4",
        "'vpc_cidr'",
        "given twice (first on line 3)",
        "dup-nested",
    ),
    case(
        "config:\n  gpu-platform:gpu_node_groups:\n    - name: a\n      efa: true\n"
        "      efa: false\n",
        "line 5",
        "'efa'",
        "given twice (first on line 4)",
        "dup-in-list",
    ),
    case(
        "config:\n  network: {}\n  gpu-platform:network: {}\n",
        "gpu-platform:network",
        "as 'network' and as 'gpu-platform:network'",
        "keep one of them",
        "bare-and-namespaced",
    ),
    case("config: []\n", "config:", "list", "must be a mapping of namespace:key", "config-list"),
    case("config: hello\n", "config:", "string", "must be a mapping", "config-string"),
    case(
        "config:\n  a: 1\n---\nconfig: {}\n",
        "line 3, column 1",
        "not valid YAML",
        "expected a single document",
        "two-documents",
    ),
    case(
        "config:\n  gpu-platform:production: \xff\n".encode("latin-1"),
        "byte offset 35",
        "not UTF-8 text",
        "a stack file is UTF-8 YAML",
        "not-utf8",
    ),
    case("- config\n", "the file holds a list", "list", "a stack file is a mapping", "file-list"),
]

NAMESPACES = [
    case(
        {**AWS, "GPU-Platform:production": True},
        "GPU-Platform:production",
        "GPU-Platform",
        "did you mean gpu-platform:production?",
        "namespace-case",
    ),
    # This project declares its own providers: Pulumi's default-provider keys never reach them.
    case(
        {**AWS, "aws:region": "us-west-2"},
        "aws:region",
        "not read",
        "set gpu-platform:aws.region",
        "aws-region",
    ),
    case(
        {**AWS, "aws:profile": "ml"},
        "aws:profile",
        "not read",
        "AWS_PROFILE in the environment",
        "aws-profile",
    ),
    case(
        {**AWS, "aws:skipCredentialsValidation": True},
        "aws:skipCredentialsValidation",
        "not read",
        "set gpu-platform:aws (region, tags)",
        "aws-other",
    ),
    case(
        {**EXISTING, "kubernetes:context": "lab"},
        "kubernetes:context",
        "not read",
        "set gpu-platform:existing.context",
        "kubernetes-context",
    ),
    case(
        {**EXISTING, "kubernetes:kubeconfig": "~/.kube/x"},
        "kubernetes:kubeconfig",
        "not read",
        "gpu-platform:existing.kubeconfig_path",
        "kubernetes-kubeconfig",
    ),
    case(
        {**AWS, "gpu-platfrom:production": True},
        "gpu-platfrom:production",
        "gpu-platfrom",
        "did you mean gpu-platform:production?",
        "namespace-typo",
    ),
    case(
        {**AWS, "gpu_platform:network": {}},
        "gpu_platform:network",
        "gpu_platform",
        "did you mean gpu-platform:network?",
        "namespace-underscore",
    ),
    case(
        {**AWS, "datadog:apiKey": "x"},
        "datadog:apiKey",
        "datadog:",
        "its keys are gpu-platform:<key>",
        "foreign-namespace",
    ),
    # A key without a namespace is the project's, so it is checked like one.
    case(
        {**AWS, "netwrk": {}},
        "gpu-platform:netwrk",
        "unknown key",
        "did you mean 'network'",
        "bare-typo",
    ),
]

VALUES = [
    case(
        {**AWS, f"{NS}:network.vpc_cidr": "10.1.0.0/16"},
        "gpu-platform:network.vpc_cidr",
        "unknown key",
        "in a stack file keys nest",
        "path-notation-in-file",
    ),
    # Booleans are not integers; "4" is 4, but true is no count.
    case(
        aws(system_nodes={"scaling": {"max_size": True}}),
        "gpu-platform:system_nodes.scaling.max_size",
        "(got True)",
        "give a whole number",
        "bool-as-int",
    ),
    case(
        aws(system_nodes={"scaling": {"max_size": "four"}}),
        "gpu-platform:system_nodes.scaling.max_size",
        "'four'",
        "valid integer",
        "word-as-int",
    ),
    case(
        aws(system_nodes={"scaling": {"max_size": 4.5}}),
        "gpu-platform:system_nodes.scaling.max_size",
        "4.5",
        "fractional part",
        "float-as-int",
    ),
    case(
        aws(network={"flow_logs": "maybe"}),
        "gpu-platform:network.flow_logs",
        "'maybe'",
        "write true or false",
        "word-as-bool",
    ),
    case(
        aws(production="maybe"),
        "gpu-platform:production",
        "'maybe'",
        "write true or false",
        "production-word",
    ),
    case(
        aws(cluster={"kubernetes_version": 1.35}),
        "gpu-platform:cluster.kubernetes_version",
        "1.35",
        "quote it",
        "unquoted-version",
    ),
    case(aws(network=[]), "gpu-platform:network", "[]", "expected a mapping", "section-list"),
]

EXISTING_CLUSTER = [
    # AWS-only keys on an existing cluster are refused, not ignored.
    case(
        existing(network={"vpc_cidr": "10.0.0.0/16"}),
        "gpu-platform:network",
        "",
        "only valid with provider aws",
        "existing-network",
    ),
    case(
        existing(cluster={"endpoint_private_only": True}),
        "gpu-platform:cluster.endpoint_private_only",
        "",
        "configures EKS",
        "existing-endpoint",
    ),
    case(
        existing(cluster={"admin_principal_arns": ["arn:aws:iam::123456789012:role/a"]}),
        "gpu-platform:cluster.admin_principal_arns",
        "",
        "only cluster.kubernetes_version",
        "existing-admins",
    ),
    case(
        existing(cluster={"deletion_protection": True}),
        "gpu-platform:cluster.deletion_protection",
        "",
        "only valid with provider aws",
        "existing-deletion-protection",
    ),
    case(
        existing(cluster={"log_types": ["api"]}),
        "gpu-platform:cluster.log_types",
        "",
        "only valid with provider aws",
        "existing-logs",
    ),
    case(
        existing(gpu_node_groups=[GROUP]),
        "gpu-platform:gpu_node_groups",
        "",
        "only valid with provider aws",
        "existing-gpu-groups",
    ),
    case(
        existing(storage={"fsx": {}}),
        "gpu-platform:storage.fsx",
        "",
        "use storage.ceph",
        "existing-fsx",
    ),
    case(
        {**existing(), "aws:region": "us-east-1"},
        "aws:region",
        "not read",
        "set gpu-platform:aws.region",
        "existing-aws-region",
    ),
]

CASES = YAML_FILES + NAMESPACES + VALUES + EXISTING_CLUSTER


def test_the_command_line_exits_2_without_a_traceback():
    run = subprocess.run(
        [sys.executable, "-m", "plan", "no-such-stack", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert "stacks/Pulumi.no-such-stack.yaml" in run.stderr
    assert f"the stacks that exist: {', '.join(STACKS)}" in run.stderr


def test_a_provider_key_is_refused_without_showing_its_value(tmp_path, monkeypatch, capsys):
    stack = {**AWS, "aws:secretKey": "wJalrXUtnFEMI/K7MDENG"}
    code, output = plan_bad(tmp_path, monkeypatch, capsys, stack)
    assert code == 2
    assert "aws:secretKey: not read" in output
    assert "AWS_SECRET_ACCESS_KEY in the environment" in output
    assert "wJalrXUtnFEMI" not in output


def test_at_least_sixty_bad_stacks():
    assert len(CASES) + len(AWS_LIMITS) >= 60


@pytest.mark.parametrize(("stack", "path", "value", "valid"), CASES)
def test_bad_stack_exits_2_naming_file_key_value_and_what_is_valid(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
