"""Bad stack files, each run through `python -m infra.plan`'s main(): exit 2, one message naming
the stack file, the key path, the bad value and what is valid, and never a traceback.

The limits asserted are AWS's, EKS's, Kubernetes' and Pulumi's, each cited beside its cases, so
a check loosened in the config model fails here."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from pydantic import BaseModel

from infra.config import PlatformConfig
from infra.config.loading import unwrap
from infra.plan import ROOT, main
from tests.conftest import STACKS, make_project

SOURCE = "stacks/Pulumi.bad.yaml"
NS = "gpu-platform"
AWS = {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]}}
EXISTING = {
    f"{NS}:provider": "existing",
    f"{NS}:existing": {"name": "lab", "kubeconfig_path": "~/.kube/lab.yaml"},
}
GROUP = {"name": "a100", "instance_types": ["p4d.24xlarge"]}


def aws(**sections) -> dict:
    return {**AWS, **{f"{NS}:{k}": v for k, v in sections.items()}}


def existing(**sections) -> dict:
    return {**EXISTING, **{f"{NS}:{k}": v for k, v in sections.items()}}


def group(**fields) -> dict:
    return aws(gpu_node_groups=[{**GROUP, **fields}])


def tags(value: dict) -> dict:
    return {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"], **value}}


def case(stack, path, value, valid, id):
    return pytest.param(stack, path, value, valid, id=id)


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
    case("- config\n", "the file holds a list", "list", "a stack file is a mapping", "file-list"),
]

NAMESPACES = [
    # This project declares its own providers: Pulumi's default-provider keys never reach them.
    case(
        {**AWS, "aws:region": "us-west-2"},
        "aws:region",
        "'us-west-2'",
        "set gpu-platform:aws.region",
        "aws-region",
    ),
    case(
        {**AWS, "aws:profile": "ml"},
        "aws:profile",
        "'ml'",
        "AWS_PROFILE in the environment",
        "aws-profile",
    ),
    case(
        {**AWS, "aws:skipCredentialsValidation": True},
        "aws:skipCredentialsValidation",
        "true",
        "set gpu-platform:aws (region, tags)",
        "aws-other",
    ),
    case(
        {**EXISTING, "kubernetes:context": "lab"},
        "kubernetes:context",
        "'lab'",
        "set gpu-platform:existing.context",
        "kubernetes-context",
    ),
    case(
        {**EXISTING, "kubernetes:kubeconfig": "~/.kube/x"},
        "kubernetes:kubeconfig",
        "'~/.kube/x'",
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
        "valid boolean",
        "word-as-bool",
    ),
    case(
        aws(production="maybe"),
        "gpu-platform:production",
        "'maybe'",
        "valid boolean",
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

AWS_LIMITS = [
    # Amazon VPC user guide, "VPC CIDR blocks": a VPC is /16 to /28.
    case(
        aws(network={"vpc_cidr": "10.0.0.0/8"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/8",
        "AWS accepts a VPC from /16 to /28",
        "vpc-too-big",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.0/29"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/29",
        "AWS accepts a VPC from /16 to /28",
        "vpc-too-small",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.0/26"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/26",
        "use a /24 or larger VPC",
        "vpc-too-small-to-carve",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.0/24"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.0/26",
        "usable addresses",
        "vpc-too-small-for-nodes",
    ),
    case(
        aws(network={"vpc_cidr": "10.0.0.1/16"}),
        "gpu-platform:network.vpc_cidr",
        "10.0.0.1/16",
        "no bits set after the prefix",
        "vpc-host-bits",
    ),
    # "Subnet CIDR blocks": a subnet is /16 to /28 too.
    case(
        aws(network={"private_subnet_cidrs": ["10.0.0.0/29", "10.0.1.0/24"]}),
        "gpu-platform:network.private_subnet_cidrs[0]",
        "10.0.0.0/29",
        "AWS accepts subnets from /16 to /28",
        "subnet-too-small",
    ),
    case(
        aws(network={"private_subnet_cidrs": ["10.9.0.0/24", "10.0.1.0/24"]}),
        "gpu-platform:network.private_subnet_cidrs[0]",
        "10.9.0.0/24",
        "outside vpc_cidr 10.0.0.0/16",
        "subnet-outside-vpc",
    ),
    # EKS API reference, KubernetesNetworkConfigRequest: private ranges, /12 to /24, not the VPC.
    case(
        aws(cluster={"service_ipv4_cidr": "100.64.0.0/16"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "100.64.0.0/16",
        "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16",
        "service-not-private",
    ),
    case(
        aws(cluster={"service_ipv4_cidr": "10.0.0.0/8"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "10.0.0.0/8",
        "from /12 to /24",
        "service-too-big",
    ),
    case(
        aws(cluster={"service_ipv4_cidr": "172.20.0.0/25"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "172.20.0.0/25",
        "from /12 to /24",
        "service-too-small",
    ),
    case(
        aws(cluster={"service_ipv4_cidr": "10.0.128.0/20"}),
        "gpu-platform:cluster.service_ipv4_cidr",
        "10.0.128.0/20",
        "overlaps network.vpc_cidr 10.0.0.0/16",
        "service-in-vpc",
    ),
    # EKS service quotas: 40 public endpoint CIDR ranges per cluster, not adjustable.
    case(
        aws(cluster={"public_access_cidrs": [f"198.51.100.{i}/32" for i in range(41)]}),
        "gpu-platform:cluster.public_access_cidrs",
        "198.51.100.40/32",
        "at most 40 items",
        "too-many-public-cidrs",
    ),
    # Regions and their zones (AWS "Regions and Zones").
    case(
        {f"{NS}:aws": {"region": "us-est-1", "zones": ["us-est-1a", "us-est-1b"]}},
        "gpu-platform:aws.region",
        "'us-est-1'",
        "known regions: us-east-1",
        "region-typo",
    ),
    case(
        {f"{NS}:aws": {"region": "mars-north-1", "zones": ["mars-north-1a"]}},
        "gpu-platform:aws.region",
        "'mars-north-1'",
        "known regions: us-east-1",
        "region-unknown",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-2", "zones": ["us-east-2a", "us-east-2d"]}},
        "gpu-platform:aws.zones[1]",
        "'us-east-2d'",
        "its zones are us-east-2a, us-east-2b, us-east-2c",
        "zone-letter",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "eu-west-1b"]}},
        "gpu-platform:aws.zones[1]",
        "'eu-west-1b'",
        "its zones are us-east-1a",
        "zone-region",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1a"]}},
        "gpu-platform:aws.zones",
        "us-east-1a",
        "zones repeat",
        "zone-twice",
    ),
    case(
        {f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a"]}},
        "gpu-platform:aws.zones",
        "['us-east-1a']",
        "at least 2 items",
        "one-zone",
    ),
    case(
        {f"{NS}:aws": {**AWS[f"{NS}:aws"], "zone_offerings": {"p5.48xlarge": ["us-west-2a"]}}},
        "gpu-platform:aws.zone_offerings.p5.48xlarge[0]",
        "'us-west-2a'",
        "its zones are us-east-1a",
        "offering-zone-region",
    ),
    # Tagging AWS resources, "Tag naming limits and requirements".
    case(
        tags({"tags": {"aws:owner": "me"}}),
        "gpu-platform:aws.tags",
        "'aws:owner'",
        "AWS reserves for its own tags",
        "tag-aws-prefix",
    ),
    case(
        tags({"tags": {"k" * 129: "v"}}),
        "gpu-platform:aws.tags",
        "129 characters",
        "AWS allows 1 to 128",
        "tag-key-long",
    ),
    case(
        tags({"tags": {"team": "v" * 257}}),
        "gpu-platform:aws.tags",
        "257 characters",
        "AWS allows at most 256",
        "tag-value-long",
    ),
    case(
        tags({"tags": {"cost#center": "ml"}}),
        "gpu-platform:aws.tags",
        "'cost#center'",
        "only letters, digits, spaces and _ . : / = + - @",
        "tag-key-chars",
    ),
    # Kubernetes "Labels and Selectors"; kubelet --node-labels for kubernetes.io prefixes.
    case(
        group(labels={"-team": "ml"}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'-team'",
        "beginning and ending with a letter or digit",
        "label-name",
    ),
    case(
        group(labels={"node-role.kubernetes.io/gpu": ""}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'node-role.kubernetes.io/gpu'",
        "kubelet.kubernetes.io or node.kubernetes.io",
        "label-reserved-prefix",
    ),
    case(
        group(labels={"team": "x" * 64}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'team'",
        "at most 63 characters",
        "label-value-long",
    ),
    case(
        group(labels={"team": "ml ops"}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'ml ops'",
        "empty or at most 63 characters",
        "label-value-space",
    ),
    case(
        group(labels={"Example.com/team": "ml"}),
        "gpu-platform:gpu_node_groups[0].labels",
        "'Example.com/team'",
        "not a DNS subdomain",
        "label-prefix-case",
    ),
    # Kubernetes quantities, and what the kubelet can reserve.
    case(
        group(kubelet={"system_reserved": {"cpu": "half"}}),
        "gpu-platform:gpu_node_groups[0].kubelet.system_reserved",
        "'half'",
        "e.g. 500m, 1Gi or 2",
        "quantity-word",
    ),
    case(
        group(kubelet={"kube_reserved": {"cpu": "1", "memory": "-1Gi"}}),
        "gpu-platform:gpu_node_groups[0].kubelet.kube_reserved",
        "'-1Gi'",
        "a non-negative number",
        "quantity-negative",
    ),
    case(
        group(kubelet={"kube_reserved": {"nvidia.com/gpu": "1", "cpu": "1"}}),
        "gpu-platform:gpu_node_groups[0].kubelet.kube_reserved",
        "'nvidia.com/gpu'",
        "the kubelet reserves cpu, memory, ephemeral-storage, pid",
        "reserve-unknown",
    ),
    # EKS service quotas: 450 nodes per managed node group by default.
    case(
        group(scaling={"min_size": 0, "max_size": 451}),
        "gpu-platform:gpu_node_groups[0].scaling.max_size",
        "451",
        "less than or equal to 450",
        "group-over-quota",
    ),
    case(
        group(scaling={"min_size": -1, "max_size": 2}),
        "gpu-platform:gpu_node_groups[0].scaling.min_size",
        "-1",
        "greater than or equal to 0",
        "negative-min",
    ),
    # Ids and ARNs in the shapes AWS gives them.
    case(
        group(capacity="reservation", capacity_reservation_id="cr-123"),
        "gpu-platform:gpu_node_groups[0].capacity_reservation_id",
        "'cr-123'",
        "cr- and 17 (or 8) lowercase hexadecimal digits",
        "reservation-id",
    ),
    case(
        group(capacity="reservation", capacity_reservation_group_arn="arn:aws:rg:x"),
        "gpu-platform:gpu_node_groups[0].capacity_reservation_group_arn",
        "'arn:aws:rg:x'",
        "a resource group ARN",
        "reservation-group-arn",
    ),
    case(
        aws(cluster={"admin_role_arns": ["arn:aws:iam::123456789012:user/bob"]}),
        "gpu-platform:cluster.admin_role_arns[0]",
        "user/bob",
        "an IAM role ARN",
        "role-arn-user",
    ),
    case(
        aws(cluster={"admin_role_arns": ["arn:aws:iam::1234:role/admins"]}),
        "gpu-platform:cluster.admin_role_arns[0]",
        "1234",
        "<12-digit account>",
        "role-arn-account",
    ),
    case(
        aws(storage={"fsx": {"deployment_type": "PERSISTENT_2", "kms_key_arn": "alias/x"}}),
        "gpu-platform:storage.fsx.kms_key_arn",
        "'alias/x'",
        "a KMS key ARN",
        "kms-arn",
    ),
    # Names in words, not regular expressions.
    case(
        group(name="H100"),
        "gpu-platform:gpu_node_groups[0].name",
        "'H100'",
        "at most 32 characters: lowercase letters, digits and hyphens",
        "group-name-case",
    ),
    case(
        group(name="g" * 33),
        "gpu-platform:gpu_node_groups[0].name",
        "'ggg",
        "at most 32 characters",
        "group-name-long",
    ),
    case(
        existing(**{"existing": {"name": "Lab_1", "kubeconfig_path": "k"}}),
        "gpu-platform:existing.name",
        "'Lab_1'",
        "a DNS label: at most 63 characters",
        "existing-name",
    ),
    case(
        aws(
            storage={
                "fsx": {
                    "daily_automatic_backup_start_time": "25:00",
                    "deployment_type": "PERSISTENT_2",
                }
            }
        ),
        "gpu-platform:storage.fsx.daily_automatic_backup_start_time",
        "'25:00'",
        "a time of day HH:MM",
        "backup-time",
    ),
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
        existing(cluster={"admin_role_arns": ["arn:aws:iam::123456789012:role/a"]}),
        "gpu-platform:cluster.admin_role_arns",
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
        "'us-east-1'",
        "set gpu-platform:aws.region",
        "existing-aws-region",
    ),
]

CASES = YAML_FILES + NAMESPACES + VALUES + AWS_LIMITS + EXISTING_CLUSTER


def plan_bad(tmp_path, monkeypatch, capsys, stack) -> tuple[int, str]:
    root = make_project(tmp_path, {} if isinstance(stack, str) else {"bad": stack})
    if isinstance(stack, str):
        (root / SOURCE).write_text(stack)
    monkeypatch.setattr("infra.plan.ROOT", root)
    code = main(["bad", "--quiet", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert not (tmp_path / "out").exists(), "a refused stack wrote a plan"
    return code, captured.out + captured.err


def test_the_command_line_exits_2_without_a_traceback():
    run = subprocess.run(
        [sys.executable, "-m", "infra.plan", "no-such-stack", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert "stacks/Pulumi.no-such-stack.yaml" in run.stderr
    assert f"the stacks that exist: {', '.join(STACKS)}" in run.stderr


def test_at_least_sixty_bad_stacks():
    assert len(CASES) >= 60


@pytest.mark.parametrize(("stack", "path", "value", "valid"), CASES)
def test_bad_stack_exits_2_naming_file_key_value_and_what_is_valid(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
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
    for part in re.split(r"\.|\[\d+\]", path):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return
        if part:
            assert part in model.model_fields, f"{path}: {part} is not a key of {model.__name__}"
            model = unwrap(model.model_fields[part].annotation)
