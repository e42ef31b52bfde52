"""The rule types (components/observability/rule_types.py) as a PrometheusRule group holds
them: Prometheus docs, "Alerting rules" (`alert`, `expr`, `for`, `labels`, `annotations`) and
"Recording rules" (`record`, `expr`)."""

from __future__ import annotations

from components.observability.rule_types import Alert, Record
from model.config.alerts import AlertSettings


def test_an_alert_names_its_runbook_by_the_anchor_of_its_heading():
    alert = Alert("GpuIdle", "x < 1", "30m", "warning", "idle", "idle GPU", "x < 1")
    settings = AlertSettings(runbook_base_url="https://example.org/runbooks")
    assert alert.rule(settings) == {
        "alert": "GpuIdle",
        "expr": "x < 1",
        "for": "30m",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "idle",
            "description": "idle GPU",
            # docs/monitoring.md's "### GpuIdle", as MkDocs anchors it.
            "runbook_url": "https://example.org/runbooks#gpuidle",
        },
    }


def test_a_record_is_its_name_and_expression_alone():
    assert Record("job:ratio", "a / b").rule(AlertSettings()) == {
        "record": "job:ratio",
        "expr": "a / b",
    }
