"""Brownfield on-prem (issue 26): an existing cluster that already runs the GPU Operator,
kube-prometheus-stack, KEDA, Kueue or JobSet uses that one (existing.addons.<add-on>: existing). The
platform then declares no Helm release for it, still declares what it owns on top, and the plan
names the CRDs and settings it relies on, with the kubectl command to confirm each."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from components.scheduling.kueue import manager_config, uncounted_resources
from components.scheduling.training_job import render
from infra.existing_addons import NEEDS, existing_addon_report
from jobs.team import TeamJob, plan_job
from model.config import ConfigError, PlatformConfig
from model.config.charts import installed_charts
from model.config.onprem import EXISTING_ADDONS
from plan.cli import plan_stack
from plan.model import Plan
from plan.render import render_plan
from tests.conftest import (
    SHARED_HELM,
    STACKS,
    make_project,
    planned,
    stack_config,
    stack_file_config,
)
from tests.controllers.kueue_admission import Kueue, admission_problems
from tests.controllers.references import Cluster, Placed, each_job, problems
from tests.helpers.crds import CRDS
from tests.helpers.rendered_jobs import burst_jobs, platform_jobs, submitted_jobs, workers_of
from tests.helpers.sharing_stacks import teams_config

RELEASE = "kubernetes:helm.sh/v3:Release"
IMAGE = "registry.example.com/team/train@sha256:" + "e" * 64
# The chart each switch replaces (infra/versions.CHARTS keys, which name the charts).
CHART = {
    "gpu_operator": "gpu-operator",
    "network_operator": "network-operator",
    "kube_prometheus_stack": "kube-prometheus-stack",
    "keda": "keda",
    "kueue": "kueue",
    "jobset": "jobset",
}
# What the platform still declares on top of each add-on, by resource type.
ON_TOP = {
    "gpu_operator": (),
    # onprem's RoCE pool and Ceph Multus networks: their nv-ipam pools and the RDMA network.
    "network_operator": (
        "kubernetes:nv-ipam.nvidia.com/v1alpha1:IPPool",
        "kubernetes:k8s.cni.cncf.io/v1:NetworkAttachmentDefinition",
    ),
    "kube_prometheus_stack": (
        "kubernetes:monitoring.coreos.com/v1:PodMonitor",
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
    ),
    "keda": (),
    "kueue": (
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
        "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass",
        "kubernetes:scheduling.k8s.io/v1:PriorityClass",
    ),
    # The JobSets are the jobs' own (`jobs submit`, the self-test's), not the platform's.
    "jobset": (),
}
# Literals from the pinned upstreams that the report must name for the onprem stack: the
# Kueue Configuration keys components/kueue.manager_config sets (Kueue v0.19.2
# apis/config/v1beta2/configuration_types.go), kube-prometheus-stack 88.5.3's values.yaml
# `prometheus.prometheusSpec.serviceMonitorSelectorNilUsesHelmValues`, the GPU Operator
# ClusterPolicy's `dcgmExporter.serviceMonitor.honorLabels` (shared/crds/nvidia.com), and the
# APIService KEDA 2.20.2's chart registers.
SETTINGS = {
    # ... and its `dcgm.enabled` (the standalone host engine, gpu-operator v26.7.0 values.yaml).
    "gpu_operator": (
        "honorLabels: false",
        "internalTrafficPolicy: Local",
        "driver.rdma.enabled",
        "dcgm.enabled: true",
    ),
    # network-operator 26.4.1's NicClusterPolicy CRD: spec.secondaryNetwork.multus, spec.nvIpam,
    # spec.rdmaSharedDevicePlugin (shared/crds/mellanox.com); the plugin's resource is the
    # stack's fabric.resource_name under the `rdma/` prefix.
    "network_operator": (
        "secondaryNetwork.multus",
        "nvIpam",
        "rdmaSharedDevicePlugin advertises rdma/rdma_shared_device",
    ),
    "kube_prometheus_stack": (
        "serviceMonitorSelectorNilUsesHelmValues",
        "podMonitorSelectorNilUsesHelmValues",
        "ruleSelectorNilUsesHelmValues",
        "--metric-labels-allowlist=nodes=[",
    ),
    "keda": ("v1beta1.external.metrics.k8s.io",),
    # JobSet v0.12.0: the image tag, the version Kueue 0.19.2's go.mod requires
    # (shared/PINS.md), and its chart's `prometheus.enable`.
    "jobset": ("v0.12.0", "prometheus.enable: true"),
    "kueue": (
        "integrations.frameworks lists batch/job, jobset.x-k8s.io/jobset",
        "metrics.enableClusterQueueResources: true",
        "feature gate TopologyAwareScheduling",
        "feature gate MultiKueue",
    ),
}
CRD_NAMES = {
    "gpu_operator": ("nvidia.com/v1 ClusterPolicy",),
    "network_operator": (
        "mellanox.com/v1alpha1 NicClusterPolicy",
        "nv-ipam.nvidia.com/v1alpha1 IPPool",
        "k8s.cni.cncf.io/v1 NetworkAttachmentDefinition",
    ),
    "kube_prometheus_stack": (
        "monitoring.coreos.com/v1 ServiceMonitor",
        "monitoring.coreos.com/v1 PodMonitor",
        "monitoring.coreos.com/v1 PrometheusRule",
    ),
    "keda": ("keda.sh/v1alpha1 ScaledObject",),
    "jobset": ("jobset.x-k8s.io/v1alpha2 JobSet",),
    "kueue": (
        "kueue.x-k8s.io/v1beta2 ClusterQueue",
        "kueue.x-k8s.io/v1beta2 LocalQueue",
        "kueue.x-k8s.io/v1beta2 MultiKueueConfig",
    ),
}
# The onprem stack has no pool the DRA driver serves, so it leaves existing.addons.dra_driver
# unused (tests/program/test_existing_dra_driver.py takes a stack that has).
ONPREM_ADDONS = tuple(a for a in EXISTING_ADDONS if a != "dra_driver")
CASES = [(a,) for a in ONPREM_ADDONS] + [ONPREM_ADDONS]


@functools.cache
def brownfield_root(tmp_root, addons: tuple[str, ...]) -> Path:
    onprem = stack_file_config("onprem")
    onprem["gpu-platform:existing"]["addons"] = {a: "existing" for a in addons}
    folder = tmp_root / "-".join(addons)
    folder.mkdir(exist_ok=True)
    root = make_project(folder, {"onprem": onprem, "burst": stack_file_config("burst")})
    return root


@functools.cache
def brownfield(tmp_root, addons: tuple[str, ...]) -> Plan:
    return plan_stack("onprem", brownfield_root(tmp_root, addons))


@functools.cache
def brownfield_config(tmp_root, addons: tuple[str, ...]) -> PlatformConfig:
    return stack_config("onprem", brownfield_root(tmp_root, addons))


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory):
    return tmp_path_factory.mktemp("brownfield")


def charts(plan: Plan) -> set[str]:
    return {r.inputs["chart"].rsplit("/", 1)[-1] for r in plan.of_type(RELEASE)}


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_installs_every_add_on_it_runs(stack):
    """The default is `install`: a shipped stack declares the release of each add-on it runs
    and reports no existing add-on."""
    plan = planned(stack)
    assert {"gpu-operator", "kube-prometheus-stack"} <= charts(plan)
    assert "existing_addons" not in plan.outputs


@pytest.mark.parametrize("addons", CASES, ids="+".join)
def test_an_existing_add_on_gets_no_release_and_keeps_what_the_platform_owns(tmp_root, addons):
    plan = brownfield(tmp_root, addons)
    installed = charts(plan)
    for addon in ONPREM_ADDONS:
        assert (CHART[addon] in installed) == (addon not in addons), (addon, installed)
    for addon in addons:
        for token in ON_TOP[addon]:
            assert plan.of_type(token), f"{addon}: existing, but no {token} on top of it"
    # The dashboards Grafana's sidecar loads stay the platform's.
    dashboards = [
        r
        for r in plan.of_type("kubernetes:core/v1:ConfigMap")
        if r.name.startswith("onprem-dashboard-")
    ]
    assert dashboards
    if "kube_prometheus_stack" in addons:
        assert "grafana_admin_password" not in plan.outputs
    # The cluster's kube-prometheus-stack runs in namespaces.monitoring, which it already has:
    # `pulumi up` could not create it again.
    names = [r.inputs["metadata"]["name"] for r in plan.of_type("kubernetes:core/v1:Namespace")]
    assert ("monitoring" in names) == ("kube_prometheus_stack" not in addons)
    assert ("gpu-operator" in names) == ("gpu_operator" not in addons)
    assert ("nvidia-network-operator" in names) == ("network_operator" not in addons)
    # The charts the Kubernetes minor's floor reads (model/config/kubernetes_minor.py) are the
    # releases declared: a chart the cluster runs no longer constrains it.
    assert set(installed_charts(brownfield_config(tmp_root, addons))) == installed


@pytest.mark.parametrize("addons", CASES, ids="+".join)
def test_the_plan_names_the_crds_and_settings_each_existing_add_on_needs(tmp_root, addons):
    plan = brownfield(tmp_root, addons)
    report = plan.outputs["existing_addons"]
    assert sorted(report) == sorted(addons)
    for addon in addons:
        needs = report[addon]
        for crd in CRD_NAMES[addon]:
            assert crd in needs["needs_crds"], (addon, crd)
            assert needs["needs_crds"][crd].startswith("kubectl get crd ")
        text = json.dumps(needs["needs_settings"])
        for setting in SETTINGS[addon]:
            assert setting in text, (addon, setting)
        assert all(cmd.startswith("kubectl ") for cmd in needs["needs_settings"].values())
        (warning,) = [
            w for w in plan.warnings if w.startswith(f"gpu-platform:existing.addons.{addon}:")
        ]
        assert f"uses existing {addon}: needs CRDs " in warning
        assert "needs settings " in warning


def test_every_crd_the_report_names_is_one_pinned_in_shared_crds(tmp_root):
    """A CRD named in the report is one whose schema the platform's objects are validated
    against (../shared/crds/<group>/<Kind>.<version>.json)."""
    report = brownfield(tmp_root, ONPREM_ADDONS).outputs["existing_addons"]
    named = {crd for needs in report.values() for crd in needs["needs_crds"]}
    pinned = {
        f"{path.parent.name}/{path.stem.split('.')[1]} {path.stem.split('.')[0]}"
        for path in CRDS.glob("*/*.json")
    }
    assert named <= pinned, named - pinned


def test_the_gpu_operator_switch_silences_the_install_driver_warning(tmp_root):
    """gpu_operator.install_driver configures only a release the platform installs: with the
    cluster's operator, GPUDirect RDMA is its driver.rdma setting, named in the report."""
    warnings = brownfield(tmp_root, ("gpu_operator",)).warnings
    assert not [w for w in warnings if w.startswith("gpu-platform:gpu_operator.install_driver")]
    assert [
        w
        for w in planned("onprem").warnings
        if w.startswith("gpu-platform:gpu_operator.install_driver")
    ]


@pytest.mark.parametrize("addons", CASES, ids="+".join)
def test_what_the_platform_declares_on_existing_add_ons_is_what_its_pods_name(tmp_root, addons):
    """The references model (tests/controllers/references.py) over a brownfield stack: the
    self-test's runs and a team's job find every ConfigMap, Secret, claim, account, priority,
    network and queue they name on the cluster, the burst worker as it is."""
    plan = brownfield(tmp_root, addons)
    cfg = brownfield_config(tmp_root, addons)
    # The cluster's own kube-prometheus-stack runs in namespaces.monitoring, which it has.
    had = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cfg.namespaces.monitoring}}
    ] * ("kube_prometheus_stack" in addons)
    on = {
        "onprem": Cluster("onprem", [*plan.kubernetes_objects(), *had]),
        "burst": Cluster("burst", planned("burst").kubernetes_objects()),
    }
    workers = {w.name: w.stack.rsplit("/", 1)[-1] for w in cfg.multikueue.workers}
    jobs = list(each_job(plan.kubernetes_objects()))
    assert jobs
    spec = plan_job(
        cfg,
        TeamJob(IMAGE, ["train.py"], nodes=2, pool="a100", team=cfg.namespaces.training),
        {name: stack_config(stack) for name, stack in workers.items()},
    )
    jobs += render(spec)
    found = [p for obj in jobs for p in problems(Placed(obj, "onprem"), on, workers)]
    assert found == []


def test_aws_takes_no_existing_add_on(tmp_path):
    """On AWS the platform makes the cluster and installs every add-on itself: the switch sits
    under `existing`, which an AWS stack is refused with its key path."""
    dev = stack_file_config("dev")
    existing = stack_file_config("onprem")["gpu-platform:existing"]
    dev["gpu-platform:existing"] = {**existing, "addons": {"kueue": "existing"}}
    with pytest.raises(ConfigError) as error:
        plan_stack("dev", make_project(tmp_path, {"dev": dev}))
    assert error.value.problems == ["gpu-platform:existing: only valid with provider existing"]


def test_the_clusters_kueue_configured_as_the_report_says_admits_the_platforms_jobs(tmp_root):
    """The admission model (tests/controllers/kueue_admission.py) over the queues the platform
    declares on an existing Kueue, run with the Configuration the report asks the admin to
    confirm (components/kueue.manager_config: frameworks, uncounted resources, and the
    namespaces the report lists): the self-test's JobSet and a team's are admitted."""
    addons = ("kueue",)
    plan, cfg = brownfield(tmp_root, addons), brownfield_config(tmp_root, addons)
    # The namespaces the report asks the admin to confirm the selector takes, read back
    # from its words: Kueue leaves a job in any other namespace suspended.
    (selects,) = [
        s for s in existing_addon_report(cfg)["kueue"]["needs_settings"] if "NamespaceSelector" in s
    ]
    namespaces = re.search(r"\(([^)]*)\)", selects).group(1).split(", ")
    config = manager_config(uncounted_resources(cfg), namespaces)
    kueue = Kueue.of(plan.kubernetes_objects(), config, windows="open")
    spec = plan_job(
        cfg, TeamJob(IMAGE, ["train.py"], nodes=2, pool="a100", team=cfg.namespaces.training)
    )
    jobs = [o for o in plan.kubernetes_objects() if o["kind"] == "JobSet"] + render(spec)
    assert len(jobs) >= 2
    assert {j["metadata"]["name"]: admission_problems(kueue, j) for j in jobs} == {
        j["metadata"]["name"]: [] for j in jobs
    }
    # The setting the report names matters: a Kueue without the JobSet integration leaves
    # every one of them suspended.
    without = manager_config(uncounted_resources(cfg), namespaces)
    without["integrations"]["frameworks"] = ["batch/job"]
    other = Kueue.of(plan.kubernetes_objects(), without, windows="open")
    assert all(admission_problems(other, j) for j in jobs)


def test_the_offline_render_knows_the_crds_the_clusters_own_add_ons_serve(tmp_root):
    """With the cluster's kube-prometheus-stack the plan declares no ServiceMonitor CRD, but the
    cluster serves it (the report makes the admin confirm it): the render knows it
    (plan/render.existing_addon_apis), so JobSet's ServiceMonitor, whose template fails the
    render without that API (templates/prometheus/monitor.yaml at v0.12.0), renders."""
    rendering = render_plan(brownfield(tmp_root, ("kube_prometheus_stack",)), (SHARED_HELM,))
    assert "monitoring.coreos.com/v1/ServiceMonitor" in rendering.api_versions
    (jobset,) = [r for r in rendering.releases if r.chart == "jobset"]
    assert "ServiceMonitor" in {o["kind"] for o in jobset.objects}


# The oldest JobSet CRD the check admits: its CRD check asks only that v1alpha2 be served, which
# kubernetes-sigs/jobset serves from v0.2.0 (tests/controllers/data names the file and commit).
OLDEST_JOBSET_FIELDS = Path(__file__).parents[1] / "controllers/data/jobset-v0.2.0-fields.txt"
_ASKED = re.compile(r"openAPIV3Schema((?:\.properties\.\w+|\.items)+)\.type")


FieldPath = tuple[str, ...]


def _segments(path: str) -> FieldPath:
    """`a.b[].c` as ("a", "b", "[]", "c")."""
    found: list[str] = []
    for name in path.split("."):
        found += [name.removesuffix("[]"), "[]"] if name.endswith("[]") else [name]
    return tuple(found)


@functools.cache
def _oldest_fields() -> frozenset[FieldPath]:
    lines = OLDEST_JOBSET_FIELDS.read_text().splitlines()
    return frozenset(_segments(line) for line in lines if not line.startswith("#"))


def _field_paths(value, path: FieldPath = ()):
    """Every field path of a rendered object, a map's key (a label, a resource name) as `*`
    where the oldest schema makes its parent a map."""
    if isinstance(value, dict):
        for key, v in value.items():
            here = (*path, "*" if (*path, "*") in _oldest_fields() else key)
            yield here
            yield from _field_paths(v, here)
    elif isinstance(value, list):
        for v in value:
            yield from _field_paths(v, (*path, "[]"))


def _declared_by_oldest(path: FieldPath) -> bool:
    known = _oldest_fields()
    return path in known or any((*path[:i], "**") in known for i in range(len(path)))


@pytest.mark.parametrize("stack", STACKS)
def test_the_jobset_check_asks_the_crd_for_every_field_an_older_one_prunes(stack):
    """A field the platform's JobSets set that the oldest CRD the check admits lacks is pruned
    by that CRD without a word; the check must ask the installed CRD for it, not the
    controller's image (onJobFailureMessagePatterns, JobSet v0.10.0). Over every JobSet the
    platform and `python -m jobs` render on the stack, burst jobs included."""
    jobsets = [j for j in platform_jobs(stack) if j["kind"] == "JobSet"]
    jobsets += [j for _, j in submitted_jobs(stack)]
    jobsets += [j for worker in workers_of(stack) for _, j in burst_jobs(stack, worker)]
    assert jobsets, stack
    _, settings = NEEDS["jobset"](stack_config(stack))
    asked = {
        _segments(m.group(1).replace(".properties.", ".").replace(".items", "[]").lstrip("."))
        for command in dict(settings).values()
        for m in [_ASKED.search(command)]
        if m
    }
    pruned = {
        p
        for j in jobsets
        for p in _field_paths({"spec": j["spec"]})
        if p[-1] != "[]" and not _declared_by_oldest(p)
    }
    # Asking for a field asks for every field above it.
    unasked = {
        ".".join(p).replace(".[]", "[]") for p in pruned if not any(q[: len(p)] == p for q in asked)
    }
    assert pruned, f"{stack}: every field is in JobSet v0.2.0's CRD: the walk reads nothing"
    assert unasked == set(), f"{stack}: an older JobSet CRD prunes these; the check never asks"


# PrometheusSpec fields that change what the platform's monitors and rules see, as named in
# prometheus-operator v0.93.0 Documentation/api-reference/api.md: overrideHonorLabels ("enforces
# honorLabels:false for all ServiceMonitor, PodMonitor and ScrapeConfig objects"),
# ignoreNamespaceSelectors ("spec.namespaceSelector from all PodMonitor, ServiceMonitor and Probe
# objects will be ignored"), enforcedNamespaceLabel ("a label will be added to all metrics
# scraped ... and all vector selectors of PromQL expressions defined in PrometheusRule objects").
PROMETHEUS_SPEC_OVERRIDES = (
    "overrideHonorLabels",
    "ignoreNamespaceSelectors",
    "enforcedNamespaceLabel",
)


@pytest.mark.parametrize("field", PROMETHEUS_SPEC_OVERRIDES)
def test_the_prometheus_check_reads_each_override_from_the_clusters_prometheus(tmp_root, field):
    report = brownfield(tmp_root, ("kube_prometheus_stack",)).outputs["existing_addons"]
    settings = report["kube_prometheus_stack"]["needs_settings"]
    asked = [(s, c) for s, c in settings.items() if field in s]
    assert len(asked) == 1, f"the Prometheus check never asks for {field}: {list(settings)}"
    ((setting, command),) = asked
    assert command.startswith("kubectl get prometheuses.monitoring.coreos.com -A ")
    assert f"{{.spec.{field}}}" in command, command
    # The reason names what it breaks on this platform.
    assert any(w in setting for w in ("alerts", "PodMonitor", "dashboards")), setting


def test_a_clusters_own_kueue_is_asked_for_the_fair_sharing_the_stack_turns_on():
    """With Kueue from the cluster, the queues' weights and the LocalQueues' are read only if
    its Configuration turns fair sharing on: the report lists the keys as the platform's own
    Kueue gets them (components/kueue.fair_sharing_config), and the AdmissionFairSharing gate."""
    settings = dict(NEEDS["kueue"](teams_config())[1])
    assert (
        'fairSharing: {"preemptionStrategies": ["LessThanOrEqualToFinalShare", '
        '"LessThanInitialShare"]}'
    ) in settings
    assert 'admissionFairSharing: {"usageHalfLifeTime": "168h", "usageSamplingInterval": "5m"}' in (
        settings
    )
    assert "feature gate AdmissionFairSharing not turned off" in settings
    assert not any("airSharing" in text for text, _ in NEEDS["kueue"](stack_config("onprem"))[1])
