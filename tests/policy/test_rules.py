"""Every rule fails on a real planned resource with one field changed, and passes on it as
shipped (or the reverse, for an advisory rule a shipped stack breaks on purpose)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from model.stacks import ROOT
from policy.rules import BY_NAME, RULES, violations
from tests.helpers.bad_stacks import assert_is_a_key
from tests.helpers.policy_cases import (
    DELETE,
    Case,
    add_host_path,
    context,
    edit,
    find,
    policy_json,
    set_path,
)

LT, NG = "LaunchTemplate", "NodeGroup"
PRIVATE_1A = "(known after apply: prod-private-us-east-1a.id)"
PRIVATE_1B = "(known after apply: prod-private-us-east-1b.id)"
PUBLIC_1A = "(known after apply: prod-public-us-east-1a.id)"
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"


def _drop_last_efa_interface(props):
    props["networkInterfaces"].pop()


def _add_write_on_everything(document):
    # Statement 0 allows the autoscaler's Describe* calls on "*"; a write there needs a condition.
    document["Statement"][0]["Action"].append("autoscaling:SetDesiredCapacity")


# The self-test's JobSet: its one replicatedJob's pod template.
POD = "spec.replicatedJobs.0.template.spec.template.spec"


def _job_container(field, value):
    return set_path(f"{POD}.containers.0.{field}", value)


CASES = [
    # security
    Case(
        "eks-secrets-encrypted",
        "prod",
        ("Cluster", "prod-eks"),
        set_path("encryptionConfig.resources", []),
    ),
    Case(
        "prod-api-endpoint-private",
        "prod",
        ("Cluster", "prod-eks"),
        edit(
            lambda p: p["vpcConfig"].update(
                endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"]
            )
        ),
    ),
    # EKS API reference, VpcConfigRequest: publicAccessCidrs "defaults to 0.0.0.0/0"; written
    # out, left unset, or beside a narrow range, the endpoint is open to everyone.
    Case(
        "api-endpoint-world-open",
        "dev",
        ("Cluster", "dev-eks"),
        set_path("vpcConfig.publicAccessCidrs", ["0.0.0.0/0"]),
    ),
    Case(
        "api-endpoint-world-open",
        "dev",
        ("Cluster", "dev-eks"),
        set_path("vpcConfig.publicAccessCidrs", DELETE),
    ),
    Case(
        "api-endpoint-world-open",
        "dev",
        ("Cluster", "dev-eks"),
        set_path("vpcConfig.publicAccessCidrs", ["203.0.113.0/24", "0.0.0.0/0"]),
    ),
    Case(
        "imdsv2-required",
        "prod",
        (LT, "prod-h100-ondemand"),
        set_path("metadataOptions.httpTokens", "optional"),
    ),
    Case(
        "no-open-ingress",
        "prod",
        ("IngressRule", "prod-api-access-0"),
        set_path("cidrIpv4", "0.0.0.0/0"),
    ),
    Case(
        "ebs-encrypted",
        "prod",
        (LT, "prod-system"),
        set_path("blockDeviceMappings.0.ebs.encrypted", "false"),
    ),
    Case(
        "ebs-encrypted",
        "prod",
        ("StorageClass", "prod-gp3"),
        set_path("parameters.encrypted", "false"),
    ),
    Case("prod-fsx-customer-key", "prod", ("Fsx", "prod-fsx"), set_path("kmsKeyId", DELETE)),
    Case(
        "s3-encrypted",
        "dev",
        ("BucketEncryption", "dev-fsx-data"),
        set_path("rules", []),
        checked=("Bucket", "dev-fsx-data"),
    ),
    Case(
        "log-groups-encrypted",
        "prod",
        ("LogGroup", "prod-eks-logs"),
        set_path("kmsKeyId", "arn:aws:kms:us-east-1:444455556666:key/logs"),
        fixes=True,
    ),
    Case(
        "s3-public-access-blocked",
        "dev",
        ("PublicAccessBlock", "dev-fsx-data"),
        set_path("blockPublicPolicy", False),
        checked=("Bucket", "dev-fsx-data"),
    ),
    Case(
        "default-security-group-closed",
        "prod",
        ("DefaultSecurityGroup", "prod-default-sg"),
        set_path("ingress", [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]),
    ),
    Case(
        "kms-key-policy-and-rotation",
        "prod",
        ("KmsKey", "prod-eks-secrets"),
        set_path("enableKeyRotation", False),
    ),
    Case(
        "kms-key-policy-and-rotation",
        "prod",
        ("KmsKey", "prod-fsx-key"),
        set_path("policy", DELETE),
    ),
    Case(
        "node-groups-in-private-subnets",
        "prod",
        (NG, "prod-h100-ondemand"),
        set_path("subnetIds", [PUBLIC_1A]),
    ),
    Case(
        "efa-no-public-ip",
        "prod",
        (LT, "prod-h100-ondemand"),
        set_path("networkInterfaces.0.associatePublicIpAddress", "true"),
    ),
    Case(
        "iam-no-wildcard-write",
        "prod",
        ("RolePolicy", "prod-cluster-autoscaler"),
        policy_json(_add_write_on_everything),
    ),
    Case(
        "privileged-only-where-needed",
        "onprem",
        ("JobSet", "onprem-selftest-job"),
        edit(add_host_path),
    ),
    Case(
        "images-pinned",
        "onprem",
        ("JobSet", "onprem-selftest-job"),
        _job_container("image", "registry.example.internal/gpu-platform/selftest:latest"),
    ),
    Case(
        "images-pinned",
        "prod",
        ("Release", "prod-cluster-autoscaler"),
        set_path("values.image.tag", "latest"),
    ),
    Case("helm-charts-pinned", "prod", ("Release", "prod-kueue"), set_path("version", DELETE)),
    # reliability
    Case(
        "prod-stateful-protected",
        "prod",
        ("Fsx", "prod-fsx"),
        lambda s: dataclasses.replace(s, protect=False),
    ),
    Case(
        "prod-fsx-backups", "prod", ("Fsx", "prod-fsx"), set_path("automaticBackupRetentionDays", 0)
    ),
    Case(
        "control-plane-logs",
        "prod",
        ("Cluster", "prod-eks"),
        set_path("enabledClusterLogTypes", ["api", "authenticator"]),
    ),
    Case(
        "log-retention-set",
        "prod",
        ("LogGroup", "prod-eks-logs"),
        set_path("retentionInDays", DELETE),
    ),
    Case(
        "flow-logs-on",
        "prod",
        ("FlowLog", "prod-flow-logs"),
        set_path("vpcId", "(known after apply: other-vpc.id)"),
        checked=("Vpc", "prod-vpc"),
    ),
    Case(
        "containers-requests-limits",
        "onprem",
        ("JobSet", "onprem-selftest-job"),
        _job_container("resources.limits", {}),
    ),
    Case(
        "gpu-pods-tolerate-and-request",
        "onprem",
        ("JobSet", "onprem-selftest-job"),
        set_path(f"{POD}.tolerations", []),
    ),
    Case(
        "versioned-buckets-expire-old-versions",
        "dev",
        ("Lifecycle", "dev-fsx-data"),
        set_path("rules.0.noncurrentVersionExpiration", DELETE),
        checked=("Bucket", "dev-fsx-data"),
    ),
    # correctness
    Case(
        "efa-security-group-self-rules",
        "prod",
        ("EgressRule", "prod-efa-out-self"),
        set_path("ipProtocol", "tcp"),
        checked=(LT, "prod-h100-ondemand"),
    ),
    Case(
        "efa-interface-count",
        "prod",
        (LT, "prod-h100-ondemand"),
        edit(_drop_last_efa_interface),
        checked=(NG, "prod-h100-ondemand"),
    ),
    Case(
        "efa-single-subnet",
        "prod",
        (NG, "prod-h100-ondemand"),
        set_path("subnetIds", [PRIVATE_1A, PRIVATE_1B]),
    ),
    Case(
        "efa-device-plugin-installed",
        "prod",
        ("Release", "prod-efa-device-plugin"),
        set_path("chart", "some-other-chart"),
        checked=(LT, "prod-h100-ondemand"),
    ),
    Case(
        "capacity-block-instance-type",
        "prod",
        (LT, "prod-h100-block"),
        set_path("instanceType", DELETE),
    ),
    Case("fsx-in-gpu-zone", "prod", ("Fsx", "prod-fsx"), set_path("subnetIds", PRIVATE_1A)),
    Case(
        "fsx-lustre-ports",
        "prod",
        ("IngressRule", "prod-fsx-in-fsx-988"),
        edit(lambda p: p.update(fromPort=989, toPort=989)),
        checked=("Fsx", "prod-fsx"),
    ),
    Case(
        "no-placement-group-with-reservation",
        "prod",
        (LT, "prod-h100-block"),
        set_path("placement", {"groupName": "(known after apply: prod-h100-ondemand.name)"}),
    ),
    Case(
        "one-dcgm-exporter",
        "prod",
        ("Release", "prod-gpu-operator"),
        set_path("values.dcgmExporter.enabled", False),
    ),
    Case(
        "node-labels-name-operator-configs",
        "dev",
        (NG, "dev-spot-small"),
        edit(lambda p: p["labels"].update({DEVICE_PLUGIN_LABEL: "time-slicing-8"})),
    ),
    Case(
        "autoscaler-bounds",
        "prod",
        (NG, "prod-h100-ondemand"),
        set_path("scalingConfig.minSize", 9),
    ),
    # sizing
    Case(
        "host-memory-per-gpu-memory",
        "prod",
        (NG, "prod-h100-ondemand"),
        set_path("instanceTypes", ["g5.2xlarge"]),
    ),
    Case(
        "vcpus-per-gpu",
        "prod",
        (NG, "prod-h100-ondemand"),
        set_path("instanceTypes", ["g6e.xlarge"]),
    ),
    Case(
        "spot-outside-prod",
        "staging",
        (NG, "staging-a100-efa"),
        set_path("capacityType", "SPOT"),
        fixes=True,
    ),
    # onprem's `burst` queue dispatches to the AWS `burst` stack with a budget; without one
    # it is refused.
    Case(
        "burst-queue-has-budget",
        "onprem",
        ("ClusterQueue", "onprem-clusterqueue-burst"),
        set_path("metadata.annotations", DELETE),
    ),
    Case(
        "burst-queue-has-budget",
        "onprem",
        ("ClusterQueue", "onprem-clusterqueue-burst"),
        set_path("metadata.annotations", {"gpu-platform/burst-monthly-budget-usd": "0"}),
    ),
]


def _ids(cases):
    seen: dict[str, int] = {}
    params = []
    for case in cases:
        seen[case.rule] = seen.get(case.rule, 0) + 1
        params.append(case.param(f"{case.stack}-{seen[case.rule]}"))
    return params


def _run(case: Case, changed: bool) -> list[str]:
    shipped = context(case.stack)
    target = find(shipped, *case.target)
    ctx = context(case.stack, case.change(target)) if changed else shipped
    checked = find(ctx, *(case.checked or case.target))
    return [v.message for v in violations(BY_NAME[case.rule], checked, ctx)]


@pytest.mark.parametrize("case", _ids(CASES))
def test_shipped_resource_with_one_field_changed_fails_the_rule(case):
    shipped, changed = _run(case, changed=False), _run(case, changed=True)
    if case.fixes:
        assert shipped and not changed, (shipped, changed)
    else:
        assert not shipped, shipped
        assert changed, f"{case.rule} did not catch the change"


def test_every_rule_has_a_failing_and_a_passing_case():
    assert {r.name for r in RULES} - {c.rule for c in CASES} == {"monthly-cost-within-budget"}


def test_the_pack_has_at_least_thirty_rules_each_described_with_a_remediation():
    assert len(RULES) >= 30
    assert len(BY_NAME) == len(RULES), "two rules share a name"
    for rule in RULES:
        assert rule.level in ("mandatory", "advisory")
        assert rule.description.endswith("."), rule.name
        assert rule.remediation, rule.name


CONFIG_KEY = re.compile(
    r"(?<![/\w])(?:aws|cluster|network|storage|gpu_node_groups|system_nodes|policy|selftest)"
    r"(?:\[\])?(?:\.\w+(?:\[\])?)+"
)


def test_every_config_key_and_file_a_remediation_names_exists():
    for rule in RULES:
        for path in re.findall(r"\b(?:components|infra)/[\w/]+\.py", rule.remediation):
            assert (ROOT / path).is_file(), f"{rule.name}: {path}"
        for key in CONFIG_KEY.findall(rule.remediation):
            assert_is_a_key(key.replace("[]", "[0]"))
