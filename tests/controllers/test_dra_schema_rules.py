"""The DRA objects the models read are ones the API server takes at the stacks' minors: the
hand-made ResourceClaimTemplates of tests/helpers/dra_objects.py and the one a ComputeDomain's
controller creates (kubernetes-validate's `resource.k8s.io` schemas), the DeviceClasses the
pinned driver chart renders, and a ComputeDomain against the driver's CRD with its CEL rules
(../shared/crds/resource.nvidia.com/ComputeDomain.v1beta1.json). The job-builder tests call
`schema_problems(obj, minor)` on what they render."""

from __future__ import annotations

import pytest

from tests.controllers.dra import channel_template
from tests.helpers.dra_objects import (
    chart_device_classes,
    claim_template,
    compute_domain,
    exactly,
    schema_problems,
)

# PINS.md "Kubernetes versions and the DRA API": resource.k8s.io/v1 is served from 1.34 on.
V1_MINORS = ("1.34", "1.35", "1.36")


@pytest.mark.parametrize("minor", V1_MINORS)
def test_claim_templates_validate_where_resource_k8s_io_v1_is_served(minor):
    shapes = [
        claim_template("one-gpu"),
        claim_template("four-gpus", exactly(count=4)),
        claim_template("mig", exactly("mig.nvidia.com", name="slice")),
        channel_template(compute_domain("cd", "job-channel")),
    ]
    assert [p for t in shapes for p in schema_problems(t, minor)] == []


def test_a_v1_claim_template_has_no_schema_at_1_33_and_a_bad_count_is_refused():
    """kubernetes-validate 1.37.0 ships resource.k8s.io v1alpha3, v1beta1 and v1beta2 for 1.33
    and adds v1 from 1.34, as the minors serve them."""
    assert schema_problems(claim_template("one-gpu"), "1.33") == [
        "ResourceClaimTemplate one-gpu: no resource.k8s.io/v1 at 1.33"
    ]
    bad = claim_template("one-gpu", exactly(count="4"))
    assert schema_problems(bad, "1.35") == [
        "ResourceClaimTemplate one-gpu: spec/spec/devices/requests/0/exactly/count: '4' is not "
        "of type 'integer', 'null'"
    ]


def test_the_charts_device_classes_validate_at_the_minor_they_are_rendered_for():
    classes = chart_device_classes("1.35")
    # templates/deviceclass-*.yaml at v0.4.1: five classes with GPUs and ComputeDomains on.
    assert sorted(c["metadata"]["name"] for c in classes) == [
        "compute-domain-daemon.nvidia.com",
        "compute-domain-default-channel.nvidia.com",
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
    ]
    assert [p for c in classes for p in schema_problems(c, "1.35")] == []


def test_a_compute_domain_passes_its_crd_and_one_without_a_template_name_does_not():
    """The CRD requires spec.channel.resourceClaimTemplate.name and numNodes >= 0; its one CEL
    rule (`self == oldSelf`, "A computeDomain.spec is immutable") binds updates only."""
    assert schema_problems(compute_domain("cd", "job-channel"), "1.35") == []
    nameless = compute_domain("cd", "job-channel")
    del nameless["spec"]["channel"]["resourceClaimTemplate"]["name"]
    assert schema_problems(nameless, "1.35") == [
        "ComputeDomain cd: spec/channel/resourceClaimTemplate: 'name' is a required property"
    ]
    negative = compute_domain("cd", "job-channel")
    negative["spec"]["numNodes"] = -1
    assert schema_problems(negative, "1.35") == [
        "ComputeDomain cd: spec/numNodes: -1 is less than the minimum of 0"
    ]
