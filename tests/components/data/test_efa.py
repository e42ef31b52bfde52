"""The EFA device plugin: pinned, only on stacks with an EFA group, only on EFA nodes (the
chart's nodeSelector AND its instance-type affinity), tolerating the GPU taint, and after the
system nodes."""

from __future__ import annotations

import re

import pytest

from components.data.efa import helm_values
from components.data.gpu_node_group import node_labels
from components.registry_mirror import mirrored_values
from model.catalog import CATALOG
from model.config import GpuNodeGroupSettings
from model.versions import CHARTS
from tests.conftest import AWS_STACKS, find, planned, stack_config
from tests.helpers.helm_values import defaults

RELEASE = "kubernetes:helm.sh/v3:Release"


def efa_releases(stack: str) -> list:
    return [r for r in planned(stack).of_type(RELEASE) if r.name == f"{stack}-efa-device-plugin"]


def test_chart_and_image_are_pinned():
    # shared/PINS.md: aws-efa-k8s-device-plugin v0.5.30 from the EKS charts repository, image
    # v0.5.20.
    chart = CHARTS["aws-efa-k8s-device-plugin"]
    assert (chart.repository, chart.version) == ("https://aws.github.io/eks-charts", "v0.5.30")
    assert helm_values([], "us-east-1")["image"]["tag"] == "v0.5.20"


@pytest.mark.parametrize(
    ("stack", "types"),
    [("dev", None), ("staging", ["p4d.24xlarge"]), ("prod", ["p5.48xlarge"]), ("onprem", None)],
)
def test_release_only_where_a_group_has_efa_and_only_for_its_types(stack, types):
    releases = efa_releases(stack)
    if types is None:
        assert releases == []
        return
    (release,) = releases
    assert release.inputs["namespace"] == "kube-system"
    labels = release.inputs["values"]["supportedInstanceLabels"]
    assert labels == {"keys": ["node.kubernetes.io/instance-type"], "values": types}


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_plugin_selects_every_efa_node_and_no_other(stack):
    selector = efa_releases(stack)[0].inputs["values"]["nodeSelector"]
    assert selector == {"gpu-platform/fabric": "efa"}
    cfg = stack_config(stack)
    for group in cfg.gpu_node_groups:
        labels = node_labels(group, cfg.gpu_operator.mig_strategy)
        selected = all(labels.get(k) == v for k, v in selector.items())
        assert selected == group.efa, group.name


def tolerates(toleration: dict, taint: dict) -> bool:
    """Kubernetes "Taints and Tolerations": same key and effect, and Exists or an equal value."""
    if toleration["key"] != taint["key"] or toleration.get("effect") not in (None, taint["effect"]):
        return False
    return toleration.get("operator", "Equal") == "Exists" or toleration["value"] == taint["value"]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_plugin_tolerates_the_gpu_taint(stack):
    tolerations = efa_releases(stack)[0].inputs["values"]["tolerations"]
    # The taint every GPU node group carries (components/vocabulary.GPU_TAINT, written out here).
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    assert any(tolerates(t, taint) for t in tolerations)


def test_every_efa_type_in_the_catalog_is_one_the_pinned_chart_knows():
    """FACTS.md: a plugin release must know the instance types in use; narrowing
    supportedInstanceLabels to a type the chart's own list lacks would be a guess."""
    known = set(
        defaults("aws-efa-k8s-device-plugin", "v0.5.30")["supportedInstanceLabels"]["values"]
    )
    efa_types = {name for name, row in CATALOG.items() if row.supports_efa}
    assert efa_types
    assert efa_types <= known, sorted(efa_types - known)


def test_mixed_efa_groups_list_each_type_once_sorted():
    groups = [
        GpuNodeGroupSettings(name="a", instance_types=["p5.48xlarge"], efa=True),
        GpuNodeGroupSettings(name="b", instance_types=["p4d.24xlarge"], efa=True),
        GpuNodeGroupSettings(name="c", instance_types=["p5.48xlarge"], efa=True),
        GpuNodeGroupSettings(name="d", instance_types=["g5.2xlarge"]),
    ]
    values = helm_values(groups, "us-east-1")["supportedInstanceLabels"]["values"]
    assert values == ["p4d.24xlarge", "p5.48xlarge"]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_plugin_waits_for_the_system_nodes(stack):
    plan = planned(stack)
    (release,) = efa_releases(stack)
    system = find(plan, "aws:eks/nodeGroup:NodeGroup", f"{stack}-system").urn
    assert system in release.dependencies


# EKS user guide, "View Amazon container image registries for Amazon EKS add-ons": the
# registry of each region (a few regions have their own account).
REGISTRIES = {
    "us-east-1": "602401143452.dkr.ecr.us-east-1.amazonaws.com",
    "eu-west-1": "602401143452.dkr.ecr.eu-west-1.amazonaws.com",
    "eu-south-2": "455263428931.dkr.ecr.eu-south-2.amazonaws.com",
    "me-central-1": "759879836304.dkr.ecr.me-central-1.amazonaws.com",
    "us-gov-west-1": "013241004608.dkr.ecr.us-gov-west-1.amazonaws.com",
}


@pytest.mark.parametrize(("region", "registry"), REGISTRIES.items())
def test_the_plugin_image_comes_from_the_eks_registry_of_the_stacks_region(region, registry):
    """Issue 26: an eu-west-1 stack pulled the plugin from us-west-2's registry, the chart's
    default (values.yaml of v0.5.30), across regions."""
    image = helm_values([], region)["image"]
    assert image["repository"] == f"{registry}/eks/aws-efa-k8s-device-plugin"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_efa_stack_pulls_the_plugin_from_its_own_region(stack):
    cfg = stack_config(stack)
    own = re.compile(rf"\d{{12}}\.dkr\.ecr\.{re.escape(cfg.aws.region)}\.amazonaws\.com/eks/")
    for release in efa_releases(stack):
        repository = release.inputs["values"]["image"]["repository"]
        mirror = cfg.images.registry_mirror
        assert repository.startswith(f"{mirror}/eks/") if mirror else own.match(repository), (
            repository
        )


def test_a_registry_mirror_still_replaces_the_regional_registry():
    values = helm_values([], "eu-west-1")
    mirrored = mirrored_values("aws-efa-k8s-device-plugin", values, "registry.example:5000/m")
    assert mirrored["image"] == {
        "repository": "registry.example:5000/m/eks/aws-efa-k8s-device-plugin",
        "tag": "v0.5.20",
    }
