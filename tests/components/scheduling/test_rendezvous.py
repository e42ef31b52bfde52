"""How the pods of a multi-node job find each other (components/scheduling/rendezvous.py): one
headless Service named `rendezvous` in every namespace jobs run in, on every stack."""

from __future__ import annotations

import pytest

from components.scheduling.rendezvous import master_address, rendezvous_service
from tests.conftest import STACKS, planned, validate_kubernetes

SERVICE = "kubernetes:core/v1:Service"


def test_index_zero_is_the_job_name_dash_zero_under_the_service():
    # Kubernetes "Jobs", Completion mode: an Indexed Job's pod hostname is `<job>-<index>`;
    # "DNS for Services and Pods": with `subdomain` set, `<hostname>.<subdomain>` resolves.
    assert master_address("train") == "train-0.rendezvous"


def test_the_service_is_headless_names_pods_before_they_are_ready_and_selects_members():
    # Kubernetes "Service": clusterIP None is a headless Service; publishNotReadyAddresses
    # gives DNS records to pods not yet ready. 29500 is torchrun's default --master-port.
    service = rendezvous_service("training")
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "rendezvous",
            "namespace": "training",
            "labels": {
                "app.kubernetes.io/part-of": "gpu-platform",
                "gpu-platform/plane": "scheduling",
            },
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"gpu-platform/rendezvous": "member"},
            "ports": [{"name": "rendezvous", "port": 29500}],
        },
    }
    validate_kubernetes(service, "1.34")


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_declares_it_in_its_training_namespace(stack):
    plan = planned(stack)
    found = {
        r.inputs["metadata"]["namespace"]
        for r in plan.of_type(SERVICE)
        if r.inputs["metadata"]["name"] == "rendezvous"
    }
    assert plan.outputs["namespaces"]["training"] in found
