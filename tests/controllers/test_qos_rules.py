"""The QoS class of a pod with DRA claims, as tests/controllers/qos.py models kubernetes
pkg/apis/core/v1/helper/qos/qos.go `GetPodQOS`: only CPU and memory requests and limits
count, and claims are neither, so a pod's claims never change its class."""

from __future__ import annotations

import pytest

from tests.controllers.qos import exclusive_cpus, qos_class
from tests.helpers.dra_objects import claiming

CLAIMS = {
    "gpu": {"resourceClaimTemplateName": "four-gpus"},
    "channel": {"resourceClaimTemplateName": "job-channel"},
}


def pod(resources: dict) -> dict:
    return claiming({"containers": [{"name": "c", "resources": resources}]}, **CLAIMS)


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        # Kubernetes docs "Configure Quality of Service for Pods": every container limits CPU
        # and memory, requests equal to limits: Guaranteed.
        ({"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"cpu": "8", "memory": "64Gi"}},
         "Guaranteed"),
        # Limits alone: the requests default to them (SetDefaults_Pod), still Guaranteed.
        ({"limits": {"cpu": "8", "memory": "64Gi"}}, "Guaranteed"),
        # Requests and no limits: Burstable, however many devices the pod claims.
        ({"requests": {"cpu": "8", "memory": "64Gi"}}, "Burstable"),
        # Nothing but claims: BestEffort.
        ({}, "BestEffort"),
    ],
)  # fmt: skip
def test_a_pods_claims_leave_its_class_to_cpu_and_memory(resources, expected):
    claimed = pod(resources)
    assert claimed["containers"][0]["resources"]["claims"] == [
        {"name": "gpu"},
        {"name": "channel"},
    ]
    assert qos_class(claimed) == expected


def test_a_guaranteed_pod_with_claims_keeps_its_exclusive_cpus():
    """policy_static.go guaranteedCPUs: an integer CPU request of a Guaranteed pod's
    container."""
    claimed = pod({"limits": {"cpu": "8", "memory": "64Gi"}})
    assert exclusive_cpus(claimed, claimed["containers"][0]) == 8
