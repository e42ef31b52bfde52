"""Hand-made DRA objects for the controller models' rule tests, in the shapes
../shared/PINS.md "Claim shapes" cites (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1
`docs/install.md`, `demo/specs/quickstart/v1/gpu-test1.yaml`, `demo/specs/imex/
channel-injection.yaml`), and the DeviceClasses the pinned driver chart renders."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import yaml

from plan.render import render_chart
from tests.conftest import SHARED_HELM, validate_kubernetes
from tests.controllers.dra import COMPUTE_DOMAIN_API, RESOURCE_API
from tests.helpers import crds

DRA_CHART = SHARED_HELM / "dra-driver-nvidia-gpu-0.4.1.tgz"
# The namespace docs/install.md installs the driver in; the chart refuses `default`.
DRA_NAMESPACE = "dra-driver-nvidia-gpu"


def exactly(device_class: str = "gpu.nvidia.com", name: str = "gpu", **fields: Any) -> dict:
    """One request of `device_class` (`count`, `allocationMode`, `adminAccess` as given)."""
    return {"name": name, "exactly": {"deviceClassName": device_class, **fields}}


def claim_template(name: str, *requests: dict, namespace: str = "team-a") -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": list(requests) or [exactly()]}}},
    }


def compute_domain(name: str, template: str, namespace: str = "team-a") -> dict[str, Any]:
    """A ComputeDomain as PINS.md has the platform write it: `numNodes: 0`, valid under both
    the driver's CRD and the GPU Operator's older one."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": template}}},
    }


def claiming(pod_spec: dict[str, Any], **claims: dict[str, str]) -> dict[str, Any]:
    """`pod_spec` with `spec.resourceClaims` entries `name -> {resourceClaimTemplateName: ..}`
    (or `resourceClaimName`), each listed in the first container's `resources.claims`."""
    spec = json.loads(json.dumps(pod_spec))
    spec["resourceClaims"] = [{"name": name, **ref} for name, ref in claims.items()]
    resources = spec["containers"][0].setdefault("resources", {})
    resources["claims"] = [{"name": name} for name in claims]
    return spec


def chart_device_classes(minor: str = "1.35", **resources: bool) -> list[dict[str, Any]]:
    """The DeviceClasses the pinned chart renders at `minor` (the `resource.k8s.io/v1` API an
    offline render picks: PINS.md "Kubernetes versions and the DRA API"), with
    `resources.<gpus|computeDomains>.enabled` as given (both on by default; GPUs on needs
    `gpuResourcesEnabledOverride`, templates/validation.yaml)."""
    enabled = {"gpus": True, "computeDomains": True, **resources}
    values = {
        "gpuResourcesEnabledOverride": enabled["gpus"],
        "resources": {k: {"enabled": v} for k, v in enabled.items()},
    }
    templates, _ = render_chart(
        DRA_CHART, json.dumps(values, sort_keys=True), DRA_NAMESPACE, DRA_NAMESPACE, minor, ()
    )
    docs = [d for _, text in templates for d in yaml.safe_load_all(text) if d]
    return [d for d in docs if d["kind"] == "DeviceClass"]


def schema_problems(obj: dict[str, Any], minor: str) -> list[str]:
    """Why the API server of Kubernetes `minor` would refuse `obj`: a `resource.k8s.io` object
    against kubernetes-validate's schema of that minor (none where the minor serves no such
    version by default: `resource.k8s.io/v1` from 1.34, PINS.md "Kubernetes versions and the DRA
    API"), a ComputeDomain against ../shared/crds with its CEL rules."""
    if crds.is_custom_resource(obj):
        return crds.errors(obj)
    try:
        validate_kubernetes(obj, minor)
    except kubernetes_validate.SchemaNotFoundError:
        return [f"{obj['kind']} {obj['metadata']['name']}: no {obj['apiVersion']} at {minor}"]
    except AssertionError as error:
        return [str(error)]
    return []
