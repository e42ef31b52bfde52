"""The stack's Pushgateway (components/observability/pushgateway.py): its values, and that every
stack declares it after the monitoring release, so the goodput every training job pushes is kept,
shown and alerted on everywhere, and the release keeps the state it had under the SelfTest."""

from __future__ import annotations

import json

import pytest

from components.observability.pushgateway import pushgateway_values
from components.vocabulary import pushgateway_url
from plan.urns import engine_urns, former_urns
from tests.conftest import STACKS, find, planned, stack_config

RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


def test_the_pushgateway_is_scraped_with_the_pushed_labels_kept():
    """honorLabels true (PINS.md; Pushgateway README, "Configure the Pushgateway as a target to
    scrape"): otherwise every pushed series' `job` becomes `exported_job` and the alerts, which
    select job="gpu-platform-selftest" or job="training-goodput", never match."""
    values = pushgateway_values(stack_config("onprem"), {})
    assert values["serviceMonitor"]["honorLabels"] is True
    assert values["serviceMonitor"]["enabled"] is True
    assert values["serviceMonitor"]["namespace"] == "monitoring"


def test_the_pushgateway_keeps_what_it_holds_across_restarts_on_its_volume():
    """The chart mounts its volume at /data but the server writes there only when told to
    (Pushgateway README, "Persistence": --persistence.file)."""
    values = pushgateway_values(stack_config("onprem"), {})
    assert values["persistentVolume"]["enabled"] is True
    assert "--persistence.file=/data/pushgateway.data" in values["extraArgs"]
    # prometheus-pushgateway 3.8.0's Chart.yaml: appVersion v1.11.3.
    assert values["image"]["tag"] == "v1.11.3"


def test_its_address_is_the_service_the_chart_names_after_the_release():
    # prometheus-pushgateway 3.8.0, templates/_helpers.tpl (fullname) and values.yaml (9091).
    assert pushgateway_url("monitoring") == "http://prometheus-pushgateway.monitoring.svc:9091"


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_declares_the_pushgateway_after_the_monitoring_release(stack):
    """Every stack runs monitoring, so every stack keeps what training jobs push; the monitoring
    release (or the cluster's own, existing.addons) installs the ServiceMonitor CRD the chart's
    monitor needs."""
    cfg = stack_config(stack)
    plan = planned(stack)
    gateway = find(plan, RELEASE, f"{stack}-prometheus-pushgateway")
    assert (gateway.inputs["chart"], gateway.inputs["version"]) == (
        "prometheus-pushgateway",
        "3.8.0",
    )
    assert gateway.inputs["namespace"] == cfg.namespaces.monitoring
    assert gateway.inputs["values"]["serviceMonitor"]["honorLabels"] is True
    assert "gpu-platform:observability:Pushgateway::" in gateway.parent
    monitoring = (
        "gpu-platform:observability:Monitoring$kubernetes:helm.sh/v3:Release::"
        if cfg.installs("kube_prometheus_stack")
        else "gpu-platform:observability:Monitoring::"
    )
    assert any(monitoring in d for d in gateway.dependencies), gateway.dependencies


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_shows_and_alerts_on_the_goodput_it_keeps(stack):
    plan = planned(stack)
    (cm,) = [
        r
        for r in plan.of_type(CONFIG_MAP)
        if r.inputs["metadata"]["name"] == "dashboard-training-job"
    ]
    board = json.loads(cm.inputs["data"]["training-job.json"])
    rows = {p["title"] for p in board["panels"] if p["type"] == "row"}
    assert {"Goodput", "Goodput by team, queue and pool"} <= rows
    (rule,) = plan.of_type(RULE)
    alerts = {r.get("alert") for g in rule.inputs["spec"]["groups"] for r in g["rules"]}
    assert "JobGoodputLow" in alerts


@pytest.mark.parametrize("stack", STACKS)
def test_the_release_keeps_the_state_it_had_under_the_self_test(stack):
    """Where the self-test ran on a schedule (onprem as shipped), the SelfTest declared the
    release; `pulumi up` must find that state again (Pulumi docs, "Resource options: aliases"),
    not delete the release and the volume that holds every push."""
    plan = planned(stack)
    gateway = find(plan, RELEASE, f"{stack}-prometheus-pushgateway")
    before = (
        f"urn:pulumi:{stack}::gpu-platform::gpu-platform:platform:Platform$"
        "gpu-platform:selftest:SelfTest$kubernetes:helm.sh/v3:Release::"
        f"{stack}-prometheus-pushgateway"
    )
    assert before in former_urns(plan)[engine_urns(plan)[gateway.urn]]
