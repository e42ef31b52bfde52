"""A model of the QoS class Kubernetes gives a pod and of the CPUs the kubelet's static CPU
manager pins for it, written from kubernetes/kubernetes at v1.33 (the stacks' oldest minor; the
rules are unchanged through v1.36):

- `requests_defaulted`: a container that sets a limit but no request for a resource gets the
  limit as its request (pkg/apis/core/v1/defaults.go `SetDefaults_Pod`).
- `qos_class`: pkg/apis/core/v1/helper/qos/qos.go `GetPodQOS`: over every container, init
  containers included, only CPU and memory count; no request and no limit anywhere is
  BestEffort; Guaranteed when every container limits both CPU and memory and the pod's
  requests equal its limits; Burstable otherwise (Kubernetes docs, "Configure Quality of Service
  for Pods"). DRA claims (`spec.resourceClaims`, a container's `resources.claims`) are neither
  requests nor limits: `GetPodQOS` reads `Resources.Requests` and `Resources.Limits` only, so
  a pod's claims leave its class to its CPU and memory.
- `exclusive_cpus`: pkg/kubelet/cm/cpumanager/policy_static.go `guaranteedCPUs`: a container
  gets CPUs of its own only in a Guaranteed pod and only for an integer CPU request; else 0
  and it runs in the shared pool (Kubernetes docs, "Control CPU Management Policies on the
  Node", static policy).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from tests.controllers.kueue_admission import quantity

QOS_RESOURCES = ("cpu", "memory")


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def requests_defaulted(
    container: dict[str, Any],
) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    res = container.get("resources", {})
    limits = {k: quantity(v) for k, v in res.get("limits", {}).items()}
    requests = {**limits, **{k: quantity(v) for k, v in res.get("requests", {}).items()}}
    return requests, limits


def qos_class(pod: dict[str, Any]) -> str:
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in containers(pod):
        req, lim = requests_defaulted(container)
        for name in QOS_RESOURCES:
            if req.get(name):
                requests[name] = requests.get(name, Fraction(0)) + req[name]
            if lim.get(name):
                limits[name] = limits.get(name, Fraction(0)) + lim[name]
        if not all(lim.get(name) for name in QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"


def exclusive_cpus(pod: dict[str, Any], container: dict[str, Any]) -> int:
    if qos_class(pod) != "Guaranteed":
        return 0
    cpu = requests_defaulted(container)[0].get("cpu", Fraction(0))
    return int(cpu) if cpu.denominator == 1 else 0
