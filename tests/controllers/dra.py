"""What the controller models read of Dynamic Resource Allocation (`resource.k8s.io`): the
claims a pod template makes, the requests of a ResourceClaimTemplate, and the templates the
NVIDIA DRA driver's ComputeDomain controller creates on its own.

- `pod_claims(spec)`: a pod spec's `spec.resourceClaims`, each naming a
  `resourceClaimTemplateName` (the ResourceClaim controller makes one claim per pod from it)
  or a `resourceClaimName` (a claim made beforehand, shared by every pod that names it).
- `device_requests(template)`: a ResourceClaimTemplate's `spec.spec.devices.requests` (the
  `resource.k8s.io/v1` shape: each request `exactly` or `firstAvailable`).
- `channel_template(compute_domain)`: the ResourceClaimTemplate the ComputeDomain controller
  creates in the ComputeDomain's namespace, named in its `spec.channel.resourceClaimTemplate.name`
  (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1
  `cmd/compute-domain-controller/resourceclaimtemplate.go`, from
  `templates/compute-domain-workload-claim-template.tmpl.yaml`; ../shared/PINS.md "Claim shapes"):
  a job never declares it, the controller does once the ComputeDomain exists.
- `as_reconciled(objects)`: the objects with those templates added, as the cluster holds them
  once the ComputeDomain controller has run; a model that judges a job's steady state reads
  these, one that judges the moment a job is applied reads the objects alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

RESOURCE_API = "resource.k8s.io/v1"
COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
# templates/compute-domain-workload-claim-template.tmpl.yaml at v0.4.1: the one request, the
# DeviceClass the chart renders for it, and the driver its opaque config is for.
CHANNEL_REQUEST = "channel"
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
CHANNEL_DRIVER = "compute-domain.nvidia.com"


def pod_claims(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(spec.get("resourceClaims") or ())


def device_requests(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = (template.get("spec") or {}).get("spec") or {}
    return list((spec.get("devices") or {}).get("requests") or ())


def device_class_names(request: Mapping[str, Any]) -> list[str]:
    """The DeviceClasses one request names: its `exactly`'s, or each `firstAvailable`
    alternative's."""
    if "exactly" in request:
        return [request["exactly"]["deviceClassName"]]
    return [sub["deviceClassName"] for sub in request.get("firstAvailable") or ()]


def is_compute_domain(obj: Mapping[str, Any]) -> bool:
    return (obj.get("apiVersion"), obj.get("kind")) == (COMPUTE_DOMAIN_API, "ComputeDomain")


def channel_template(compute_domain: Mapping[str, Any]) -> dict[str, Any]:
    meta, channel = compute_domain["metadata"], compute_domain["spec"]["channel"]
    # The uid is the API server's; a placeholder stands for it offline.
    uid = meta.get("uid", f"<uid of {meta['name']}>")
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": channel["resourceClaimTemplate"]["name"],
            "namespace": meta["namespace"],
            "labels": {"resource.nvidia.com/computeDomain": uid},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": CHANNEL_REQUEST,
                            "exactly": {"deviceClassName": CHANNEL_DEVICE_CLASS},
                        }
                    ],
                    "config": [
                        {
                            "requests": [CHANNEL_REQUEST],
                            "opaque": {
                                "driver": CHANNEL_DRIVER,
                                "parameters": {
                                    "apiVersion": COMPUTE_DOMAIN_API,
                                    "kind": "ComputeDomainChannelConfig",
                                    "domainID": uid,
                                    "allocationMode": channel.get("allocationMode", "Single"),
                                },
                            },
                        }
                    ],
                }
            }
        },
    }


def as_reconciled(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    held = list(objects)
    return held + [channel_template(o) for o in held if is_compute_domain(o)]
