"""Prometheus settings every shipped stack leaves at their defaults (30 s scrapes, 15 days or
45 GiB of retention on 50 GiB) reach kube-prometheus-stack's values from config (STYLE.md §14):
tests/helpers/varied_stacks.py sets other valid values and the plan follows."""

from __future__ import annotations

from tests.helpers.varied_stacks import varied_plan


def test_prometheus_takes_the_stack_s_scrape_interval_retention_and_volume():
    (release,) = [
        r
        for r in varied_plan().of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs["chart"] == "kube-prometheus-stack"
    ]
    spec = release.inputs["values"]["prometheus"]["prometheusSpec"]
    # prometheus-operator API, PrometheusSpec: scrapeInterval and retention are Durations,
    # retentionSize a ByteSize.
    assert spec["scrapeInterval"] == "15s"
    assert spec["retention"] == "20d"
    assert spec["retentionSize"] == "60GiB"
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["resources"] == {"requests": {"storage": "80Gi"}}
