"""Monitoring as every stack plans it: kube-prometheus-stack's values, Prometheus's volume, the
Grafana admin password that never leaves as plain text, the DCGM exporter's scraping, and the
bad input that is refused."""

from __future__ import annotations

import json

import pytest

from components.observability.monitoring import gp3_storage_class
from components.vocabulary import prometheus_service
from model.stacks import SECRET
from tests.conftest import STACKS, planned, stack_config
from tests.helpers.bad_stacks import assert_refused, aws, case, existing

RELEASE = "kubernetes:helm.sh/v3:Release"
MONITORING_CHART = "kube-prometheus-stack"


def release(stack: str, chart: str):
    (found,) = [r for r in planned(stack).of_type(RELEASE) if r.inputs["chart"] == chart]
    return found


def prometheus_spec(stack: str) -> dict:
    return release(stack, MONITORING_CHART).inputs["values"]["prometheus"]["prometheusSpec"]


def objects(stack: str, kind: str) -> list[dict]:
    return [o for o in planned(stack).kubernetes_objects() if o["kind"] == kind]


@pytest.mark.parametrize("stack", STACKS)
def test_prometheus_selects_monitors_and_rules_of_every_release(stack):
    """shared/PINS.md, "Monitoring and autoscaling": with the NilUsesHelmValues flags true
    (the chart's default) Prometheus picks up only objects labelled for its own release, and
    the GPU Operator's DCGM ServiceMonitor and the alert rules would never be scraped."""
    spec = prometheus_spec(stack)
    for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False, kind


@pytest.mark.parametrize("stack", STACKS)
def test_the_release_lives_in_the_monitoring_namespace_at_the_shared_url(stack):
    assert release(stack, MONITORING_CHART).inputs["namespace"] == "monitoring"
    assert [n["metadata"]["name"] for n in objects(stack, "Namespace")].count("monitoring") == 1
    # The contract the autoscalers and alert rules rely on (brief for issue 9).
    assert prometheus_service(stack_config(stack)).url == (
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    )


def test_retention_and_volume_come_from_the_config_defaults():
    spec = prometheus_spec("dev")
    assert spec["retention"] == "15d"
    assert spec["retentionSize"] == "45GiB"
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim == {
        "storageClassName": "gp3",
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "50Gi"}},
    }
    assert spec["scrapeInterval"] == "30s"


def test_onprem_prometheus_uses_the_class_its_stack_names():
    claim = prometheus_spec("onprem")["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "cephfs"
    assert objects("onprem", "StorageClass")[0]["metadata"]["name"] != "gp3"


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_prometheus_volumes_on_aws_are_encrypted_gp3_made_in_the_pods_zone(stack):
    """EBS CSI driver docs, StorageClass parameters: `type: gp3`, `encrypted: "true"`; an EBS
    volume cannot leave its zone, so it is created once the pod is placed
    (WaitForFirstConsumer)."""
    (gp3,) = [o for o in objects(stack, "StorageClass") if o["metadata"]["name"] == "gp3"]
    assert gp3["provisioner"] == "ebs.csi.aws.com"
    assert gp3["parameters"] == {"type": "gp3", "encrypted": "true"}
    assert gp3["volumeBindingMode"] == "WaitForFirstConsumer"
    assert gp3["reclaimPolicy"] == "Retain"


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_reads_its_admin_password_from_the_generated_secret(stack):
    grafana = release(stack, MONITORING_CHART).inputs["values"]["grafana"]
    assert grafana["enabled"] is True
    assert grafana["admin"] == {
        "existingSecret": "grafana-admin",
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    assert "adminPassword" not in grafana
    (secret,) = [s for s in objects(stack, "Secret") if s["metadata"]["name"] == "grafana-admin"]
    assert secret["metadata"]["namespace"] == "monitoring"
    assert secret["stringData"]["admin-password"] == SECRET


@pytest.mark.parametrize("stack", STACKS)
def test_the_admin_password_leaves_the_program_only_as_a_secret(stack):
    plan = planned(stack)
    assert plan.outputs["grafana_admin_password"] == SECRET
    (password,) = plan.of_type("random:index/randomPassword:RandomPassword")
    # The generated value's placeholder appears nowhere but in the secret Secret.
    placeholder = f"{password.name}.result"
    for resource in plan.resources:
        assert placeholder not in json.dumps(resource.inputs), resource.name
    assert placeholder not in json.dumps(plan.outputs)
    # A release value holding the password would turn the whole value secret, in state and
    # in `helm get values`: the release must hold no secret at all.
    values = release(stack, MONITORING_CHART).inputs["values"]
    assert SECRET not in json.dumps(values)


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_loads_every_dashboard_through_its_sidecar(stack):
    sidecar = release(stack, MONITORING_CHART).inputs["values"]["grafana"]["sidecar"]
    assert sidecar["dashboards"] == {
        "enabled": True,
        "label": "grafana_dashboard",
        "labelValue": "1",
    }
    maps = [c for c in objects(stack, "ConfigMap") if c["metadata"]["name"].startswith("dash")]
    assert sorted(c["metadata"]["name"] for c in maps) == [
        "dashboard-fleet-health",
        "dashboard-gpu-fleet",
        "dashboard-queues",
        "dashboard-team-cost",
        "dashboard-training-job",
    ]
    for cm in maps:
        assert cm["metadata"]["labels"] == {"grafana_dashboard": "1"}
        (text,) = cm["data"].values()
        assert json.loads(text)["panels"]


@pytest.mark.parametrize("stack", STACKS)
def test_dcgm_is_scraped_with_honor_labels_false_so_pod_labels_arrive_as_exported(stack):
    """shared/FACTS.md, "Monitoring": with honorLabels false the exporter's pod labels are
    exported_namespace / exported_pod / exported_container, the names every query reads."""
    dcgm = release(stack, "gpu-operator").inputs["values"]["dcgmExporter"]
    assert dcgm["enabled"] is True
    assert dcgm["serviceMonitor"] == {"enabled": True, "honorLabels": False}


@pytest.mark.parametrize("stack", STACKS)
def test_the_gpu_operators_is_the_clusters_one_dcgm_exporter(stack):
    """Two exporters would double every GPU series (and fight over port 9400)."""
    plan = planned(stack)
    charts = [r.inputs["chart"] for r in plan.of_type(RELEASE)]
    assert "dcgm-exporter" not in charts
    assert charts.count("gpu-operator") == 1
    daemonsets = [o for o in plan.kubernetes_objects() if o["kind"] == "DaemonSet"]
    assert not [d for d in daemonsets if "dcgm" in d["metadata"]["name"]]


def test_the_plan_says_retention_storage_grafana_and_dashboards():
    assert planned("dev").outputs["monitoring"] == {
        "retention": "15d or 45GiB",
        "storage": "50Gi on StorageClass gp3",
        "prometheus": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
        "grafana_service": "monitoring/kube-prometheus-stack-grafana",
        "dashboards": ["Fleet health", "GPU fleet", "Queues", "Team cost", "Training job"],
    }


BAD = [
    case(
        aws(observability={"grafana": {"admin_password": "hunter2"}}),
        "gpu-platform:observability.grafana.admin_password",
        "Grafana's admin password in plain config",
        "the platform generates one",
        "plain-grafana-password",
    ),
    case(
        existing(observability={"grafana": {"admin_password": "hunter2"}}),
        "gpu-platform:observability.grafana.admin_password",
        "Grafana's admin password in plain config",
        "the platform generates one",
        "plain-grafana-password-on-prem",
    ),
    case(
        aws(observability={"retention_size_gib": 50, "storage_gib": 50}),
        "gpu-platform:observability.retention_size_gib",
        "50 GiB",
        "give a retention size below the volume's size",
        "retention-fills-the-volume",
    ),
    case(
        aws(observability={"storage_class": "standard"}),
        "gpu-platform:observability.storage_class",
        "only valid with provider existing",
        "gp3 StorageClass the platform declares",
        "storage-class-on-aws",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_bad_observability_config_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_prometheus_volumes_on_aws_keep_their_data_in_the_pods_zone():
    # EBS CSI driver docs, "Parameters": provisioner ebs.csi.aws.com, type gp3, encrypted
    # "true"; Kubernetes docs, "Storage Classes": WaitForFirstConsumer binds in the pod's zone.
    assert gp3_storage_class() == {
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", "encrypted": "true"},
        "volume_binding_mode": "WaitForFirstConsumer",
        "allow_volume_expansion": True,
        "reclaim_policy": "Retain",
    }
