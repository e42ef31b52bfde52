"""The NVIDIA GPU Operator: its Helm values per provider and per sharing mode, the per-node
configurations the GPU pools' labels name, and the cluster's one DCGM exporter."""

from __future__ import annotations

import pytest
import yaml

from components.data.gpu_node_group import node_labels
from components.data.gpu_operator import helm_values, operator_labels
from model.config import GpuNodeGroupSettings, GpuOperatorSettings, OnPremGpuPoolSettings
from model.config.pools import pool_of_group, pool_of_onprem
from tests.conftest import AWS_STACKS, STACKS, planned, stack_config
from tests.controllers.label_selector import label_selector_matches
from tests.controllers.pod_security import pod_templates
from tests.helpers import crds
from tests.helpers import helm_values as chart
from tests.helpers.gpu_operator_policy import K8S, cluster_policy
from tests.helpers.rendered_jobs import every_job

RELEASE = "kubernetes:helm.sh/v3:Release"
CHART = ("gpu-operator", "v26.7.0")


def operator_release(stack: str):
    (release,) = [r for r in planned(stack).of_type(RELEASE) if r.inputs["chart"] == CHART[0]]
    return release


def group(name="g", mig_strategy="single", **fields):
    return pool_of_group(
        GpuNodeGroupSettings(**{"name": name, "instance_types": ["p5.48xlarge"], **fields}),
        mig_strategy,
    )


def onprem(mig_strategy="single", **fields):
    base = {"name": "lab", "node_selector": {"lab/gpu": "a100"}, "gpu_model": "A100"}
    return pool_of_onprem(
        OnPremGpuPoolSettings(
            **{**base, "gpu_memory_gib": 80, "gpus_per_node": 8, "nodes": 2, **fields}
        ),
        mig_strategy,
    )


def values(*pools, on_aws=True, **settings):
    """The chart values for `pools`, under the one MIG strategy they were made with (as
    PlatformConfig.gpu_pools gives every pool gpu_operator.mig_strategy)."""
    (strategy,) = {p.mig_strategy for p in pools}
    return helm_values(pools, GpuOperatorSettings(mig_strategy=strategy, **settings), on_aws)


def entry(vals, key):
    return yaml.safe_load(vals["devicePlugin"]["config"]["data"][key])


def mig_configs(vals):
    return yaml.safe_load(vals["migManager"]["config"]["data"]["config.yaml"])["mig-configs"]


# ------------------------------------------------------------------ driver, toolkit, RDMA


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_shipped_aws_stacks_leave_driver_and_toolkit_to_the_al2023_nvidia_ami(stack):
    # shared/PINS.md "GPU Operator": on the AL2023 NVIDIA AMI, driver and toolkit disabled.
    vals = operator_release(stack).inputs["values"]
    assert vals["driver"]["enabled"] is False
    assert vals["toolkit"]["enabled"] is False


def test_existing_cluster_installs_driver_and_toolkit_only_when_told():
    assert values(onprem(), on_aws=False)["driver"]["enabled"] is False
    assert values(onprem(), on_aws=False)["toolkit"]["enabled"] is False
    told = values(onprem(), on_aws=False, install_driver=True, install_toolkit=True)
    assert told["driver"]["enabled"] is True
    assert told["toolkit"]["enabled"] is True


@pytest.mark.parametrize(("fabric", "rdma"), [("roce", True), ("infiniband", True), ("tcp", False)])
def test_gpudirect_rdma_is_on_exactly_when_a_pool_has_an_rdma_fabric(fabric, rdma):
    rdma_values = values(onprem(fabric=fabric), on_aws=False)["driver"]["rdma"]
    assert rdma_values == {"enabled": rdma, "useHostMofed": False}


def test_nvidia_peermem_builds_against_the_hosts_own_mofed_when_they_run_one():
    # GPU Operator docs, "GPUDirect RDMA": with MOFED installed on the host (not by the Network
    # Operator's driver container), set driver.rdma.useHostMofed=true.
    on_host = helm_values([onprem(fabric="roce")], GpuOperatorSettings(), False, host_mofed=True)
    assert on_host["driver"]["rdma"] == {"enabled": True, "useHostMofed": True}
    # The shipped onprem stack's hosts run DOCA-OFED (fabric.mofed_preinstalled: true).
    shipped = operator_release("onprem").inputs["values"]["driver"]["rdma"]
    assert shipped == {"enabled": True, "useHostMofed": True}


def test_shipped_onprem_roce_pool_turns_gpudirect_rdma_on():
    assert operator_release("onprem").inputs["values"]["driver"]["rdma"]["enabled"] is True


def test_mofed_detection_is_off_where_efa_runs_or_the_device_plugin_clashes_with_efa():
    # AWS EKS user guide, "Manage EFA devices" (shared/PINS.md): device plugin v0.19.0+ turns
    # MOFED on by default and clashes with the EFA device plugin; MOFED_ENABLED=false.
    efa = values(group(efa=True))["devicePlugin"]
    assert efa["env"] == [{"name": "MOFED_ENABLED", "value": "false"}]
    assert "env" not in values(group())["devicePlugin"]
    staging = operator_release("staging").inputs["values"]["devicePlugin"]
    assert {"name": "MOFED_ENABLED", "value": "false"} in staging["env"]


# The node-join startup taint (docs/selftest.md, "When a node joins"; cluster-autoscaler FAQ.md,
# "Startup taints", the prefix).
NODE_JOIN_TOLERATION = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def test_operator_daemonsets_keep_the_charts_gpu_taint_toleration():
    # The chart's daemonsets.tolerations tolerates nvidia.com/gpu (shared/PINS.md); the GPU
    # nodes carry that taint, so overriding the list would strand every operand.
    defaults = chart.defaults(*CHART)["daemonsets"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in defaults


@pytest.mark.parametrize("stack", STACKS)
def test_operands_and_nfd_keep_the_charts_tolerations_and_run_on_untested_nodes(stack):
    """Both lists replace the chart's: every entry of the chart's is kept, and the node-join
    taint is added, or no operand would run on a node before its test, which then never
    passes (the device plugin advertises no GPU)."""
    given = operator_release(stack).inputs["values"]
    defaults = chart.defaults(*CHART)
    for path in (("daemonsets",), ("node-feature-discovery", "worker")):
        ours, theirs = given, defaults
        for key in path:
            ours, theirs = ours[key], theirs[key]
        assert all(t in ours["tolerations"] for t in theirs["tolerations"]), path
        assert NODE_JOIN_TOLERATION in ours["tolerations"], path


@pytest.mark.parametrize("stack", STACKS)
def test_node_feature_discovery_runs_in_the_gpu_operator(stack):
    # One NFD per cluster: this one; a Network Operator must run with its own off.
    assert operator_release(stack).inputs["values"]["nfd"] == {"enabled": True}


# ------------------------------------------------------------------ device-plugin configs


def test_time_slicing_entry_has_the_device_plugin_v1_shape():
    # NVIDIA k8s-device-plugin v0.20.0 README, "Shared Access to GPUs with CUDA Time-Slicing".
    vals = values(group(gpu_sharing={"mode": "time-slicing", "replicas": 4}))
    assert entry(vals, "time-slicing-4") == {
        "version": "v1",
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    }


def test_mps_entry_has_the_device_plugin_v1_shape():
    # NVIDIA k8s-device-plugin v0.20.0 README, "Shared Access to GPUs with CUDA MPS".
    vals = values(group(gpu_sharing={"mode": "mps", "replicas": 2}))
    assert entry(vals, "mps-2") == {
        "version": "v1",
        "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
    }


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_mig_entry_and_cluster_strategy_agree(strategy):
    vals = values(group(mig_strategy=strategy, gpu_sharing={"mode": "mig"}))
    assert entry(vals, f"mig-{strategy}") == {"version": "v1", "flags": {"migStrategy": strategy}}
    assert vals["mig"] == {"strategy": strategy}


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_cluster_mig_strategy_is_the_gpu_operator_setting_even_without_mig_pools(strategy):
    # ClusterPolicy spec.mig.strategy (shared/crds/nvidia.com/ClusterPolicy.v1.json) is one
    # value for the cluster: it is what gpu_operator.mig_strategy says, whatever the pools.
    pools = [onprem(mig_strategy=strategy)]
    vals = helm_values(pools, GpuOperatorSettings(mig_strategy=strategy), on_aws=False)
    assert vals["mig"] == {"strategy": strategy}


def test_whole_gpu_nodes_get_the_default_entry_without_a_label():
    vals = values(group())
    config = vals["devicePlugin"]["config"]
    assert (config["create"], config["default"]) == (True, "default")
    assert entry(vals, "default") == {"version": "v1"}
    assert "nvidia.com/device-plugin.config" not in node_labels(
        GpuNodeGroupSettings(name="g", instance_types=["p5.48xlarge"]), "single"
    )


# Every sharing mode, with MIG under both cluster strategies and a shared mode under mixed too
# (a cluster whose MIG pools are mixed still has time-sliced ones).
SHARING_MODES = [
    ({"mode": "none"}, "single"),
    ({"mode": "time-slicing", "replicas": 4}, "single"),
    ({"mode": "time-slicing", "replicas": 8}, "mixed"),
    ({"mode": "mps", "replicas": 2}, "single"),
    ({"mode": "mig"}, "single"),
    ({"mode": "mig"}, "mixed"),
]


def _check_labels_resolve(pools, vals):
    data = vals["devicePlugin"]["config"]["data"]
    layouts = mig_configs(vals) if "migManager" in vals else {}
    for pool in pools:
        labels = operator_labels(pool)
        assert labels.get("nvidia.com/device-plugin.config", "default") in data, pool.name
        if "nvidia.com/mig.config" in labels:
            assert labels["nvidia.com/mig.config"] in layouts, pool.name


@pytest.mark.parametrize("stack", STACKS)
def test_every_label_a_stacks_pool_carries_names_a_defined_config(stack):
    cfg = stack_config(stack)
    vals = operator_release(stack).inputs["values"]
    _check_labels_resolve(cfg.gpu_pools, vals)
    # On AWS, the labels the node groups really carry (with the stack's own extra labels).
    for group_settings in cfg.gpu_node_groups:
        labels = node_labels(group_settings, cfg.gpu_operator.mig_strategy)
        config = labels.get("nvidia.com/device-plugin.config", "default")
        assert config in vals["devicePlugin"]["config"]["data"], group_settings.name


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_every_label_of_every_sharing_mode_names_a_defined_config(strategy):
    # mig.strategy is cluster-wide: every pool of a stack is made under the one strategy.
    modes = [sharing for sharing, _ in SHARING_MODES]
    pools = [group(f"g{i}", strategy, gpu_sharing=s) for i, s in enumerate(modes)]
    _check_labels_resolve(pools, values(*pools))


def test_aws_node_group_labels_are_the_operator_labels():
    settings = GpuNodeGroupSettings(
        name="g", instance_types=["p5.48xlarge"], gpu_sharing={"mode": "mps", "replicas": 2}
    )
    assert node_labels(settings, "mixed")["nvidia.com/device-plugin.config"] == "mps-2"


# ------------------------------------------------------------------------------------ MIG

# NVIDIA MIG user guide, "Supported MIG Profiles" (docs.nvidia.com/datacenter/tesla/
# mig-user-guide/supported-mig-profiles.html): the 1g, 2g and 3g profiles of each GPU.
MIG_CASES = [
    ("p4d.24xlarge", ("1g.5gb", "2g.10gb", "3g.20gb")),  # A100-SXM4-40GB
    ("p4de.24xlarge", ("1g.10gb", "2g.20gb", "3g.40gb")),  # A100-SXM4-80GB
    ("p5.48xlarge", ("1g.10gb", "2g.20gb", "3g.40gb")),  # H100-SXM5-80GB
    ("p5en.48xlarge", ("1g.18gb", "2g.35gb", "3g.71gb")),  # H200-SXM5-141GB
    ("p6-b200.48xlarge", ("1g.23gb", "2g.45gb", "3g.90gb")),  # B200-180GB
]


@pytest.mark.parametrize(("instance_type", "profiles"), MIG_CASES)
def test_mig_layouts_cut_each_gpu_into_its_documented_profiles(instance_type, profiles):
    one, two, three = profiles
    for strategy in ("single", "mixed"):
        pool = group(
            mig_strategy=strategy, instance_types=[instance_type], gpu_sharing={"mode": "mig"}
        )
        layouts = mig_configs(values(pool))
        assert layouts["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
        assert layouts[f"all-{one}"] == [
            {"devices": "all", "mig-enabled": True, "mig-devices": {one: 7}}
        ]
        assert layouts[f"all-balanced-{one}"] == [
            {"devices": "all", "mig-enabled": True, "mig-devices": {one: 2, two: 1, three: 1}}
        ]


def test_mig_manager_defaults_to_mig_off_and_is_left_alone_without_mig_pools():
    vals = values(group(gpu_sharing={"mode": "mig"}))
    config = vals["migManager"]["config"]
    assert (config["create"], config["default"]) == (True, "all-disabled")
    assert "migManager" not in values(group())


def test_two_gpu_models_get_their_own_mig_layouts():
    a100 = group("a", "mixed", instance_types=["p4d.24xlarge"], gpu_sharing={"mode": "mig"})
    h200 = group("h", "mixed", instance_types=["p5en.48xlarge"], gpu_sharing={"mode": "mig"})
    layouts = mig_configs(values(a100, h200))
    assert {"all-balanced-1g.5gb", "all-balanced-1g.18gb"} <= set(layouts)
    assert operator_labels(a100)["nvidia.com/mig.config"] == "all-balanced-1g.5gb"
    assert operator_labels(h200)["nvidia.com/mig.config"] == "all-balanced-1g.18gb"


# ----------------------------------------------------------- chart keys and ClusterPolicy


@pytest.mark.parametrize(("sharing", "strategy"), SHARING_MODES)
@pytest.mark.parametrize("on_aws", [True, False])
def test_values_of_each_mode_and_provider_are_keys_the_chart_reads(sharing, strategy, on_aws):
    pool = (
        group(mig_strategy=strategy, gpu_sharing=sharing, efa=True)
        if on_aws
        else onprem(mig_strategy=strategy, gpu_sharing=sharing, fabric="roce")
    )
    assert chart.unknown_keys(*CHART, values(pool, on_aws=on_aws), K8S) == []


# The ClusterPolicy fields the chart copies our values into one to one (its template
# clusterpolicy.yaml); Helm-only keys (`create`, `data`) stay behind.
CLUSTER_POLICY_FIELDS = {
    "driver": ("enabled", "rdma"),
    "toolkit": ("enabled",),
    "dcgmExporter": ("enabled",),
    "mig": ("strategy",),
    "devicePlugin": ("env",),
}
CLUSTER_POLICY_REQUIRED = (
    "daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "driver", "gfd", "nodeStatusExporter",
    "operator", "toolkit",
)  # fmt: skip


@pytest.mark.parametrize(("sharing", "strategy"), SHARING_MODES)
def test_values_fit_the_cluster_policy_crd(sharing, strategy):
    vals = values(group(mig_strategy=strategy, gpu_sharing=sharing, efa=True))
    spec = {key: {} for key in CLUSTER_POLICY_REQUIRED}
    for section, fields in CLUSTER_POLICY_FIELDS.items():
        spec[section] = {f: vals[section][f] for f in fields if f in vals.get(section, {})}
    spec["devicePlugin"]["config"] = {
        k: vals["devicePlugin"]["config"][k] for k in ("name", "default")
    }
    if "migManager" in vals:
        spec["migManager"] = {
            "config": {k: vals["migManager"]["config"][k] for k in ("name", "default")}
        }
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }
    assert crds.errors(policy) == []


# --------------------------------------------------------------------------- DCGM exporter


def _dcgm_exporters(value, path=()):
    """Every place in a release's values that turns a DCGM exporter on."""
    if isinstance(value, dict):
        name = path[-1].lower() if path else ""
        if "dcgm" in name and "exporter" in name and value.get("enabled") is True:
            yield ".".join(path)
        for key, inner in value.items():
            yield from _dcgm_exporters(inner, (*path, str(key)))


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_runs_exactly_one_dcgm_exporter(stack):
    found = [
        f"{r.name}: {where}"
        for r in planned(stack).of_type(RELEASE)
        for where in _dcgm_exporters(r.inputs["values"])
    ]
    found += [r.name for r in planned(stack).of_type(RELEASE) if "dcgm" in r.inputs["chart"]]
    assert found == [f"{stack}-gpu-operator: dcgmExporter"]


# ------------------------------------------------------------------------- driver upgrades

# Stacks on an existing cluster, where the operator may install the driver.
EXISTING_STACKS = [s for s in STACKS if s not in AWS_STACKS]

# ClusterPolicy.spec.driver.upgradePolicy as the chart writes it (gpu-operator v26.7.0 chart
# templates/clusterpolicy.yaml l. 227-249; the chart's `gpuPodDeletion` becomes the CR's
# `podDeletion`), with the platform's choices (../shared/PINS.md "Driver upgrades") and the
# chart's values.yaml defaults (l. 167-200) where the platform keeps them: maxUnavailable 25%,
# gpuPodDeletion.timeoutSeconds 300, drain force false / timeoutSeconds 300 / deleteEmptyDir false.
UPGRADE_POLICY = {
    "autoUpgrade": True,
    "maxParallelUpgrades": 1,
    "maxUnavailable": "25%",
    "waitForCompletion": {"timeoutSeconds": 0, "podSelector": "gpu-platform/workload=training"},
    "podDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": True},
    "drain": {"enable": False, "force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
}


def driver_installing_values(stack: str) -> dict:
    """The stack's gpu-operator values with the operator installing the driver."""
    cfg = stack_config(stack)
    settings = cfg.gpu_operator.model_copy(update={"install_driver": True})
    return helm_values(cfg.gpu_pools, settings, on_aws=False)


def selector_of(text: str) -> dict:
    """A label selector string of `key=value` terms (the operator parses podSelector with
    labels.Parse) as a matchLabels selector; anything else is refused, not guessed."""
    terms = [t.split("=") for t in text.split(",")]
    assert all(len(t) == 2 for t in terms), f"not key=value terms: {text!r}"
    return {"matchLabels": dict(terms)}


@pytest.mark.parametrize("stack", EXISTING_STACKS)
def test_driver_upgrades_wait_for_training_pods_and_delete_their_shm(stack):
    vals = driver_installing_values(stack)
    assert chart.unknown_keys(*CHART, vals, K8S) == []
    assert cluster_policy(vals)["spec"]["driver"]["upgradePolicy"] == UPGRADE_POLICY


@pytest.mark.parametrize("stack", STACKS)
def test_upgrade_policy_is_set_exactly_where_the_operator_installs_the_driver(stack):
    # PINS.md: the upgrade controller works on the operator's driver pods; with none (the
    # AL2023 NVIDIA AMI, or nodes with their own driver) a policy would promise what never runs.
    driver = operator_release(stack).inputs["values"]["driver"]
    assert ("upgradePolicy" in driver) == driver["enabled"]


@pytest.mark.parametrize("stack", STACKS)
def test_driver_upgrade_waits_for_every_training_pod_the_platform_renders(stack):
    text = cluster_policy(driver_installing_values(EXISTING_STACKS[0]))["spec"]["driver"][
        "upgradePolicy"
    ]["waitForCompletion"]["podSelector"]
    selector = selector_of(text)
    unmatched = [
        what
        for what, obj in every_job(stack)
        for meta, _ in pod_templates(obj)
        if not label_selector_matches(selector, meta.get("labels") or {})
    ]
    assert unmatched == []
