"""Kueue in the cluster in a box, configured from the rendered `kueue-manager-config` ConfigMap
(out/<stack>/rendered/<stack>-kueue.yaml), not from the program's constants: which namespaces
it manages, which frameworks it integrates, which resources it excludes; its queues and flavors
from the rendered objects. Admission itself is tests/controllers/kueue_admission.py's model.

`namespace_managed` is the one seam to Kueue's namespace rule: point it at
tests/controllers/kueue_admission's own function once that module has one."""

from __future__ import annotations

from typing import Any

import yaml

from tests.helpers.box_nodes import selects

CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
# The label the API server sets on every namespace to its name (Kubernetes docs, "Namespaces":
# kubernetes.io/metadata.name, immutable).
NAME_LABEL = "kubernetes.io/metadata.name"
NOT_OPTED_IN = "Namespace not opted in for Kueue management"


def manager_config(rendered: list[dict[str, Any]]) -> dict[str, Any]:
    """The Configuration the Kueue controller reads, from the rendered ConfigMap."""
    (config_map,) = [
        o for o in rendered if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == CONFIG_MAP
    ]
    return yaml.safe_load(config_map["data"][CONFIG_KEY])


def namespace_managed(
    config: dict[str, Any], namespace: dict[str, Any], kueue_namespace: str
) -> str | None:
    """None when Kueue v0.19.2 reconciles jobs in `namespace`, else why not. Feature
    ManagedJobsNamespaceSelectorAlwaysRespected is GA and locked on (pkg/features/
    kube_features.go): a job in a namespace `managedJobsNamespaceSelector` does not select is
    never reconciled, so never unsuspended (pkg/controller/jobframework/reconciler.go,
    "Namespace not opted in for Kueue management"). Without a selector the configuration's
    default leaves out kube-system and Kueue's own namespace (apis/config/v1beta2/defaults.go)."""
    name = namespace["metadata"]["name"]
    labels = {**namespace["metadata"].get("labels", {}), NAME_LABEL: name}
    selector = config.get("managedJobsNamespaceSelector")
    if selector is None:
        selector = {
            "matchExpressions": [
                {"key": NAME_LABEL, "operator": "NotIn", "values": ["kube-system", kueue_namespace]}
            ]
        }
    if selects(selector, labels):
        return None
    return (
        f"{NOT_OPTED_IN}: managedJobsNamespaceSelector {selector} does not select namespace "
        f"{name} (labels {dict(sorted(labels.items()))})"
    )
