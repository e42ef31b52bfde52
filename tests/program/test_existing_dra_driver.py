"""A cluster that already runs its own NVIDIA DRA driver (issue 41 §1/§2,
existing.addons.dra_driver: existing): the platform declares no release and no namespace for it,
keeps its own MIG DeviceClasses, and the plan's existing_addons output names, each with its
kubectl command, everything the platform's renders take from the driver, the version they are
written for, and the check that no node gets GPUs from both the device plugin and the driver.

Literals: the chart's DeviceClasses `gpu.nvidia.com` and `compute-domain-default-channel.nvidia.com`
(dra-driver-nvidia-gpu v0.4.1 templates/deviceclass-gpu.yaml,
deviceclass-compute-domain-default-channel.yaml), the ComputeDomain CRD
`resource.nvidia.com/v1beta1` (../shared/crds/resource.nvidia.com/ComputeDomain.v1beta1.json), the
image tag v0.4.1 (../shared/PINS.md, "NVIDIA DRA driver for GPUs (0.4.1)")."""

from __future__ import annotations

import copy
import functools
import re
import shlex
import subprocess

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from infra.existing_addons import NEEDS
from model.config import PlatformConfig, parse_config
from model.config.charts import installed_charts
from plan.model import Plan
from tests.conftest import project_plan, project_rendered
from tests.controllers.dra import as_reconciled, device_class_names, device_requests
from tests.controllers.kueue_admission import manager_config_of
from tests.helpers.bad_stacks import NS
from tests.helpers.kubectl import stand_in_kubectl
from tests.helpers.rendered_jobs import platform_jobs_of
from tests.helpers.varied_stacks import (
    DRA_CONFIGS,
    DRA_EXISTING_STACK,
    GB200_CONFIG,
    GB200_STACK,
    gb200_config,
    gb200_plan,
)

IMAGE = "registry.example.com/team/train@sha256:" + "f" * 64
RELEASE = "kubernetes:helm.sh/v3:Release"
# The chart's release and namespace (../shared/PINS.md, "Objects").
CHART = "dra-driver-nvidia-gpu"
# What the driver's own objects are: its DeviceClasses' driver names and its CRDs' group
# (../shared/PINS.md, "DeviceClasses, drivers and what the chart renders").
DRIVERS = ("gpu.nvidia.com", "compute-domain.nvidia.com")
DRIVER_GROUP = "resource.nvidia.com"


def _config() -> dict:
    """The DRA fixture on an existing cluster with the cluster's own driver, and a DRA pool cut
    into MIG slices, so that the platform's MIG DeviceClasses select the driver's devices."""
    config = copy.deepcopy(DRA_CONFIGS[DRA_EXISTING_STACK])
    config[f"{NS}:existing"]["addons"] = {"dra_driver": "existing"}
    config[f"{NS}:existing"]["gpu_pools"].append(
        {
            "name": "a100-mig",
            "node_selector": {"gpu-platform/pool": "a100-mig"},
            "gpu_model": "A100",
            "gpu_memory_gib": 80,
            "gpus_per_node": 8,
            "nodes": 1,
            "gpu_allocation": "dra",
            "gpu_sharing": {"mode": "mig"},
        }
    )
    config[f"{NS}:scheduling"]["flavors"].append(
        {"pool": "a100-mig", "cpus_per_node": 256, "memory_gib_per_node": 2048}
    )
    config[f"{NS}:gpu_operator"] = {"mig_strategy": "mixed"}
    return config


STACK = "dra-own"
CONFIG = _config()


def config() -> PlatformConfig:
    return parse_config({k.split(":", 1)[1]: v for k, v in CONFIG.items()}, STACK)


def plan() -> Plan:
    return project_plan(STACK, {STACK: CONFIG})


@functools.cache
def renders(which: str) -> tuple[list[dict], list[dict], list[dict]]:
    """The objects the platform declares, those its Helm releases render, and its jobs: the
    platform's, and a 2-node job of a team on each pool the driver serves."""
    stacks = {STACK: CONFIG} if which == STACK else {GB200_STACK: GB200_CONFIG}
    cfg, planned = (config(), plan()) if which == STACK else (gb200_config(), gb200_plan())
    declared = list(planned.kubernetes_objects())
    released = [o for _, o in project_rendered(which, stacks).objects()]
    jobs = list(platform_jobs_of(cfg, planned))
    for pool in cfg.gpu_pools:
        if pool.gpu_allocation == "dra" or pool.nvlink_domain_nodes is not None:
            spec = spec_for_pool(
                cfg, pool.name, name="t", image=IMAGE, command=["t.py"], nodes=2,
                gpus_per_node=pool.gpus_per_node,
            )  # fmt: skip
            jobs += render(spec)
    return declared, released, jobs


def taken_from_driver(which: str) -> tuple[set[str], set[str], set[str]]:
    """What the platform's renders take from the driver: the DeviceClasses that its claim
    templates (a ComputeDomain's as its controller makes it) and Kueue's deviceClassMappings
    name and that it does not declare itself, its own DeviceClasses that select the driver's
    devices, and the driver's kinds it declares."""
    declared, released, jobs = renders(which)
    everything = as_reconciled([*declared, *released, *jobs])
    named = {
        name
        for o in everything
        if o["kind"] == "ResourceClaimTemplate"
        for request in device_requests(o)
        for name in device_class_names(request)
    }
    kueue = manager_config_of(released) or {}
    for mapping in (kueue.get("resources") or {}).get("deviceClassMappings") or []:
        named |= set(mapping["deviceClassNames"])
    selecting = {
        o["metadata"]["name"]
        for o in declared
        if o["kind"] == "DeviceClass"
        and any(
            f'device.driver == "{d}"' in selector["cel"]["expression"]
            for selector in o["spec"].get("selectors") or ()
            for d in DRIVERS
        )
    }
    kinds = {
        f"{o['apiVersion']} {o['kind']}"
        for o in everything
        if o["apiVersion"].split("/")[0] == DRIVER_GROUP
    }
    return named - selecting, selecting, kinds


def test_the_clusters_own_driver_gets_no_release_and_the_platforms_mig_classes_stay():
    planned = plan()
    releases = [r.inputs["chart"].rsplit("/", 1)[-1] for r in planned.of_type(RELEASE)]
    assert CHART not in releases
    namespaces = [
        r.inputs["metadata"]["name"] for r in planned.of_type("kubernetes:core/v1:Namespace")
    ]
    assert CHART not in namespaces
    assert CHART not in installed_charts(config())
    classes = sorted(
        o["metadata"]["name"] for o in planned.kubernetes_objects() if o["kind"] == "DeviceClass"
    )
    # The A100 80GB's balanced profiles (NVIDIA MIG User Guide, A100 80GB profiles).
    assert classes == [
        "mig-1g.10gb.gpu-platform",
        "mig-2g.20gb.gpu-platform",
        "mig-3g.40gb.gpu-platform",
    ]


def test_the_report_names_the_driver_the_plan_relies_on():
    report = plan().outputs["existing_addons"]
    assert list(report) == ["dra_driver"]
    needs = report["dra_driver"]
    assert needs["tested_with"] == "dra-driver-nvidia-gpu 0.4.1"
    settings = needs["needs_settings"]
    assert all(command.startswith("kubectl ") for command in settings.values())
    (version,) = [s for s in settings if s.startswith("the driver is ")]
    assert "v0.4.1 or later" in version
    (both,) = [s for s in settings if s.startswith("no node has GPUs from both")]
    assert settings[both].endswith("| awk '$2 > 0'  # must print nothing")
    assert "allocatable.nvidia\\.com/gpu" in settings[both]
    (warning,) = [
        w for w in plan().warnings if w.startswith("gpu-platform:existing.addons.dra_driver:")
    ]
    assert "uses existing dra_driver" in warning


def test_every_object_the_platforms_renders_take_from_the_driver_is_checked():
    """Over the existing-cluster DRA stack and, for the ComputeDomain half, the GB200 fixture
    (only an AWS pool has an NVLink domain, and AWS takes no existing add-on: the report's
    builder is run on its config): each DeviceClass the claims or Kueue name, each of the
    platform's own classes that select the driver's devices, each of the driver's kinds."""
    expected = {
        STACK: ({"gpu.nvidia.com"}, set()),
        GB200_STACK: (
            {"compute-domain-default-channel.nvidia.com"},
            {"resource.nvidia.com/v1beta1 ComputeDomain"},
        ),
    }
    for which, cfg in ((STACK, config()), (GB200_STACK, gb200_config())):
        named, selecting, kinds = taken_from_driver(which)
        assert (named, kinds) == expected[which], which
        crds, settings = NEEDS["dra_driver"](cfg)
        assert {str(c) for c in crds} == kinds, which
        text = dict(settings)
        for name in named:
            said = [s for s in text if s.startswith(f"DeviceClass {name} selects ")]
            assert len(said) == 1, (
                f"{which}: DeviceClass {name} is taken from the driver, unchecked"
            )
            assert text[said[0]] == (
                f"kubectl get deviceclass {name} "
                "-o jsonpath='{.spec.selectors[*].cel.expression}'"
            )
        for name in selecting:
            assert [s for s in text if name in s and "MIG devices" in s], (which, name)
        if which == STACK:
            assert selecting


def test_the_checks_read_the_driver_and_its_crd_as_pinned():
    """The CRD check asks for the version ../shared/crds holds, the MIG check for the attribute
    the driver publishes (`profile`, a string: cmd/gpu-kubelet-plugin/mig.go at v0.4.1)."""
    crds, _ = NEEDS["dra_driver"](gb200_config())
    (crd,) = crds
    assert crd.check() == (
        "kubectl get crd computedomains.resource.nvidia.com "
        "-o jsonpath='{.spec.versions[?(@.served==true)].name}'  # must list v1beta1"
    )
    _, settings = NEEDS["dra_driver"](config())
    (mig,) = [c for s, c in settings if "MIG devices" in s]
    assert re.search(r"\.attributes\.profile\.string", mig)


def test_the_charts_the_stack_installs_are_the_releases_it_declares():
    """The GB200 stack installs the driver for its ComputeDomains alone (no DRA pool): the charts
    the Kubernetes minor's floor reads (model/config/charts.installed_charts) include it."""
    released = {r.inputs["chart"].rsplit("/", 1)[-1] for r in gb200_plan().of_type(RELEASE)}
    assert CHART in released
    assert set(installed_charts(gb200_config())) == released


@pytest.mark.parametrize(
    ("allocatable", "printed"),
    [({"n1": "", "n2": ""}, ""), ({"n1": "8", "n2": ""}, "n1 8\n")],
    ids=["device-plugin-elsewhere", "both-on-n1"],
)
def test_the_never_both_check_runs_as_printed_and_names_a_node_served_twice(
    tmp_path, monkeypatch, allocatable, printed
):
    """The check run by bash as the plan prints it, kubectl a stand-in answering as kubectl's
    jsonpath prints (one line per item): the driver serves GPUs on n1 and n2; a node that
    also advertises nvidia.com/gpu (the device plugin's resource) is printed, else nothing."""
    kubectl = stand_in_kubectl(tmp_path / "bin", monkeypatch)
    _, settings = NEEDS["dra_driver"](config())
    (command,) = [c for s, c in settings if s.startswith("no node has GPUs from both")]
    slices = shlex.split(command.split(" | ")[0])
    kubectl.answer(*slices[1:], stdout="n1\nn2\n")
    listing = shlex.split(command.split(" | xargs -r ")[1].split(" | ")[0])
    kubectl.answer(
        *listing[1:], "n1", "n2", stdout="".join(f"{n} {a}\n" for n, a in allocatable.items())
    )
    run = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout, run.stderr) == (0, printed, "")
