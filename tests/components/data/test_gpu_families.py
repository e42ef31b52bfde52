"""The GPU types users asked for (issue 17): g6 (NVIDIA L4), g4dn (T4) and p3dn.24xlarge (V100)
plan in a stack of their own, with EFA where they have it, and what cannot run on them is
refused by name: a recipe whose GPU memory floor their GPUs are under, MIG, a power limit
outside the GPU's range.

Facts written out below, with their sources: EC2 User Guide, EFA "Supported instance types"
(g6.8xlarge and up, g4dn.8xlarge and up, p3dn.24xlarge: one EFA interface each); EC2 accelerated
computing specs (g6: L4 24 GB; g4dn: T4 16 GB; p3dn: V100 32 GB; g6.16xlarge has one GPU,
g6.48xlarge eight, g4dn.12xlarge four, p3dn.24xlarge eight); EKS user guide, EFA: 5128 2 MiB
hugepages per EFA node (10256Mi)."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.config import ConfigError, parse_config
from model.warning_kinds import warning_kind
from plan.cli import plan_stack
from plan.model import Plan
from tests.conftest import find, make_project
from tests.helpers.bad_stacks import ADMIN, NS, first_round
from tests.helpers.recipe_projects import refused, stack_with
from tests.helpers.shared_data import RWX_STORAGE

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_TAG = "aws:autoscaling/tag:Tag"
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
EFA_NODE = {"vpc.amazonaws.com/efa": "1", "hugepages-2Mi": "10256Mi"}

GROUPS = [
    # Two L4 sizes of one EFA interface each: one launch template serves both.
    {"name": "l4-efa", "instance_types": ["g6.48xlarge", "g6.16xlarge"], "efa": True},
    {"name": "t4-dev", "instance_types": ["g4dn.12xlarge"], "scaling": {"max_size": 4}},
    {"name": "v100-efa", "instance_types": ["p3dn.24xlarge"], "efa": True, "zone": "us-east-1b"},
]
STACK = {
    f"{NS}:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
    f"{NS}:cluster": {"admin_principal_arns": [ADMIN]},
    f"{NS}:gpu_node_groups": GROUPS,
}


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Plan:
    root = make_project(tmp_path_factory.mktemp("gpus"), {"gpus": STACK})
    return plan_stack("gpus", root)


def asg_resources(plan: Plan, group: str) -> dict[str, str]:
    prefix = f"(known after apply: gpus-{group}."
    return {
        t.inputs["tag"]["key"].removeprefix(f"{TEMPLATE}/resources/"): t.inputs["tag"]["value"]
        for t in plan.of_type(ASG_TAG)
        if t.inputs["autoscalingGroupName"].startswith(prefix)
        and "/resources/" in t.inputs["tag"]["key"]
    }


@pytest.mark.parametrize(
    ("group", "types", "model", "efa"),
    [
        ("l4-efa", ["g6.48xlarge", "g6.16xlarge"], "L4", 1),
        ("t4-dev", ["g4dn.12xlarge"], "T4", 0),
        ("v100-efa", ["p3dn.24xlarge"], "V100", 1),
    ],
)
def test_each_new_type_plans_a_node_group_with_efa_where_asked(plan, group, types, model, efa):
    ng = find(plan, NODE_GROUP, f"gpus-{group}")
    assert ng.inputs["instanceTypes"] == types
    assert ng.inputs["labels"]["gpu-platform/gpu-model"] == model
    lt = find(plan, LAUNCH_TEMPLATE, f"gpus-{group}")
    interfaces = lt.inputs.get("networkInterfaces", [])
    assert [i["interfaceType"] for i in interfaces] == ["efa"] * efa
    assert all(i["networkCardIndex"] == 0 for i in interfaces)


@pytest.mark.parametrize(
    ("group", "resources"),
    [
        # Mixed sizes count by the smallest: g6.16xlarge has one L4.
        ("l4-efa", {"nvidia.com/gpu": "1", **EFA_NODE}),
        ("t4-dev", {"nvidia.com/gpu": "4"}),
        ("v100-efa", {"nvidia.com/gpu": "8", **EFA_NODE}),
    ],
)  # fmt: skip
def test_autoscaler_sees_gpus_efa_and_hugepages_of_an_empty_group(plan, group, resources):
    assert asg_resources(plan, group) == resources


def test_efa_device_plugin_covers_the_new_efa_types_only(plan):
    (release,) = [
        r
        for r in plan.of_type("kubernetes:helm.sh/v3:Release")
        if r.name == "gpus-efa-device-plugin"
    ]
    values = release.inputs["values"]["supportedInstanceLabels"]["values"]
    assert values == ["g6.16xlarge", "g6.48xlarge", "p3dn.24xlarge"]


def test_cost_prices_the_new_types_with_their_dates(plan):
    bases = {line["item"]: line["basis"] for line in plan.outputs["cost"]["lines"]}
    # The dearest type of a group is priced: g6.48xlarge $13.3504/h (AWS price list 2026-09-25),
    # g4dn.12xlarge $3.912/h (same list), p3dn.24xlarge $31.212/h (instances.vantage.sh 2026-01-21).
    assert (
        bases["GPU node group l4-efa (g6.48xlarge, on_demand)"]
        == "on-demand $13.3504/h, us-east-1, 2026-09-25"
    )
    assert (
        bases["GPU node group t4-dev (g4dn.12xlarge, on_demand)"]
        == "on-demand $3.912/h, us-east-1, 2026-09-25"
    )
    assert (
        bases["GPU node group v100-efa (p3dn.24xlarge, on_demand)"]
        == "on-demand $31.212/h, us-east-1, 2026-01-21"
    )


def test_the_plan_has_no_warnings(plan):
    # Every AWS stack carries the one about the monitoring agent's unconfirmed build
    # (model/versions.py), and this one, without storage, the one that nothing provides its
    # shared-data; nothing about these types, their regions or their sizes.
    expected = {"unconfirmed-addon-build", "shared-data-unprovided"}
    assert [w for w in plan.warnings if warning_kind(w) not in expected] == []


# ---------------------------------------------------------------------------------- refusals


T4_NEED = "T4 with 16 GiB, below the 24 GiB esrgan needs (recipes.esrgan.min_gpu_memory_gib)"


def test_a_recipe_on_a_t4_pool_is_refused_by_name(tmp_path, capsys):
    # T4: 16 GB; ESRGAN's default floor is 24 GiB (recipes.esrgan.min_gpu_memory_gib).
    (tmp_path / "project").mkdir()
    groups = [{"name": "t4-dev", "instance_types": ["g4dn.12xlarge"], "scaling": {"max_size": 2}}]
    root = stack_with(tmp_path, groups=groups)
    args = ("esrgan", "--nodes", "1", "--gpus-per-node", "4")
    assert f"--pool 't4-dev' cannot hold esrgan: {T4_NEED}" in refused(
        root, capsys, *args, "--pool", "t4-dev"
    )
    # Left to choose, submit finds no pool and says why for each.
    assert f"t4-dev: {T4_NEED}" in refused(root, capsys, *args)


def test_sd_finetune_is_refused_on_v100_and_esrgan_is_not(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    groups = [{"name": "v100", "instance_types": ["p3dn.24xlarge"], "scaling": {"max_size": 2}}]
    root = stack_with(tmp_path, groups=groups)
    err = refused(root, capsys, "sd-finetune", "--nodes", "1", "--gpus-per-node", "8")
    # V100 32 GB, under sd-finetune's 40 GiB floor.
    assert "v100: V100 with 32 GiB, below the 40 GiB sd-finetune needs" in err
    assert "esrgan" not in err


def group_config(**group):
    return parse_config(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [{"name": "g", **group}],
        },
        "stacks/Pulumi.t.yaml",
    )


@pytest.mark.parametrize(
    ("group", "path", "words"),
    [
        # NVIDIA MIG user guide, "Supported GPUs": no L4, T4 or V100.
        ({"instance_types": ["g6.48xlarge"], "gpu_sharing": {"mode": "mig"}},
         "gpu_node_groups[0].gpu_sharing.mode",
         "mig needs A100, H100, H200 or B200 GPUs; g6.48xlarge has L4"),
        ({"instance_types": ["p3dn.24xlarge"], "gpu_sharing": {"mode": "mig"}},
         "gpu_node_groups[0].gpu_sharing.mode", "p3dn.24xlarge has V100"),
        # Tesla T4, nvidia-smi -q: power limit 60 to 70 W.
        ({"instance_types": ["g4dn.12xlarge"], "gpu_tuning": {"power_limit_watts": 100}},
         "gpu_node_groups[0].gpu_tuning.power_limit_watts",
         "100 W is outside g4dn.12xlarge's T4 range: 60 to 70"),
        # g4dn.4xlarge and smaller have no EFA (EC2 User Guide, EFA supported types).
        ({"instance_types": ["g4dn.4xlarge"], "efa": True},
         "gpu_node_groups[0].instance_types[0]", "efa: true but g4dn.4xlarge has no EFA"),
    ],
)  # fmt: skip
def test_what_the_new_gpus_cannot_do_is_refused_at_its_key(group, path, words):
    with pytest.raises(ConfigError) as raised:
        group_config(**group)
    (problem,) = first_round(raised.value.problems)
    assert problem.startswith(f"gpu-platform:{path}:"), problem
    assert words in problem, problem


def test_timeslicing_a_t4_is_accepted():
    # The cheap development pool: four pods share each T4. g4dn.2xlarge, not g4dn.xlarge: a
    # training pod takes 16 GiB a GPU, which the xlarge's 16 GiB less the kubelet's
    # reservations cannot give (model/config/pod_fit.py refuses it).
    cfg = group_config(
        instance_types=["g4dn.2xlarge"], gpu_sharing={"mode": "time-slicing", "replicas": 4}
    )
    assert cfg.gpu_pools[0].gpu_model == "T4"


@pytest.mark.parametrize(("model", "memory"), [("L4", 24), ("T4", 16), ("V100", 16), ("V100", 32)])
def test_an_existing_clusters_pool_may_have_the_new_gpus(model, memory):
    cfg = existing_pool(gpu_model=model, gpu_memory_gib=memory)
    assert (cfg.gpu_pools[0].gpu_model, cfg.gpu_pools[0].gpu_memory_gib) == (model, memory)


def test_an_existing_clusters_v100_of_an_unsold_size_is_refused():
    # NVIDIA V100 datasheet: 16 GB or 32 GB of HBM2.
    with pytest.raises(ConfigError) as raised:
        existing_pool(gpu_model="V100", gpu_memory_gib=24)
    assert "V100 is sold with 16 or 32 GB, not 24" in raised.value.problems[0]


def existing_pool(**fields):
    pool = {"name": "lab", "node_selector": {"lab/gpu": "yes"}, "gpus_per_node": 4, "nodes": 2}
    return parse_config(
        {
            "provider": "existing",
            "existing": {
                "name": "lab",
                "kubeconfig_path": "~/.kube/lab.yaml",
                "gpu_pools": [{**pool, **fields}],
            },
            "storage": RWX_STORAGE,
        },
        str(Path("stacks/Pulumi.lab.yaml")),
    )
