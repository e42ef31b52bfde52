"""Every container of every pod the program declares or its releases render names the image it
runs. The Kubernetes schema cannot hold this: `image` is optional in core/v1 Container ("optional
to allow higher level config management to default or override container images in workload
controllers"), so a pod built without one validates, plans, and fails only on the cluster, its
pods never starting. Found where a reservation window's controller ran in a self-test image the
stack did not set."""

from __future__ import annotations

import pytest

from tests.controllers.pod_security import pod_templates
from tests.helpers.canary_stacks import CANARY_STACKS, canary_plan
from tests.helpers.pod_security_stacks import ALL_STACKS, declared_pods
from tests.helpers.varied_stacks import every_aws_plan


def _unnamed(where: str, pod) -> list[str]:
    _, spec = pod
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return [
        f"{where}: container {c.get('name')}"
        for c in containers
        if not isinstance(c.get("image"), str) or not c["image"] or c["image"] == "None"
    ]


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_container_of_every_stack_names_its_image(stack):
    assert [u for where, _, pod in declared_pods(stack) for u in _unnamed(where, pod)] == []


def test_every_container_of_every_aws_and_canary_variant_names_its_image():
    plans = [*every_aws_plan(), *((f"{s}-roll", canary_plan(s)) for s in CANARY_STACKS)]
    unnamed = [
        f"{name}: {u}"
        for name, plan in plans
        for obj in plan.kubernetes_objects()
        for pod in pod_templates(obj)
        for u in _unnamed(f"{obj['kind']} {obj['metadata']['name']}", pod)
    ]
    assert unnamed == []
