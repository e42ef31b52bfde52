"""The training jobs' rules on their own (components/observability/training_alerts.py): what
each records and alerts on, in the order Prometheus needs (a group's rules run in order, so a
record comes before the alert that reads it: Prometheus docs, "Recording rules"). What they
compute is held by the promtool cases in test_alerts.py."""

from __future__ import annotations

from components.observability.rule_types import Alert, Record
from components.observability.training_alerts import goodput_rules, straggler_rules
from tests.conftest import stack_config


def test_each_group_records_its_ratio_before_the_alert_that_reads_it():
    cfg = stack_config("prod")
    for rules, record, alert in (
        (goodput_rules(cfg), "gpu_platform_job:goodput:ratio", "JobGoodputLow"),
        (
            straggler_rules(cfg),
            "gpu_platform_job:rank_step_seconds:slowest_over_median",
            "TrainingStraggler",
        ),
    ):
        first, second = rules
        assert isinstance(first, Record) and first.name == record
        assert isinstance(second, Alert) and second.name == alert


def test_the_thresholds_are_the_stacks():
    cfg = stack_config("prod")
    settings = cfg.alerts.model_copy(update={"goodput_percent": 70, "straggler_percent": 125})
    changed = cfg.model_copy(update={"alerts": settings})
    (_, goodput), (_, straggler) = goodput_rules(changed), straggler_rules(changed)
    assert goodput.expr == "gpu_platform_job:goodput:ratio < 0.7"
    assert "> 1.25 and on(namespace, job_name)" in straggler.expr
