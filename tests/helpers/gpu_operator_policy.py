"""The ClusterPolicy the pinned gpu-operator chart renders from a stack's values: what the
operator reads, where the chart copies (or drops) each value the platform sets."""

from __future__ import annotations

import json

import yaml

from plan.render import render_chart
from tests.conftest import SHARED_HELM

# The Kubernetes version the chart is rendered and its values checked for.
K8S = "1.35"


def cluster_policy(vals: dict) -> dict:
    """The ClusterPolicy the pinned chart renders from `vals`."""
    templates, _ = render_chart(
        SHARED_HELM / "gpu-operator-v26.7.0.tgz",
        json.dumps(vals, sort_keys=True),
        "gpu-operator",
        "gpu-operator",
        K8S,
        (),
    )
    docs = [d for _, text in templates for d in yaml.safe_load_all(text) if d]
    (policy,) = [d for d in docs if d["kind"] == "ClusterPolicy"]
    return policy
