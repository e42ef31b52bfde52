"""The two kinds of Prometheus rule the platform declares (Prometheus docs, "Alerting rules" and
"Recording rules"), as the PrometheusRule's groups spell them: every group of
components/observability/alerts.py and training_alerts.py is built of these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.config.alerts import AlertSettings


@dataclass(frozen=True)
class Alert:
    """One alerting rule, with the condition in words for the plan."""

    name: str
    expr: str
    duration: str
    severity: str
    summary: str
    description: str
    # The threshold as the plan shows it: "GPU utilisation < 30 %".
    condition: str

    def rule(self, settings: AlertSettings) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.duration,
            "labels": {"severity": self.severity},
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                # The alert's runbook: the anchor of "### <name>" on the runbooks page.
                "runbook_url": f"{settings.runbook_base_url}#{self.name.lower()}",
            },
        }


@dataclass(frozen=True)
class Record:
    """One recording rule: a series the alerts and dashboards read by its name."""

    name: str
    expr: str

    def rule(self, settings: AlertSettings) -> dict[str, Any]:
        return {"record": self.name, "expr": self.expr}


Rule = Alert | Record
