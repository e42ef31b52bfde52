"""Kueue topology-aware scheduling (components/scheduling/topology.py): the Topology per family
of pools, the closest network level, the pod-set annotation a job asks with, and the command
that labels an existing cluster's nodes; the flavors and jobs every stack declares with them.
Kueue's admission by these objects is modelled in tests/controllers/test_tas_rules.py."""

from __future__ import annotations

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.topology import (
    closest_level,
    label_command,
    placement,
    topology,
    topology_objects,
)
from components.scheduling.training_job import render
from tests.conftest import STACKS, stack_config
from tests.helpers import crds, jobsets
from tests.helpers.aws_topology import THREE_LAYERS
from tests.helpers.kueue_objects import objects


def test_a_topology_lists_its_levels_broadest_first_and_validates():
    obj = topology("aws-network-3-layers", tuple(THREE_LAYERS))
    assert obj == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "aws-network-3-layers"},
        "spec": {"levels": [{"nodeLabel": label} for label in tuple(THREE_LAYERS)]},
    }
    assert crds.errors(obj) == []


def test_the_closest_level_is_the_one_just_above_the_host():
    assert closest_level(tuple(THREE_LAYERS)) == "topology.k8s.aws/network-node-layer-3"
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


@pytest.mark.parametrize(
    ("stack", "pool", "levels"),
    [
        ("burst", "h100-spot", THREE_LAYERS),
        ("staging", "a100-efa", THREE_LAYERS),
        # onprem names its levels only once they are on the nodes:
        # tests/controllers/test_tas_rules.py.
    ],
)
def test_multi_node_pools_name_a_topology_with_the_levels_their_nodes_carry(stack, pool, levels):
    flavor = objects(stack, "ResourceFlavor")[pool]
    topology = objects(stack, "Topology")[flavor["spec"]["topologyName"]]
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == levels
    assert not crds.errors(topology)
    assert not crds.errors(flavor)


@pytest.mark.parametrize("stack", STACKS)
def test_every_multi_node_pool_whose_nodes_carry_topology_labels_has_a_topology(stack):
    from components.scheduling.topology import pool_topology

    cfg = stack_config(stack)
    flavors = objects(stack, "ResourceFlavor")
    topologies = objects(stack, "Topology")
    for pool in cfg.gpu_pools:
        named = pool_topology(cfg, pool)
        if pool.fabric == "tcp":
            assert named is None
            continue
        if named is None:
            continue
        assert flavors[pool.name]["spec"]["topologyName"] in topologies, pool.name


def test_a_pool_of_types_without_topology_labels_gets_no_topology():
    # dev's spot group: g5 / g6e, no EFA: jobs there stay on one node.
    assert not objects("dev", "Topology")
    assert all("topologyName" not in f["spec"] for f in objects("dev", "ResourceFlavor").values())


def test_a_multi_node_job_prefers_one_domain_of_the_closest_network_level():
    # Kueue "Run Workloads with Topology-Aware Scheduling" (v0.19.2): the pod template's
    # annotation kueue.x-k8s.io/podset-preferred-topology names the level; on a JobSet, the
    # replicatedJob's pod template (Kueue jobset_webhook.go, validateTopologyRequest).
    cfg = stack_config("burst")
    spec = spec_for_pool(
        cfg, "h100-spot", name="llm", image="registry.example/llm:1", command=["t.py"], nodes=4
    )
    (job,) = render(spec)
    annotations = jobsets.pod_template(job)["metadata"]["annotations"]
    assert annotations == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"
    }
    assert "annotations" not in job["metadata"]
    jobsets.validate(job, cfg.cluster.kubernetes_version)


def test_a_job_may_require_its_domain_instead():
    from components.scheduling.topology import placement

    cfg = stack_config("burst")
    pool = next(p for p in cfg.gpu_pools if p.name == "h100-spot")
    wanted = placement(cfg, pool, required=True, level="topology.k8s.aws/network-node-layer-2")
    spec = spec_for_pool(
        cfg, "h100-spot", name="llm", image="i:1", command=["t.py"], nodes=4, placement=wanted
    )
    annotations = jobsets.pod_template(render(spec)[-1])["metadata"]["annotations"]
    assert annotations == {
        "kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-2"
    }
    with pytest.raises(ValueError, match="not one of pool h100-spot's"):
        placement(cfg, pool, level="rack")
