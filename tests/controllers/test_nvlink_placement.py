"""Topology-aware placement inside one GB200 NVL72 domain (issue 41 §2): Kueue's TAS model
(tests/controllers/tas.py) over the rendered objects of the GB200 stack
(tests/helpers/varied_stacks.py) and the nodes of its pool as EKS and GPU Feature Discovery
label them (tests/helpers/box_nodes.py): a job that fits in one NVLink domain is kept in one,
and one of more nodes than a domain holds cannot ask for that."""

from __future__ import annotations

import dataclasses

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.topology import placement
from components.scheduling.training_job import render
from components.selftest.job import selftest_spec
from tests.controllers.tas import REQUIRED, Kueue, admission, node_from, pod_set
from tests.helpers.aws_topology import CLIQUE
from tests.helpers.box_nodes import pool_nodes
from tests.helpers.varied_stacks import GB200_POOL, gb200_config, gb200_plan

IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/train@sha256:" + "2" * 64
# EKS UltraServer page: 4 GPUs a p6e-gb200.36xlarge node.
GPUS = 4


# The block's nodes are all the pool ever has (min = max = 18): the tests place onto them as
# they exist once provisioning has answered.


def kueue() -> Kueue:
    return Kueue(tuple(gb200_plan().kubernetes_objects()))


def nodes(cliques: int = 1):
    """The pool's nodes as the box lays them out, `cliques` UltraServers' worth of 18."""
    plan, cfg = gb200_plan(), gb200_config()
    found = pool_nodes(cfg, [r.as_json() for r in plan.resources], plan.kubernetes_objects())
    pool = [n for n in found if n.pool == GB200_POOL]
    extra = [
        dataclasses.replace(
            n, name=f"{n.name}-{c}", labels={**n.labels, CLIQUE: f"{n.labels[CLIQUE]}-{c}"}
        )
        for c in range(1, cliques)
        for n in pool
    ]
    return [node_from(n.as_object(), GPUS) for n in [*pool, *extra]]


def job(count: int) -> dict:
    return render(
        spec_for_pool(
            gb200_config(), GB200_POOL, name="nvl", image=IMAGE, command=["-m", "x"], nodes=count
        )
    )[0]


def test_the_gb200_pools_topology_has_the_clique_just_above_the_host():
    (topology,) = [o for o in gb200_plan().kubernetes_objects() if o["kind"] == "Topology"]
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3",
        "nvidia.com/gpu.clique",
        "kubernetes.io/hostname",
    ]


def test_the_plan_says_who_puts_the_clique_on_the_nodes():
    assert gb200_plan().outputs["topology"][GB200_POOL]["labelled_by"] == (
        "EKS (instance topology labels), GPU Feature Discovery (the NVLink clique) and the "
        "kubelet (hostname)"
    )


@pytest.mark.parametrize("count", [2, 9, 18])
def test_a_job_that_fits_one_nvl72_domain_requires_it_and_is_admitted(count):
    pods = pod_set(job(count))
    assert pods.annotations == {REQUIRED: "nvidia.com/gpu.clique"}
    assert admission(kueue(), pods, nodes(), provisioned=True) is None


def test_a_domain_sized_job_waits_rather_than_split_over_two_domains():
    # Two UltraServers of 9 (u-p6e-gb200x36, EKS UltraServer page): 18 nodes, no domain of 18.
    halves = [
        dataclasses.replace(n, labels={**n.labels, CLIQUE: f"c.{i // 9}"})
        for i, n in enumerate(nodes())
    ]
    why = admission(kueue(), pod_set(job(18)), halves, provisioned=True)
    assert why is not None and "no one domain of nvidia.com/gpu.clique holds 18 pods" in why


def test_a_placement_past_one_domain_spans_domains_under_the_closest_network_node():
    # The job builder refuses such a job (one ComputeDomain holds 18 nodes:
    # tests/components/scheduling/test_compute_domains.py); the placement alone still answers.
    cfg = gb200_config()
    assert placement(cfg, cfg.gpu_pools[0], nodes=19) == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"
    }


def test_a_19_node_job_cannot_require_one_nvlink_domain():
    cfg = gb200_config()
    with pytest.raises(ValueError) as caught:
        placement(cfg, cfg.gpu_pools[0], required=True, level=CLIQUE, nodes=19)
    assert "a job of 19 nodes cannot be kept in one NVLink domain of pool nvl72" in str(
        caught.value
    )
    assert "at most 18 nodes per IMEX domain" in str(caught.value)
    # And Kueue would not have placed it: no domain of the clique holds 19.
    nineteen = dataclasses.replace(pod_set(job(18)), count=19)
    required = dataclasses.replace(nineteen, annotations={REQUIRED: CLIQUE})
    why = admission(kueue(), required, nodes(cliques=2), provisioned=True)
    assert why is not None and "the largest holds 18" in why


# kueue.x-k8s.io/podset-preferred-topology (Kueue v0.19.2 apis/kueue/v1beta2/topology_types.go).
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


def compute_domain_renders() -> list[tuple[str, list[dict]]]:
    """Everything the GB200 stack renders that comes with a ComputeDomain: the self-test's run
    and a job of every size from 2 nodes to 18."""
    cfg = gb200_config()
    renders = [("selftest", render(selftest_spec(cfg)))]
    renders += [
        (f"{count} nodes", render(spec_for_pool(cfg, GB200_POOL, name="nvl", image=IMAGE,
                                                 command=["-m", "x"], nodes=count)))
        for count in range(2, 19)
    ]  # fmt: skip
    return [
        (what, objs) for what, objs in renders if any(o["kind"] == "ComputeDomain" for o in objs)
    ]


def test_every_pod_of_a_compute_domain_job_is_kept_in_one_nvlink_clique():
    """A ComputeDomain spans whatever cliques its pods land in: each clique's IMEX daemons list
    only that clique's peers (dra-driver-nvidia-gpu v0.4.1 cmd/compute-domain-daemon/main.go
    writeDaemonsConfig; cmd/compute-domain-daemon/dnsnames.go; one ComputeDomainClique
    `<cdUID>.<cliqueID>` each, cmd/compute-domain-daemon/cdclique.go), so pods in two cliques
    get channels but no NVLink between them. Every pod set of every such job requires one
    domain of nvidia.com/gpu.clique from Kueue."""
    renders = compute_domain_renders()
    assert len(renders) >= 17
    for what, objs in renders:
        channels = {
            o["spec"]["channel"]["resourceClaimTemplate"]["name"]
            for o in objs if o["kind"] == "ComputeDomain"
        }  # fmt: skip
        (jobset,) = [o for o in objs if o["kind"] == "JobSet"]
        for replicated in jobset["spec"]["replicatedJobs"]:
            pod = replicated["template"]["spec"]["template"]
            claimed = {c.get("resourceClaimTemplateName") for c in pod["spec"]["resourceClaims"]}
            assert channels <= claimed, what
            annotations = pod["metadata"].get("annotations") or {}
            assert annotations.get(REQUIRED) == "nvidia.com/gpu.clique", (what, annotations)
            assert PREFERRED not in annotations, what


@pytest.mark.parametrize(
    "asked",
    [
        {},
        {PREFERRED: "nvidia.com/gpu.clique"},
        {PREFERRED: "topology.k8s.aws/network-node-layer-3"},
        {REQUIRED: "topology.k8s.aws/network-node-layer-3"},
        {REQUIRED: "kubernetes.io/hostname"},
    ],
    ids=["none", "preferred-clique", "preferred-layer-3", "required-layer-3", "required-host"],
)
def test_a_compute_domain_job_placed_other_than_in_one_clique_is_refused(asked):
    spec = spec_for_pool(
        gb200_config(), GB200_POOL, name="nvl", image=IMAGE, command=["-m", "x"], nodes=4,
        placement=asked,
    )  # fmt: skip
    with pytest.raises(ValueError) as caught:
        render(spec)
    assert str(caught.value).startswith(f"nvl: placement {asked or 'none'}, but a job with a ")
    assert "must keep every pod in one nvidia.com/gpu.clique" in str(caught.value)
    assert "valid: {'kueue.x-k8s.io/podset-required-topology': 'nvidia.com/gpu.clique'}" in str(
        caught.value
    )
