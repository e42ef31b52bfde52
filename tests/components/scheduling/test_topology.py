"""Kueue topology-aware scheduling as pure builders (components/scheduling/topology.py): the
Topology per family of pools, the closest network level, the pod-set annotation, and the
command that labels an existing cluster's nodes. Kueue's admission by these objects is modelled
in tests/controllers/test_tas_rules.py."""

from __future__ import annotations

import pytest

from components.scheduling.topology import (
    closest_level,
    label_command,
    placement,
    topology,
    topology_objects,
)
from tests.conftest import STACKS, stack_config
from tests.helpers import crds

# EC2 instance topology as EKS labels nodes (the module's docstring): network-node-layer-1 is the
# broadest; p5 and p4d report three layers, the shipped stacks' Topology.
AWS_LEVELS = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
    "kubernetes.io/hostname",
)


def test_a_topology_lists_its_levels_broadest_first_and_validates():
    obj = topology("aws-network-3-layers", AWS_LEVELS)
    assert obj == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "aws-network-3-layers"},
        "spec": {"levels": [{"nodeLabel": label} for label in AWS_LEVELS]},
    }
    assert crds.errors(obj) == []


def test_the_closest_level_is_the_one_just_above_the_host():
    assert closest_level(AWS_LEVELS) == "topology.k8s.aws/network-node-layer-3"
    assert closest_level(("kubernetes.io/hostname",)) == "kubernetes.io/hostname"


def test_the_label_command_names_every_level_but_the_kubelets_own():
    # kubectl label takes key=value pairs; kubernetes.io/hostname is set by the kubelet.
    levels = ("example.com/spine", "example.com/rack", "kubernetes.io/hostname")
    assert label_command(levels) == (
        "kubectl label node <node> example.com/spine=<spine> example.com/rack=<rack>"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_every_stacks_topologies_validate_and_end_at_the_host(stack):
    """Kueue v0.19.2's Topology schema allows kubernetes.io/hostname only as the lowest level."""
    found = topology_objects(stack_config(stack))
    assert len({t["metadata"]["name"] for t in found}) == len(found)
    for obj in found:
        assert crds.errors(obj) == [], obj
        labels = [level["nodeLabel"] for level in obj["spec"]["levels"]]
        assert labels[-1] == "kubernetes.io/hostname"
        assert "kubernetes.io/hostname" not in labels[:-1]


@pytest.mark.parametrize("stack", STACKS)
def test_every_pool_with_a_topology_prefers_its_closest_level_and_others_ask_nothing(stack):
    # Kueue "Run Workloads with Topology-Aware Scheduling": the pod-set annotations
    # kueue.x-k8s.io/podset-preferred-topology and kueue.x-k8s.io/podset-required-topology.
    cfg = stack_config(stack)
    levels = {
        t["metadata"]["name"]: [v["nodeLabel"] for v in t["spec"]["levels"]]
        for t in topology_objects(cfg)
    }
    every_level = {label for labels in levels.values() for label in labels}
    for pool in cfg.gpu_pools:
        preferred = placement(cfg, pool)
        assert set(preferred) <= {"kueue.x-k8s.io/podset-preferred-topology"}
        if preferred:
            assert preferred["kueue.x-k8s.io/podset-preferred-topology"] in every_level
            required = placement(cfg, pool, required=True)
            assert set(required) == {"kueue.x-k8s.io/podset-required-topology"}


def test_a_level_the_pool_does_not_have_is_refused_naming_the_pool_and_its_levels():
    cfg = stack_config("prod")
    pool = next(p for p in cfg.gpu_pools if p.name == "h100-block")
    with pytest.raises(ValueError, match=r"not one of pool h100-block's: topology\.k8s\.aws/"):
        placement(cfg, pool, level="example.com/rack")
    assert placement(cfg, pool, required=True, level="topology.k8s.aws/network-node-layer-2") == {
        "kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-2"
    }
