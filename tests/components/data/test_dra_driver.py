"""NVIDIA's DRA driver (components/data/dra_driver.py) on the pools that allocate GPUs through it
(issue 41 §1): the pinned chart rendered offline from ../shared/helm and validated, installed
exactly where a pool uses DRA, never beside the device plugin on one node, and refused where the
driver or the autoscaler cannot serve the pool.

Literals from ../shared/PINS.md ("NVIDIA DRA driver for GPUs (0.4.1)", "Coexistence with the GPU
Operator's device plugin", "Chart values that matter", "cluster-autoscaler and DRA"): chart
`oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu` 0.4.1, image
`registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1`, namespace
`dra-driver-nvidia-gpu`, DaemonSet `dra-driver-nvidia-gpu-kubelet-plugin`, controller Deployment
`dra-driver-nvidia-gpu-controller` (ComputeDomains only)."""

from __future__ import annotations

import functools
import json
import re

import pytest
import yaml
from cel_expr_python import cel

from components.data.dra_driver import helm_values
from components.registry_mirror import mirrored_values
from model.config import PlatformConfig, parse_config
from model.versions import CHARTS
from plan.model import Plan
from plan.render import Rendering, render_chart, render_plan
from tests.conftest import SHARED_HELM, STACKS, planned, rendered, stack_config
from tests.helpers import helm_values as chart_values
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing
from tests.helpers.box_nodes import misfit, pool_nodes
from tests.helpers.rendered_validity import assert_rendered_objects_valid
from tests.helpers.varied_stacks import (
    DRA_CONFIGS,
    DRA_EXISTING_STACK,
    DRA_STACK,
    dra_config,
    dra_plan,
)

RELEASE = "kubernetes:helm.sh/v3:Release"
IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"
NAMESPACE = "dra-driver-nvidia-gpu"
KUBELET_PLUGIN = "dra-driver-nvidia-gpu-kubelet-plugin"
# gpu-operator v26.7.0 assets/state-device-plugin/0500_daemonset.yaml: the device plugin's
# nodeSelector; the operator writes the label `true` only where it is missing or empty
# (controllers/state_manager.go addGPUStateLabels).
DEVICE_PLUGIN_SELECTOR = {"nvidia.com/gpu.deploy.device-plugin": "true"}
DRA_STACKS = sorted(DRA_CONFIGS)


def config(stack: str) -> PlatformConfig:
    return dra_config(stack) if stack in DRA_CONFIGS else stack_config(stack)


def plan(stack: str) -> Plan:
    return dra_plan(stack) if stack in DRA_CONFIGS else planned(stack)


@functools.cache
def rendering(stack: str) -> Rendering:
    if stack in DRA_CONFIGS:
        return render_plan(dra_plan(stack), (SHARED_HELM,))
    return rendered(stack)


def release(stack: str):
    return [r for r in plan(stack).of_type(RELEASE) if r.name == f"{stack}-dra-driver-nvidia-gpu"]


def test_the_pin_is_the_oci_chart_0_4_1():
    chart = CHARTS["dra-driver-nvidia-gpu"]
    assert f"{chart.repository}/{chart.name}" == (
        "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    )
    assert chart.version == "0.4.1"
    assert (SHARED_HELM / "dra-driver-nvidia-gpu-0.4.1.tgz").is_file()


@pytest.mark.parametrize("stack", [*STACKS, *DRA_STACKS])
def test_the_driver_is_installed_exactly_where_a_pool_uses_dra(stack):
    wanted = any(p.gpu_allocation == "dra" for p in config(stack).gpu_pools)
    found = release(stack)
    assert len(found) == (1 if wanted else 0)
    if wanted:
        inputs = found[0].inputs
        assert (inputs["name"], inputs["namespace"], inputs["version"]) == (
            "dra-driver-nvidia-gpu",
            NAMESPACE,
            "0.4.1",
        )


@pytest.mark.parametrize("stack", DRA_STACKS)
def test_every_value_the_platform_sets_is_a_key_of_the_chart(stack):
    (found,) = release(stack)
    minor = config(stack).cluster.kubernetes_version
    assert (
        chart_values.unknown_keys("dra-driver-nvidia-gpu", "0.4.1", found.inputs["values"], minor)
        == []
    )


@pytest.mark.parametrize("stack", DRA_STACKS)
def test_the_rendered_driver_is_valid_for_the_stacks_kubernetes(stack):
    assert_rendered_objects_valid(rendering(stack), config(stack).cluster.kubernetes_version)


@pytest.mark.parametrize("stack", DRA_STACKS)
def test_the_release_renders_gpu_allocation_only_from_the_pinned_image(stack):
    (found,) = [r for r in rendering(stack).releases if r.chart == "dra-driver-nvidia-gpu"]
    assert found.namespace == NAMESPACE
    kinds = {(o["kind"], o["metadata"]["name"]) for o in found.objects}
    # GPUs only, ComputeDomains off for now: no controller, no compute-domain classes.
    assert ("DaemonSet", KUBELET_PLUGIN) in kinds
    assert ("Deployment", "dra-driver-nvidia-gpu-controller") not in kinds
    classes = sorted(o["metadata"]["name"] for o in found.objects if o["kind"] == "DeviceClass")
    assert classes == ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"]
    (gpu_class,) = [o for o in found.objects if o["metadata"]["name"] == "gpu.nvidia.com"]
    # Kubernetes 1.34 and later serve resource.k8s.io/v1 (PINS.md table).
    assert gpu_class["apiVersion"] == "resource.k8s.io/v1"
    images = {
        c["image"]
        for o in found.objects
        if o["kind"] in ("DaemonSet", "Deployment")
        for c in [
            *o["spec"]["template"]["spec"]["containers"],
            *o["spec"]["template"]["spec"].get("initContainers", []),
        ]
    }
    assert images == {IMAGE}


def test_the_driver_root_follows_where_the_driver_comes_from():
    """`nvidiaDriverRoot` (values.yaml l. 23): `/` with the AL2023 NVIDIA AMI's driver;
    `/run/nvidia/driver` where the GPU Operator installs it (PINS.md)."""
    assert helm_values(dra_config(DRA_STACK), {})["nvidiaDriverRoot"] == "/"
    cfg = dra_config(DRA_EXISTING_STACK)
    assert cfg.gpu_operator.install_driver is False
    assert helm_values(cfg, {})["nvidiaDriverRoot"] == "/"
    raw = {k.split(":", 1)[1]: v for k, v in DRA_CONFIGS[DRA_EXISTING_STACK].items()}
    raw["gpu_operator"] = {**raw.get("gpu_operator", {}), "install_driver": True}
    driven = parse_config(raw, DRA_EXISTING_STACK)
    assert helm_values(driven, {})["nvidiaDriverRoot"] == "/run/nvidia/driver"


# ------------------------------------------------------------------ never both on one node


def device_plugin_runs(node) -> bool:
    labels = dict(node.labels)
    if not labels.get("nvidia.com/gpu.deploy.device-plugin"):
        labels["nvidia.com/gpu.deploy.device-plugin"] = "true"
    return all(labels.get(k) == v for k, v in DEVICE_PLUGIN_SELECTOR.items())


def kubelet_plugin_pod(stack: str) -> dict | None:
    for r in rendering(stack).releases:
        for obj in r.objects:
            if obj["kind"] == "DaemonSet" and obj["metadata"]["name"] == KUBELET_PLUGIN:
                return obj["spec"]["template"]["spec"]
    return None


@pytest.mark.parametrize("stack", [*STACKS, *DRA_STACKS])
def test_no_node_of_any_pool_runs_both_the_device_plugin_and_the_dra_driver(stack):
    cfg = config(stack)
    resources = [{"type": r.type, "inputs": r.inputs} for r in plan(stack).resources]
    objects = [o for _, o in rendering(stack).objects()]
    nodes = pool_nodes(cfg, resources, objects)
    assert nodes
    pod = kubelet_plugin_pod(stack)
    allocation = {p.name: p.gpu_allocation for p in cfg.gpu_pools}
    for node in nodes:
        dra = pod is not None and misfit(pod, node) is None
        plugin = device_plugin_runs(node)
        assert not (dra and plugin), f"{stack}: {node.name} runs both"
        if allocation[node.pool] == "dra":
            assert not plugin, f"{stack}: the device plugin runs on {node.name} of a DRA pool"
            why = "no kubelet-plugin DaemonSet" if pod is None else misfit(pod, node)
            assert dra, f"{stack}: {node.name} of a DRA pool gets no kubelet plugin: {why}"
        else:
            assert not dra, f"{stack}: {node.name} of a device-plugin pool gets the DRA driver"


# ------------------------------------------------------------------------------ refusals

DRA_GROUP = {"name": "a100", "instance_types": ["p4d.24xlarge"], "gpu_allocation": "dra"}
FROM_ONE = {"min_size": 1, "max_size": 2}
ONPREM_POOL = {
    "name": "a100",
    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
    "gpu_model": "A100",
    "gpu_memory_gib": 80,
    "gpus_per_node": 8,
    "nodes": 2,
    "gpu_allocation": "dra",
}
EXISTING_SECTION = {"name": "lab", "kubeconfig_path": "~/.kube/lab.yaml"}
BAD = [
    pytest.param(
        aws(gpu_node_groups=[{**DRA_GROUP, "scaling": {"min_size": 0, "max_size": 2}}]),
        f"{NS}:gpu_node_groups[0].scaling.min_size",
        "TemplateNodeInfo",
        "min_size 1 or more",
        id="scale-from-zero",
    ),
    pytest.param(
        aws(
            gpu_node_groups=[
                {
                    **DRA_GROUP,
                    "scaling": FROM_ONE,
                    "gpu_sharing": {"mode": "time-slicing", "replicas": 2},
                }
            ]
        ),
        f"{NS}:gpu_node_groups[0].gpu_sharing.mode",
        "TimeSlicingSettings",
        "valid on a DRA pool: none, mig",
        id="time-slicing",
    ),
    pytest.param(
        existing(
            existing={
                **EXISTING_SECTION,
                "gpu_pools": [{**ONPREM_POOL, "gpu_sharing": {"mode": "mps", "replicas": 2}}],
            },
            cluster={"kubernetes_version": "1.35"},
        ),
        f"{NS}:existing.gpu_pools[0].gpu_sharing.mode",
        "MPSSupport",
        "valid on a DRA pool: none, mig",
        id="mps",
    ),
    pytest.param(
        aws(
            gpu_node_groups=[{**DRA_GROUP, "scaling": FROM_ONE}],
            cluster={"kubernetes_version": "1.33"},
        ),
        f"{NS}:gpu_node_groups[0].gpu_allocation",
        "Kubernetes 1.33",
        "set cluster.kubernetes_version to 1.34 or later",
        id="eks-below-1.34",
    ),
    pytest.param(
        existing(
            existing={**EXISTING_SECTION, "gpu_pools": [ONPREM_POOL]},
            cluster={"kubernetes_version": "1.33"},
        ),
        f"{NS}:existing.gpu_pools[0].gpu_allocation",
        "Kubernetes 1.33",
        "valid: Kubernetes 1.34 or later",
        id="kueue-below-1.34",
    ),
    pytest.param(
        existing(
            existing={
                **EXISTING_SECTION,
                "gpu_pools": [
                    {
                        **ONPREM_POOL,
                        "gpu_allocation": "device_plugin",
                        "node_selector": {"nvidia.com/gpu.deploy.device-plugin": "false"},
                    }
                ],
            },
        ),
        f"{NS}:existing.gpu_pools[0].node_selector",
        "nvidia.com/gpu.deploy.device-plugin=false",
        "set gpu_allocation",
        id="device-plugin-pool-on-switched-off-nodes",
    ),
    pytest.param(
        aws(
            gpu_node_groups=[
                {
                    **DRA_GROUP,
                    "scaling": FROM_ONE,
                    "labels": {"nvidia.com/gpu.deploy.device-plugin": "true"},
                }
            ]
        ),
        f"{NS}:gpu_node_groups[0].labels",
        "nvidia.com/gpu.deploy.device-plugin",
        "set gpu_allocation",
        id="hand-set-switch",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_what_the_driver_cannot_serve_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_with_a_mirror_every_driver_image_comes_from_it():
    mirror = "registry.internal.example:5000/mirror"
    values = mirrored_values(
        "dra-driver-nvidia-gpu", helm_values(dra_config(DRA_STACK), {}), mirror
    )
    templates, _ = render_chart(
        SHARED_HELM / "dra-driver-nvidia-gpu-0.4.1.tgz",
        json.dumps(values, sort_keys=True),
        "dra-driver-nvidia-gpu",
        NAMESPACE,
        "1.36",
        (),
    )
    pods = [
        doc["spec"]["template"]["spec"]
        for _, text in templates
        for doc in yaml.safe_load_all(text)
        if doc and doc["kind"] in ("DaemonSet", "Deployment")
    ]
    assert pods
    images = {c["image"] for p in pods for c in [*p["containers"], *p.get("initContainers", [])]}
    assert images == {f"{mirror}/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"}


# A MIG device as the driver's kubelet plugin publishes it at v0.4.1: attributes without a domain
# (cmd/gpu-kubelet-plugin/mig.go CommonAttributesMig, and `uuid` in deviceinfo.go
# MigDeviceInfo.GetDevice), which "are assumed to be part of the driver's domain"
# (vendor/k8s.io/api/resource/v1/types.go QualifiedName), so CEL reads them under
# device.attributes["gpu.nvidia.com"]. A whole GPU has `type: gpu` and no `profile`
# (deviceinfo.go GpuInfo.Attributes). The profile is go-nvlib's MigProfile.String(), as in the
# driver's demo selector `profile == '1g.12gb'` (demo/specs/extended-resources/mig-1g-12gb.yaml).
DRIVER_DOMAIN = "gpu.nvidia.com"
MIG_ATTRIBUTES = {
    "type", "parentUUID", "profile", "productName", "brand", "architecture",
    "cudaComputeCapability", "driverVersion", "cudaDriverVersion", "addressingMode", "uuid",
}  # fmt: skip
# The balanced profiles of an H100 80GB (the DRA fixture's h100-mig pool, strategy mixed).
H100_PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb")
_READ = re.compile(r'device\.attributes\["([^"]+)"\]\.(\w+)')


def published(device_type: str, profile: str | None = None) -> dict:
    attributes = {"type": device_type, "productName": "NVIDIA H100 80GB HBM3", "brand": "Nvidia"}
    if profile is not None:
        attributes["profile"] = profile
    return {"driver": DRIVER_DOMAIN, "attributes": {DRIVER_DOMAIN: attributes}}


def selects(expression: str, device: dict) -> bool:
    result = cel.NewEnv(variables={"device": cel.Type.DYN}).compile(expression)
    value = result.eval(data={"device": device})
    assert value.type() == cel.Type.BOOL, (expression, value.value())
    return value.value()


def test_each_mig_device_class_selects_the_drivers_devices_of_its_profile_and_no_other():
    """The platform's per-profile DeviceClasses read only attributes the driver publishes, in its
    domain, and select exactly the MIG devices of their profile: not another profile's, not a
    whole GPU (where `profile` is absent, `type` decides first)."""
    classes = {
        o["metadata"]["name"]: o["spec"]["selectors"][0]["cel"]["expression"]
        for o in dra_plan(DRA_STACK).kubernetes_objects()
        if o["kind"] == "DeviceClass"
    }
    assert sorted(classes) == [f"mig-{p}.gpu-platform" for p in H100_PROFILES]
    for name, expression in classes.items():
        assert {(d, a) for d, a in _READ.findall(expression)} <= {
            (DRIVER_DOMAIN, a) for a in MIG_ATTRIBUTES
        }, expression
        assert [p for p in H100_PROFILES if selects(expression, published("mig", p))] == [
            name.removeprefix("mig-").removesuffix(".gpu-platform")
        ]
        assert not selects(expression, published("gpu"))
