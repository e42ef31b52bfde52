"""Brownfield without surprises (issue 38): on an existing cluster the platform takes its shared
storage and its kube-prometheus-stack from what the stack says the cluster has, and the Network
Operator may be the cluster's own.

The classes:
- every claim a pod template mounts (what the plan declares, the self-test, what `python -m jobs`
  renders) is one the plan declares in that namespace, bound through a StorageClass the plan
  declares or the stack names, or the admin's claim the stack names, in a namespace the plan
  tells the admin to make it in; and a stack where nothing would provide it is refused;
- every Prometheus address and Grafana data source anything reads is the stack's, and the
  brownfield stack's objects name no address of the platform's own release.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from components.control.namespaces import job_namespaces
from components.scheduling.training_job import render
from jobs.status import prometheus_proxy
from jobs.team import TeamJob, plan_job
from model.config import PlatformConfig
from plan.model import Plan
from tests.conftest import STACKS, planned, stack_config
from tests.controllers.references import Cluster, Ref, claim_problems, missing
from tests.helpers.bad_stacks import assert_refused, existing
from tests.helpers.brownfield_stacks import (
    BROWNFIELD_STACKS,
    DATASOURCE_UID,
    brownfield_config,
    brownfield_plan,
)
from tests.helpers.plan_objects import kinds
from tests.helpers.rendered_jobs import platform_jobs_of, submitted_jobs_of
from tests.helpers.shared_data import mounted_claims

RELEASE = "kubernetes:helm.sh/v3:Release"
IMAGE = "registry.example.com/team/train@sha256:" + "e" * 64
# Every stack this file sweeps: the shipped ones and the brownfield fixtures.
SWEPT = [*STACKS, *BROWNFIELD_STACKS]
# The brownfield stack's namespaces jobs run in: the training namespace, its team's, the
# self-test's (tests/helpers/brownfield_stacks.py; NamespaceSettings defaults).
BROWNFIELD_JOB_NAMESPACES = ["training", "vision", "gpu-platform-selftest"]
# Where the brownfield stack's Prometheus answers: kube-prometheus-stack 88.5.3 released as
# `monitoring` in `observability`, Service port moved to 9095 (tests/helpers/brownfield_stacks.py
# cites the chart's naming).
BROWNFIELD_PROMETHEUS = "http://monitoring-kube-prometheus-prometheus.observability.svc:9095"
# The platform's own release, kube-prometheus-stack in `monitoring` (every shipped stack).
RELEASE_PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def config_of(stack: str) -> PlatformConfig:
    return brownfield_config(stack) if stack in BROWNFIELD_STACKS else stack_config(stack)


def plan_of(stack: str) -> Plan:
    return brownfield_plan(stack) if stack in BROWNFIELD_STACKS else planned(stack)


def pod_holders(stack: str) -> list[tuple[str, dict[str, Any]]]:
    """(what, object) of everything that holds a pod template: what the plan declares, the
    self-test's runs as the builders render them where the stack runs the self-test, and what
    `python -m jobs` renders."""
    cfg, plan = config_of(stack), plan_of(stack)
    found = [(f"plan {o['kind']} {o['metadata']['name']}", o) for o in plan.kubernetes_objects()]
    found += [
        (f"platform {j['kind']} {j['metadata']['name']}", j)
        for j in platform_jobs_of(cfg, plan)
        if j["metadata"]["namespace"] in job_namespaces(cfg)
    ]
    found += submitted_jobs_of(cfg)
    return found


def the_admins(stack: str) -> list[dict[str, Any]]:
    """What the stack says the cluster already has, made as the plan tells the admin: the
    StorageClass storage.shared_data names, and the claim it names in every namespace the
    plan's storage_shared_data output lists."""
    shared = config_of(stack).storage.shared_data
    found: list[dict[str, Any]] = []
    if shared is not None and shared.storage_class is not None:
        found.append({"kind": "StorageClass", "metadata": {"name": shared.storage_class}})
    report = plan_of(stack).outputs.get("storage_shared_data")
    if report is not None:
        found += [
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": report["existing_claim"], "namespace": ns},
                "spec": {"accessModes": ["ReadWriteMany"]},
            }
            for ns in report["must_exist_in"]
        ]
    return found


# ------------------------------------------------------------------- storage: the class


@pytest.mark.parametrize("stack", SWEPT)
def test_every_claim_a_pod_mounts_is_declared_or_the_stacks_own(stack):
    """The references model's claim rule (tests/controllers/references.py: a missing claim
    leaves the pod Pending) over every pod template of the stack, against what the plan
    declares and what the stack says the cluster has."""
    cluster = Cluster(stack, [*plan_of(stack).kubernetes_objects(), *the_admins(stack)])
    found, mounts = [], 0
    for what, obj in pod_holders(stack):
        namespace = obj["metadata"].get("namespace")
        refs = [
            Ref("PersistentVolumeClaim", namespace, claim, what) for claim in mounted_claims(obj)
        ]
        mounts += len(refs)
        found += missing(refs, cluster) + claim_problems(refs, cluster)
    assert mounts, f"{stack}: no pod template mounts a claim: the sweep read nothing"
    assert found == []


def test_an_existing_cluster_where_nothing_provides_shared_data_is_refused(
    tmp_path, monkeypatch, capsys
):
    """Without Ceph or storage the cluster has, every job's pods would stay Pending."""
    assert_refused(
        tmp_path,
        monkeypatch,
        capsys,
        existing(storage={}),
        "gpu-platform:storage",
        "nothing provides the shared-data claim",
        "storage.shared_data.existing_claim",
    )


# ------------------------------------------------------------------ Prometheus: the class

# An in-cluster Prometheus address: a Service whose name holds `prometheus` (the Pushgateway's
# is another service).
PROMETHEUS_URL = re.compile(
    r"http://(?!prometheus-pushgateway\.)[a-z0-9-]*prometheus[a-z0-9.-]*:\d+"
)


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def everything_read(stack: str) -> list[Any]:
    """What reaches the cluster and the user: every object the plan declares (Helm values
    included), every job rendered, the plan's outputs and warnings."""
    plan = plan_of(stack)
    return [
        [r.inputs for r in plan.resources],
        [o for _, o in pod_holders(stack)],
        plan.outputs,
        plan.warnings,
    ]


@pytest.mark.parametrize("stack", SWEPT)
def test_every_prometheus_address_read_is_the_stacks(stack):
    """KEDA's triggers, the self-test, the plan's monitoring output, the existing-add-on checks
    and `python -m jobs status` all reach the one Prometheus the stack has."""
    expected = BROWNFIELD_PROMETHEUS if stack in BROWNFIELD_STACKS else RELEASE_PROMETHEUS
    found = {m for s in strings(everything_read(stack)) for m in PROMETHEUS_URL.findall(s)}
    assert found == {expected}
    namespace, service = prometheus_proxy(config_of(stack))
    assert f"http://{service.split(':')[0]}.{namespace}.svc:{service.split(':')[1]}" == expected


@pytest.mark.parametrize("stack", SWEPT)
def test_every_dashboard_panel_reads_the_stacks_grafana_data_source(stack):
    # kube-prometheus-stack 88.5.3 values.yaml, grafana.sidecar.datasources.uid: prometheus;
    # the brownfield cluster's Grafana names it otherwise.
    expected = DATASOURCE_UID if stack in BROWNFIELD_STACKS else "prometheus"
    uids = set()
    for board in kinds(plan_of(stack), "ConfigMap"):
        if board["metadata"].get("labels", {}).get("grafana_dashboard") != "1":
            continue
        for text in board["data"].values():
            uids |= {
                s["uid"] for s in _datasources(json.loads(text)) if s.get("type") == "prometheus"
            }
    assert uids == {expected}


def _datasources(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        if isinstance(node.get("datasource"), dict):
            yield node["datasource"]
        for value in node.values():
            yield from _datasources(value)
    elif isinstance(node, list):
        for value in node:
            yield from _datasources(value)


@pytest.mark.parametrize("stack", BROWNFIELD_STACKS)
def test_the_brownfield_stack_names_nothing_of_the_platforms_own_release(stack):
    """No address, namespace or Service of a release named kube-prometheus-stack in
    `monitoring` in what the brownfield stack declares and renders."""
    read = [[r.inputs for r in plan_of(stack).resources], [o for _, o in pod_holders(stack)]]
    fixed = [
        s
        for s in strings(read)
        if s == "monitoring"
        or "kube-prometheus-stack" in s
        or ".monitoring.svc" in s
        or ":9090" in s
        or "monitoring/" in s
    ]
    assert fixed == []
    # The Pushgateway's NetworkPolicy admits Prometheus's pods from the stack's namespace.
    (pushgateway,) = [
        r for r in plan_of(stack).of_type(RELEASE) if r.inputs["chart"] == "prometheus-pushgateway"
    ]
    peers = pushgateway.inputs["values"]["networkPolicy"]["customSelectors"]
    prometheus = [
        p
        for p in peers
        if p.get("podSelector") == {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}
    ]
    assert prometheus == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
        }
    ]


def test_prometheus_service_settings_need_the_clusters_own_release(tmp_path, monkeypatch, capsys):
    assert_refused(
        tmp_path,
        monkeypatch,
        capsys,
        existing(existing={
            "name": "lab", "kubeconfig_path": "~/.kube/lab.yaml",
            "kube_prometheus_stack": {"prometheus_service": "monitoring-prometheus"},
        }),
        "gpu-platform:existing.kube_prometheus_stack",
        "",
        "set addons.kube_prometheus_stack: existing",
    )  # fmt: skip


# ------------------------------------------------------------ the Network Operator, existing


def test_the_clusters_network_operator_gets_no_release_no_policy_and_keeps_the_rdma_network():
    plan = brownfield_plan()
    assert "network-operator" not in {r.inputs["chart"] for r in plan.of_type(RELEASE)}
    assert kinds(plan, "NicClusterPolicy") == []
    namespaces = {n["metadata"]["name"] for n in kinds(plan, "Namespace")}
    assert "nvidia-network-operator" not in namespaces
    # What the pods name is still declared: the `rdma` network in every namespace jobs run in
    # (the references model above finds it), and its nv-ipam pool in the operator's namespace.
    networks = {
        (n["metadata"]["namespace"], n["metadata"]["name"])
        for n in kinds(plan, "NetworkAttachmentDefinition")
    }
    assert networks == {(ns, "rdma") for ns in BROWNFIELD_JOB_NAMESPACES}
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in kinds(plan, "IPPool")] == [
        ("nvidia-network-operator", "rdma")
    ]
    # A team's job on the RoCE pool still asks for the RDMA devices and joins the network.
    spec = plan_job(brownfield_config(), TeamJob(IMAGE, ["t.py"], nodes=2, team="vision"))
    (job,) = render(spec)
    pod = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "rdma"
    # network-operator 26.4.1 example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml: the
    # RDMA shared device plugin's resource `rdma/rdma_shared_device_a`; the stack names its own.
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert "rdma/rdma_shared_device" in limits


def test_the_plan_says_what_the_clusters_network_operator_must_deploy():
    report = brownfield_plan().outputs["existing_addons"]["network_operator"]
    assert report["tested_with"] == "network-operator 26.4.1"
    assert sorted(report["needs_crds"]) == [
        "k8s.cni.cncf.io/v1 NetworkAttachmentDefinition",
        "mellanox.com/v1alpha1 NicClusterPolicy",
        "nv-ipam.nvidia.com/v1alpha1 IPPool",
    ]
    settings = " ".join(report["needs_settings"])
    for needed in (
        "secondaryNetwork.multus",
        "nvIpam",
        "rdmaSharedDevicePlugin advertises rdma/rdma_shared_device",
    ):
        assert needed in settings
