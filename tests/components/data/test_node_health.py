"""Node health on AWS: the EKS node monitoring agent add-on on every node, and EKS node auto
repair per managed node group, reboot-only on GPU faults where a replacement may find no
capacity. Facts from the EKS user guide, "Automatically repair nodes in EKS clusters" (the
AWS page below): conditions, `Reboot` / `Replace`, AcceleratedHardwareReady repaired after 10
minutes; and from the agent's chart (aws/eks-node-monitoring-agent, charts/.../values.yaml)."""

from __future__ import annotations

import json

import pytest

from components.data.nodes import node_repair_config
from model.config import ConfigError, parse_config
from model.versions import MANAGED_ADDONS, SUPPORTED_KUBERNETES_VERSIONS
from plan.cli import format_plan
from tests.conftest import find, planned, stack_config
from tests.helpers.bad_stacks import NS, assert_refused, aws, case, existing, group

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
AWS_ = {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]}
CLUSTER = {"admin_principal_arns": ["arn:aws:iam::111122223333:role/platform-admins"]}
BLOCK = "cr-0123456789abcdef0"
# The GPU node groups' taint, as the GPU node group tests pin it.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# The node-join startup taint (docs/selftest.md, "When a node joins"): DCGM diagnostics run on a
# node before its test releases it.
NODE_JOIN_TOLERATION = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def gpu_group(**fields):
    raw = {"name": "gpu", "instance_types": ["p5.48xlarge"], **fields}
    cfg = parse_config(
        {"aws": AWS_, "cluster": CLUSTER, "gpu_node_groups": [raw]}, "stacks/Pulumi.t.yaml"
    )
    return cfg.gpu_node_groups[0]


def repair_of(**fields):
    g = gpu_group(**fields)
    return node_repair_config(g.node_repair, g.repair_reboot_only)


def actions(args) -> dict[tuple[str, str], tuple[str, int]]:
    return {
        (o.node_monitoring_condition, o.node_unhealthy_reason): (
            o.repair_action,
            o.min_repair_wait_time_mins,
        )
        for o in args.node_repair_config_overrides or []
    }


# ------------------------------------------------------------------ node monitoring agent


def agent():
    (addon,) = [a for a in MANAGED_ADDONS if a.name == "eks-node-monitoring-agent"]
    return addon


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_agent_is_pinned_for_every_supported_minor(version):
    assert agent().versions[version] == "v1.7.1-eksbuild.1"


def test_agent_waits_for_nodes_because_it_is_a_daemonset():
    assert agent().needs_nodes is True


def test_agent_dcgm_server_tolerates_the_gpu_taint_so_gpu_diagnostics_run():
    # The chart's dcgmAgent.tolerations default is [], unlike nodeAgent's `operator: Exists`.
    assert agent().configuration == {
        "dcgmAgent": {"tolerations": [GPU_TOLERATION, NODE_JOIN_TOLERATION]}
    }


def test_agent_is_declared_with_its_configuration_on_every_aws_stack(aws_plan):
    (addon,) = [
        r
        for r in aws_plan.of_type("aws:eks/addon:Addon")
        if r.inputs["addonName"] == "eks-node-monitoring-agent"
    ]
    assert json.loads(addon.inputs["configurationValues"]) == {
        "dcgmAgent": {"tolerations": [GPU_TOLERATION, NODE_JOIN_TOLERATION]}
    }


def test_no_agent_and_no_node_group_on_existing_clusters():
    plan = planned("onprem")
    assert not plan.of_type("aws:eks/addon:Addon")
    assert not plan.of_type(NODE_GROUP)


# ------------------------------------------------------------------- repair per capacity kind

GPU_FAULTS_REBOOT = {
    ("AcceleratedHardwareReady", "NvidiaXID79Error"): ("Reboot", 10),
    ("AcceleratedHardwareReady", "NvidiaXID64Error"): ("Reboot", 10),
    ("AcceleratedHardwareReady", "NvidiaDoubleBitError"): ("Reboot", 10),
}


@pytest.mark.parametrize("capacity", ["on_demand", "spot"])
def test_replaceable_capacity_repairs_with_eks_defaults(capacity):
    args = repair_of(capacity=capacity)
    assert args.enabled is True
    assert args.node_repair_config_overrides is None
    assert args.max_unhealthy_node_threshold_percentage is None


@pytest.mark.parametrize(
    "fields",
    [
        {"capacity": "capacity_block", "capacity_reservation_id": BLOCK},
        {"capacity": "reservation", "capacity_reservation_id": BLOCK},
    ],
    ids=["capacity_block", "reservation"],
)
def test_reserved_capacity_reboots_on_gpu_faults_instead_of_replacing(fields):
    args = repair_of(**fields)
    assert args.enabled is True
    assert actions(args) == GPU_FAULTS_REBOOT


def test_reboot_only_can_be_turned_off_on_a_capacity_block():
    args = repair_of(
        capacity="capacity_block",
        capacity_reservation_id=BLOCK,
        node_repair={"reboot_only": False},
    )
    assert args.node_repair_config_overrides is None


def test_reboot_only_can_be_asked_for_on_demand():
    assert actions(repair_of(node_repair={"reboot_only": True})) == GPU_FAULTS_REBOOT


def test_a_configured_override_wins_over_reboot_only():
    args = repair_of(
        capacity="capacity_block",
        capacity_reservation_id=BLOCK,
        node_repair={
            "overrides": [
                {
                    "condition": "AcceleratedHardwareReady",
                    "reason": "NvidiaXID79Error",
                    "action": "Replace",
                    "wait_minutes": 15,
                },
                {"condition": "NetworkingReady", "reason": "IPAMDNotRunning", "action": "Reboot"},
            ]
        },
    )
    assert actions(args) == {
        ("AcceleratedHardwareReady", "NvidiaXID79Error"): ("Replace", 15),
        ("AcceleratedHardwareReady", "NvidiaXID64Error"): ("Reboot", 10),
        ("AcceleratedHardwareReady", "NvidiaDoubleBitError"): ("Reboot", 10),
        ("NetworkingReady", "IPAMDNotRunning"): ("Reboot", 10),
    }


def test_thresholds_reach_eks():
    args = repair_of(
        scaling={"min_size": 0, "max_size": 8},
        node_repair={"max_unhealthy_percentage": 25, "max_parallel_count": 2},
    )
    assert args.max_unhealthy_node_threshold_percentage == 25
    assert args.max_parallel_nodes_repaired_count == 2
    assert args.max_unhealthy_node_threshold_count is None
    assert args.max_parallel_nodes_repaired_percentage is None


def test_disabled_repair_says_so_to_eks():
    args = repair_of(node_repair={"enabled": False})
    assert args.enabled is False
    assert args.node_repair_config_overrides is None


def test_repair_is_on_by_default_for_gpu_and_system_groups():
    g = gpu_group()
    assert g.node_repair.enabled is True
    cfg = parse_config({"aws": AWS_, "cluster": CLUSTER}, "stacks/Pulumi.t.yaml")
    assert cfg.system_nodes.node_repair.enabled is True


# ------------------------------------------------------------------------------ the plan


def test_every_managed_node_group_declares_its_repair_config(aws_plan):
    for ng in aws_plan.of_type(NODE_GROUP):
        assert "nodeRepairConfig" in ng.inputs, ng.name


def test_prod_capacity_block_group_reboots_and_on_demand_group_replaces():
    assert stack_config("prod").gpu_node_groups[0].capacity == "capacity_block"
    plan = planned("prod")
    block = find(plan, NODE_GROUP, "prod-h100-block").inputs["nodeRepairConfig"]
    assert block["enabled"] is True
    assert {
        (o["nodeUnhealthyReason"], o["repairAction"], o["minRepairWaitTimeMins"])
        for o in block["nodeRepairConfigOverrides"]
    } == {
        ("NvidiaXID79Error", "Reboot", 10),
        ("NvidiaXID64Error", "Reboot", 10),
        ("NvidiaDoubleBitError", "Reboot", 10),
    }
    on_demand = find(plan, NODE_GROUP, "prod-h100-ondemand").inputs["nodeRepairConfig"]
    assert on_demand == {"enabled": True}


def test_plan_lists_each_groups_repair_policy():
    text = format_plan(planned("prod"))
    assert "Node repair (EKS node auto repair per managed node group):" in text
    assert "  prod-h100-block: on; EKS default thresholds" in text
    assert "    AcceleratedHardwareReady/NvidiaXID79Error: Reboot after 10 min" in text
    assert "    every other condition and reason: EKS's default action and wait" in text
    assert "  prod-system: on; EKS default thresholds" in text


# ------------------------------------------------------------------------------ bad input

R = f"{NS}:gpu_node_groups[0].node_repair"
BAD = [
    case(
        group(node_repair={"max_unhealthy_percentage": 0}),
        f"{R}.max_unhealthy_percentage",
        "got 0",
        "greater than or equal to 1",
        "unhealthy-percentage-zero",
    ),
    case(
        group(node_repair={"max_parallel_percentage": 150}),
        f"{R}.max_parallel_percentage",
        "got 150",
        "less than or equal to 100",
        "parallel-percentage-over-100",
    ),
    case(
        group(node_repair={"max_parallel_count": -1}),
        f"{R}.max_parallel_count",
        "got -1",
        "greater than or equal to 1",
        "negative-count",
    ),
    case(
        group(node_repair={"max_unhealthy_count": 5}),
        f"{R}.max_unhealthy_count",
        "5 is more nodes",
        "give 1 to 2, or a percentage",
        "count-above-max-size",
    ),
    case(
        group(node_repair={"max_unhealthy_percentage": 20, "max_unhealthy_count": 1}),
        f"{R}.max_unhealthy_count",
        "not both",
        "give max_unhealthy_percentage or max_unhealthy_count",
        "count-and-percentage",
    ),
    case(
        group(node_repair={"enabled": False, "max_parallel_count": 1}),
        f"{R}.enabled",
        "false turns repair off",
        "remove them, or set enabled: true",
        "disabled-with-thresholds",
    ),
    case(
        group(
            node_repair={
                "overrides": [{"condition": "GpuReady", "reason": "X", "action": "Reboot"}]
            }
        ),
        f"{R}.overrides[0].condition",
        "GpuReady",
        "'AcceleratedHardwareReady'",
        "unknown-condition",
    ),
    case(
        group(
            node_repair={"overrides": [{"condition": "Ready", "reason": "X", "action": "Restart"}]}
        ),
        f"{R}.overrides[0].action",
        "Restart",
        "'Reboot' or 'Replace'",
        "unknown-action",
    ),
    case(
        group(
            node_repair={
                "overrides": [
                    {
                        "condition": "AcceleratedHardwareReady",
                        "reason": "NvidiaXID79Error",
                        "action": "Reboot",
                        "wait_minutes": 0,
                    }
                ]
            }
        ),
        f"{R}.overrides[0].wait_minutes",
        "got 0",
        "greater than or equal to 1",
        "zero-wait",
    ),
    case(
        group(
            node_repair={
                "overrides": [
                    {"condition": "Ready", "reason": "KubeletNotReady", "action": "Reboot"},
                    {"condition": "Ready", "reason": "KubeletNotReady", "action": "Replace"},
                ]
            }
        ),
        f"{R}.overrides[1]",
        "overridden twice",
        "keep one",
        "duplicate-override",
    ),
    case(
        aws(system_nodes={"node_repair": {"max_parallel_count": 9}}),
        f"{NS}:system_nodes.node_repair.max_parallel_count",
        "9 is more nodes",
        "give 1 to 4",
        "system-count-above-max-size",
    ),
    case(
        aws(system_nodes={"node_repair": {"reboot_only": True}}),
        f"{NS}:system_nodes.node_repair.reboot_only",
        "system nodes have no GPUs",
        "set it on gpu_node_groups[].node_repair",
        "system-reboot-only",
    ),
    # Existing clusters have neither the agent nor EKS repair: node_repair lives only in the
    # AWS-only sections, which provider existing refuses whole.
    case(
        existing(system_nodes={"node_repair": {"enabled": True}}),
        f"{NS}:system_nodes",
        "only valid with provider aws",
        "remove it for provider existing",
        "existing-cluster",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_bad_repair_config_is_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_a_bad_reason_names_the_shape():
    with pytest.raises(ConfigError) as err:
        gpu_group(
            node_repair={
                "overrides": [{"condition": "Ready", "reason": "not a reason", "action": "Reboot"}]
            }
        )
    assert "e.g. NvidiaXID79Error" in str(err.value)
