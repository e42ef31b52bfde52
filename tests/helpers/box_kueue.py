"""Kueue in the cluster in a box, configured from the rendered `kueue-manager-config` ConfigMap
(out/<stack>/rendered/<stack>-kueue.yaml), not from the program's constants: which namespaces
it manages, which frameworks it integrates, which resources it excludes; its queues and flavors
from the rendered objects. The configuration, the namespace rule and admission itself are
tests/controllers/kueue_admission.py's model; this module words the rule's refusal as Kueue
logs it."""

from __future__ import annotations

from typing import Any

from tests.controllers.kueue_admission import (
    kueue_manages,
    managed_selector,
    manager_config_of,
    namespace_labels,
)

NOT_OPTED_IN = "Namespace not opted in for Kueue management"


def manager_config(rendered: list[dict[str, Any]]) -> dict[str, Any]:
    """The Configuration the Kueue controller reads, from the rendered ConfigMap."""
    config = manager_config_of(rendered)
    if config is None:
        raise ValueError("no rendered ConfigMap holds Kueue's Configuration: is Kueue on?")
    return config


def namespace_managed(
    config: dict[str, Any], namespace: dict[str, Any], kueue_namespace: str
) -> str | None:
    """None when Kueue v0.19.2 reconciles jobs in `namespace`, else why not, in the words of
    pkg/controller/jobframework/reconciler.go (the rule: kueue_admission.kueue_manages). Kueue
    runs in `kueue_namespace` unless its configuration names another."""
    config = {"namespace": kueue_namespace, **config}
    if kueue_manages(config, namespace):
        return None
    labels = namespace_labels(namespace)
    return (
        f"{NOT_OPTED_IN}: managedJobsNamespaceSelector {managed_selector(config)} does not "
        f"select namespace {namespace['metadata']['name']} (labels {dict(sorted(labels.items()))})"
    )
