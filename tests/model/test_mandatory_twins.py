"""Whatever a mandatory policy rule would refuse, the config refuses first, when the config alone
decides it: exit 2 with the key path and nothing declared, instead of a failed preview or plan
after every resource is built. Every mandatory rule (policy/rules, the plan's linked ones too) is
in one table: a stack that breaks it and the key the config refuses, or why no stack file can
break it (the program declares it so whatever the config; the policy run over every stack,
tests/policy/test_plan_run.py, proves it holds), or whose change bounds it."""

from __future__ import annotations

import pytest

from model.config import config_from_pulumi
from model.config.mandatory import REQUIRED_LOG_TYPES
from model.stacks import read_project, read_stack_config
from policy.rules import RULES
from policy.rules.reliability import REQUIRED_LOG_TYPES as POLICY_LOG_TYPES
from tests.conftest import make_project
from tests.helpers.bad_stacks import GROUP, NS, assert_refused, aws, plan_bad

PROD = {f"{NS}:production": True}
# A production endpoint is private: the runner reaches it from a subnet of the VPC (the default
# vpc_cidr, 10.0.0.0/16).
PRIVATE = {"api_access_cidrs": ["10.0.240.0/24"]}
FSX = {"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 2400,
       "per_unit_storage_throughput": 125, "data_repository": None}  # fmt: skip
RESERVED = {**GROUP, "capacity": "reservation", "capacity_reservation_id": "cr-0123456789abcdef0",
            "efa": True, "zone": "us-east-1a"}  # fmt: skip

# rule -> (stack that breaks it, key path the config refuses, words of the refusal)
TWINS = {
    "prod-api-endpoint-private": (
        {**aws(cluster={"endpoint_private_only": False}), **PROD},
        "cluster.public_access_cidrs", "0.0.0.0/0",
    ),
    "no-open-ingress": (
        aws(cluster={"api_access_cidrs": ["0.0.0.0/0"]}), "cluster.api_access_cidrs", "0.0.0.0/0",
    ),
    "control-plane-logs": (
        aws(cluster={"log_types": ["api"]}), "cluster.log_types", "audit, authenticator",
    ),
    "prod-fsx-customer-key": (
        {**aws(cluster=PRIVATE, storage={"fsx": {**FSX, "automatic_backup_retention_days": 7}}),
         **PROD},
        "storage.fsx.create_kms_key", "customer key",
    ),
    "prod-fsx-backups": (
        {**aws(cluster=PRIVATE, storage={"fsx": {**FSX, "create_kms_key": True,
                                                 "automatic_backup_retention_days": 0}}),
         **PROD},
        "storage.fsx.automatic_backup_retention_days", "no data_repository",
    ),
    "no-placement-group-with-reservation": (
        aws(gpu_node_groups=[{**RESERVED, "placement_group": True}]),
        "gpu_node_groups[0].placement_group", "capacity reservation",
    ),
    "autoscaler-bounds": (
        aws(gpu_node_groups=[{**GROUP, "scaling": {"min_size": 3, "max_size": 2}}]),
        "gpu_node_groups[0].scaling.min_size", "min_size 3 > max_size 2",
    ),
    "node-labels-name-operator-configs": (
        aws(gpu_node_groups=[{**GROUP, "labels": {"nvidia.com/device-plugin.config": "x"}}]),
        "gpu_node_groups[0].labels", "derives from gpu_sharing",
    ),
    "images-pinned": (
        aws(selftest={"image": "ghcr.io/example/bootstrap:latest"}), "selftest.image",
        "pinned by digest",
    ),
    "log-retention-set": (
        aws(cluster={"log_retention_days": 0}), "cluster.log_retention_days",
        "not a CloudWatch retention",
    ),
    "fsx-in-gpu-zone": (
        aws(gpu_node_groups=[{**GROUP, "zone": "us-east-1a"}],
            storage={"fsx": {**FSX, "zone": "us-east-1b"}}),
        "storage.fsx.zone", "us-east-1b",
    ),
}  # fmt: skip
# rule -> why no stack file can break it
PROGRAM = {
    "eks-secrets-encrypted": "components/control/cluster.py always declares the key and "
    "encryptionConfig; no key turns it off",
    "imdsv2-required": "the launch template always sets httpTokens: required",
    "ebs-encrypted": "root volumes and the gp3 StorageClass are always encrypted",
    "default-security-group-closed": "the program always empties the default security group",
    "kms-key-policy-and-rotation": "every key comes from components/shared.rotated_kms_key",
    "efa-no-public-ip": "EFA interfaces never ask for a public IP; nodes are in private subnets",
    "iam-no-wildcard-write": "every policy document is the program's own",
    "privileged-only-where-needed": "privileged pods are the program's own, in its namespaces; "
    "policy.privileged_namespaces only names more",
    "helm-charts-pinned": "every chart version comes from model/versions.py",
    "prod-stateful-protected": "protection derives from production itself (protect_stateful)",
    "containers-requests-limits": "every container the program declares sets both",
    "gpu-pods-tolerate-and-request": "the program's GPU pods request and tolerate together",
    "efa-device-plugin-installed": "an EFA group always brings the EFA device plugin",
    "capacity-block-instance-type": "a Capacity Block group's launch template always names "
    "its one instance type",
    "one-dcgm-exporter": "the GPU Operator's exporter is the only one the program installs",
    "s3-encrypted": "every bucket gets a default encryption configuration",
    "s3-public-access-blocked": "every bucket gets a public access block",
    "node-groups-in-private-subnets": "node groups take only the private subnets",
    "versioned-buckets-expire-old-versions": "noncurrent_version_expiration_days is at least "
    "1 by its bounds (tests/model/test_config_bounds.py)",
    "efa-security-group-self-rules": "the EFA security group always admits itself",
    "efa-interface-count": "interfaces derive from the catalog's EFA maximum",
    "efa-single-subnet": "an EFA group spans one zone (PlatformConfig.group_zones)",
    "fsx-lustre-ports": "the file system's security group always admits 988 and 1018-1023",
}
# rule -> the change that refuses it at config time
OTHERS = {"burst-queue-has-budget": "the MultiKueue bursting budget (model/config/multikueue.py)"}

MANDATORY = sorted(r.name for r in RULES if r.level == "mandatory")


def test_every_mandatory_rule_is_classified_once():
    listed = [*TWINS, *PROGRAM, *OTHERS]
    assert sorted(listed) == MANDATORY


def test_the_control_plane_log_types_are_the_policys():
    assert REQUIRED_LOG_TYPES == POLICY_LOG_TYPES == ("api", "audit", "authenticator")


@pytest.mark.parametrize(("rule", "twin"), sorted(TWINS.items()), ids=sorted(TWINS))
def test_a_stack_a_mandatory_rule_would_refuse_is_refused_at_config_time(
    tmp_path, monkeypatch, capsys, rule, twin
):
    stack, path, words = twin
    assert_refused(tmp_path, monkeypatch, capsys, stack, f"{NS}:{path}", words, "")


@pytest.mark.parametrize(
    "rule", [r for r in sorted(TWINS) if r not in ("autoscaler-bounds", "images-pinned",
             "log-retention-set", "node-labels-name-operator-configs", "fsx-in-gpu-zone")]
)  # fmt: skip
def test_the_refusal_names_the_mandatory_rule(tmp_path, monkeypatch, capsys, rule):
    _, output = plan_bad(tmp_path, monkeypatch, capsys, TWINS[rule][0])
    assert f"mandatory rule {rule}" in output


def test_an_exemption_of_no_open_ingress_lets_the_policy_run_judge_it(tmp_path):
    exemption = {
        "rule": "no-open-ingress",
        "resource": "dev-cluster-sg",
        "reason": "a lab with no VPN",
    }
    stack = {**TWINS["no-open-ingress"][0], f"{NS}:policy": {"exemptions": [exemption]}}
    root = make_project(tmp_path, {"s": stack})
    values, _ = read_stack_config(read_project(root), "s")
    assert config_from_pulumi(values, "s").cluster.api_access_cidrs
