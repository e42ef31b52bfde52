"""A training pod fits one node of its pool (model/config/pod_fit.py): every request the job
builder derives from the config, held against what one node offers, on every pool of every
stack; and a stack whose pod could not fit is refused before anything is declared, naming the
stack file, the key path, the value and what is valid (a pod asking 320 CPUs of a 256-CPU node
planned, and the blocking self-test then waited until `pulumi up` timed out)."""

from __future__ import annotations

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import resources
from tests.conftest import STACKS, stack_config
from tests.helpers.bad_stacks import assert_refused, case, existing, group
from tests.helpers.instance_facts import FACTS
from tests.helpers.selftest_stacks import A100_POOL, LAB
from tests.helpers.sharing_stacks import teams_config

GIB = 2**30
# Quantity suffixes as Kubernetes reads them (apimachinery pkg/api/resource/quantity.go).
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
# The kubelet's default hard eviction threshold (Kubernetes docs, "Node-pressure Eviction":
# memory.available<100Mi) and the CPUs the platform leaves to DaemonSets on a GPU node
# (docs/gpu-nodes.md; the onprem stack file: "16 for the kubelet's reservation and the
# DaemonSets").
EVICTION_BYTES = 100 * 2**20


def amount(value) -> float:
    text = str(value)
    if text.endswith("m"):
        return int(text[:-1]) / 1000
    for suffix, factor in BINARY.items():
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) * factor
    return float(text)


def node_offers(stack, pool) -> list[tuple[str, dict[str, float]]]:
    """What one node of `pool` offers pods, from outside the code under test: on AWS each
    instance type's documented vCPUs and memory (tests/helpers/instance_facts.py) less the
    stack's kubelet reservations; on an existing cluster the node size the stack states.
    `stack`: a shipped stack's name, or a config."""
    cfg = stack_config(stack) if isinstance(stack, str) else stack
    if cfg.provider != "aws":
        flavor = cfg.scheduling.flavor(pool.name)
        offer = {"nvidia.com/gpu": pool.gpus_per_node}
        if flavor.cpus_per_node is not None:
            offer["cpu"] = flavor.cpus_per_node
        if flavor.memory_gib_per_node is not None:
            offer["memory"] = flavor.memory_gib_per_node * GIB
        return [(pool.name, offer)]
    (node_group,) = [g for g in cfg.gpu_node_groups if g.name == pool.name]
    kubelet = node_group.kubelet
    reserved = [kubelet.system_reserved, kubelet.kube_reserved]
    found = []
    for name in node_group.instance_types:
        facts = FACTS[name]
        hugepages = 2 * 2**20 * node_group.hugepages_2mi if node_group.efa else 0
        memory = facts.memory_gib * GIB - sum(amount(r.get("memory", 0)) for r in reserved)
        offer = {
            "cpu": facts.vcpus - sum(amount(r.get("cpu", 0)) for r in reserved),
            "memory": memory - EVICTION_BYTES - hugepages,
            "nvidia.com/gpu": facts.gpus,
            "hugepages-2Mi": hugepages,
            "vpc.amazonaws.com/efa": facts.efa_interfaces if node_group.efa else 0,
        }
        found.append((name, offer))
    return found


# Requests a node's capacity bounds; any other resource a pod asks for fails the sweep, so a
# new kind of request cannot pass unchecked. RDMA devices are shared by the rdma_mode's limit
# (the onprem stack: up to 63 pods a port), never one pod's to exhaust.
CHECKED = {"cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi", "vpc.amazonaws.com/efa"}


@pytest.mark.parametrize("stack", STACKS)
def test_the_biggest_training_pod_of_every_pool_fits_one_of_its_nodes(stack):
    cfg = stack_config(stack)
    checked = set()
    for pool in cfg.gpu_pools:
        spec = spec_for_pool(cfg, pool.name, name="fit", image="r/i:1", command=["t.py"])
        asked = resources(spec)["requests"]
        unknown = {r for r in asked if r not in CHECKED and not r.startswith("rdma/")}
        assert unknown == set(), f"{stack} {pool.name}: requests nothing checks: {unknown}"
        for node, offer in node_offers(stack, pool):
            for resource, value in asked.items():
                if resource in offer:
                    checked.add(resource)
                    assert amount(value) <= offer[resource], (stack, pool.name, node, resource)
    assert {"memory", "nvidia.com/gpu"} <= checked, stack


def slices_per_node(pool) -> int:
    """Pods of one GPU a node holds: a pod per GPU, or per replica of a shared GPU
    (gpu_sharing.replicas)."""
    shared = pool.sharing.mode in ("time-slicing", "mps")
    return pool.gpus_per_node * (pool.sharing.replicas if shared else 1)


EVERY_POOL_STACKS = [*STACKS, "teams"]


@pytest.mark.parametrize("stack", EVERY_POOL_STACKS)
def test_a_pod_on_every_gpu_of_a_node_and_one_on_all_of_them_fit_it(stack):
    """The memory a pod takes follows its pool's nodes: a node full of 1-GPU pods (or of pods
    on one replica of a shared GPU) fits it as the one pod on every GPU does, on every pool of
    every stack and of the two-team stack (tests/helpers/sharing_stacks.py)."""
    cfg = teams_config() if stack == "teams" else stack_config(stack)
    for pool in cfg.gpu_pools:
        if pool.sharing.mode == "mig":
            continue

        whole, one = (
            resources(spec_for_pool(cfg, pool.name, name="fit", image="r/i:1", command=["t.py"],
                                    **choices))["requests"]
            for choices in ({}, {"gpus_per_node": 1})
        )  # fmt: skip
        for node, offer in node_offers(cfg, pool):
            if "memory" not in offer:
                continue
            assert amount(whole["memory"]) <= offer["memory"], (stack, pool.name, node)
            held = slices_per_node(pool) * amount(one["memory"])
            assert held <= offer["memory"], (stack, pool.name, node, one["memory"])


def test_memory_per_gpu_follows_the_pools_nodes_not_a_fixed_16_gib():
    """Worked examples (AWS EC2 User Guide: p4d.24xlarge 1,152 GiB and 8 A100s, g6.2xlarge
    32 GiB and 1 L4, p5.48xlarge 2,048 GiB and 8 H100s, EFA's 5,128 hugepages of 2 MiB): less
    the kubelet's default 1 + 2 GiB, the 100 MiB eviction threshold, hugepages on EFA groups
    and 2 GiB for DaemonSets, shared out among the GPUs in whole GiB.
    p4d without EFA: (1152 - 3 - 0.1 - 2) / 8 = 143.4; with EFA: (... - 10.0) / 8 = 142.1;
    g6.2xlarge: 32 - 5.1 = 26.9; p5 with EFA: (2048 - 15.1) / 8 = 254.1."""
    teams = teams_config()

    def one_gpu(cfg, pool: str) -> str:
        spec = spec_for_pool(cfg, pool, name="m", image="r/i:1", command=["t.py"], gpus_per_node=1)
        return resources(spec)["requests"]["memory"]

    assert one_gpu(teams, "a100") == "143Gi"
    assert one_gpu(teams, "l4-spot") == "26Gi"
    assert one_gpu(stack_config("staging"), "a100-efa") == "142Gi"
    assert one_gpu(stack_config("prod"), "h100-ondemand") == "254Gi"


def lab(flavor: dict, **pool) -> dict:
    """The lab cluster with its pool of two 8-GPU A100 nodes (`pool`: fields set on it) and
    its flavor's node size."""
    return existing(
        existing={**LAB, "gpu_pools": [{**A100_POOL, **pool}]},
        scheduling={"flavors": [{"pool": "a100", **flavor}]},
    )


BAD = [
    # The case: 40 CPUs a GPU on an 8-GPU node of 256 CPUs asks 320.
    case(
        lab({"cpus_per_node": 256}, cpus_per_gpu=40),
        "gpu-platform:existing.gpu_pools[0].cpus_per_gpu",
        "320 CPUs of a 256-CPU node",
        "give 1 to 32",
        id="existing-cpus",
    ),
    case(
        lab({"memory_gib_per_node": 64}),
        "gpu-platform:existing.gpu_pools[0].gpus_per_node",
        "128 GiB of memory",
        "the node's 64 GiB",
        id="existing-memory",
    ),
    # g5.xlarge: 4 vCPUs, 16 GiB, one A10G (tests/helpers/instance_facts.py): 16 GiB for the
    # pod leaves nothing for the kubelet's 3 GiB of reservations.
    case(
        group(name="small", instance_types=["g5.xlarge"]),
        "gpu-platform:gpu_node_groups[0].instance_types",
        "g5.xlarge",
        "at least 16 GiB per GPU to spare",
        id="aws-memory",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_a_pod_bigger_than_its_node_is_refused_at_config_time(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
