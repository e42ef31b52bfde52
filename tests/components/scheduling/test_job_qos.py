"""Training pods run in the Guaranteed QoS class, on whole cores the static CPU manager pins
(tests/controllers/qos.py models both rules from the kubelet's source), on every stack: every
job the builder renders (the self-test and its schedule, every recipe, a team's job on every
pool and in every namespace, a bursting team's job on its worker's pools), each of its
containers, init containers included; and what it requests fits one node of its pool."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from model.config import GpuPool, PlatformConfig, parse_config
from tests.conftest import AWS_STACKS, STACKS, planned, rendered, stack_config
from tests.controllers.kueue_admission import quantity
from tests.controllers.qos import containers, exclusive_cpus, qos_class
from tests.helpers import jobsets
from tests.helpers.rendered_jobs import burst_jobs, platform_jobs, submitted_jobs, workers_of
from tests.helpers.varied_stacks import DRA_CONFIGS, DRA_STACK

# The kubelet's default hard eviction threshold, kept out of allocatable memory (Kubernetes docs,
# "Reserve Compute Resources for System Daemons": memory.available<100Mi).
EVICTION_HARD_MEMORY = 100 * 2**20


def pod(cpu=None, memory="16Gi", limits=None, init=None) -> dict[str, Any]:
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory}.items() if v is not None}
    resources = {"requests": requests, "limits": limits or dict(requests)}
    body: dict[str, Any] = {"containers": [{"name": "c", "resources": resources}]}
    if init is not None:
        body["initContainers"] = [{"name": "i", "resources": init}]
    return body


# ------------------------------------------------------------------ the rules, alone


def test_requests_equal_to_limits_for_cpu_and_memory_are_guaranteed():
    assert qos_class(pod(cpu="8")) == "Guaranteed"
    # A limit alone: the API server defaults the request to it.
    assert qos_class(pod(cpu=None, memory=None, limits={"cpu": "2", "memory": "1Gi"})) == (
        "Guaranteed"
    )


def test_no_cpu_or_a_cpu_limit_above_the_request_is_burstable():
    """What today's main renders: memory and GPUs with requests = limits, and no CPU at all."""
    assert qos_class(pod(cpu=None)) == "Burstable"
    assert qos_class(pod(cpu="4", limits={"cpu": "8", "memory": "16Gi"})) == "Burstable"


def test_an_init_container_without_limits_makes_the_pod_burstable():
    assert qos_class(pod(cpu="8", init={"requests": {"cpu": "100m"}})) == "Burstable"
    same = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert qos_class(pod(cpu="8", init=same)) == "Guaranteed"


def test_nothing_requested_is_best_effort():
    assert qos_class({"containers": [{"name": "c"}]}) == "BestEffort"


def test_only_integer_cpus_of_a_guaranteed_pod_are_pinned():
    for cpu, pinned in (("8", 8), ("250m", 0), ("1500m", 0), ("2000m", 2)):
        body = pod(cpu=cpu)
        assert exclusive_cpus(body, body["containers"][0]) == pinned, cpu
    burstable = pod(cpu="4", limits={"cpu": "8", "memory": "16Gi"})
    assert exclusive_cpus(burstable, burstable["containers"][0]) == 0


# ------------------------------------------------------------------ over every stack


def every_job(stack: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(what, the stack whose pools it runs on, the Job)."""
    found = [(j["metadata"]["name"], stack, j) for j in platform_jobs(stack)]
    found += [(what, stack, j) for what, j in submitted_jobs(stack)]
    for worker in workers_of(stack):
        found += [(what, worker, j) for what, j in burst_jobs(stack, worker)]
    return found


def pool_of(cfg: PlatformConfig, pod_spec: dict[str, Any]) -> GpuPool:
    selector = pod_spec.get("nodeSelector", {}).items()
    (pool,) = [p for p in cfg.gpu_pools if p.node_selector.items() <= selector]
    return pool


def daemonset_cpu(stack: str, resource: str = "cpu") -> Fraction:
    """CPU (or `resource`) every DaemonSet the stack declares or its charts render requests,
    whether or not it lands on GPU nodes: an upper bound of what one node's DaemonSets take.
    Not the node-join check's: it runs only on a node labelled `gpu-platform/node-join=pending`
    (contract/node_join.py), which takes no job, and its pod goes once the label changes."""
    objects = [*planned(stack).kubernetes_objects(), *(o for _, o in rendered(stack).objects())]
    total = Fraction(0)
    for obj in objects:
        if obj.get("kind") != "DaemonSet":
            continue
        spec = obj["spec"]["template"]["spec"]
        if (spec.get("nodeSelector") or {}).get("gpu-platform/node-join") == "pending":
            continue
        cpu = [quantity(c.get("resources", {}).get("requests", {}).get(resource, 0))
               for c in spec.get("containers", [])]  # fmt: skip
        init = [quantity(c.get("resources", {}).get("requests", {}).get(resource, 0))
                for c in spec.get("initContainers", [])]  # fmt: skip
        total += max(sum(cpu), *init, Fraction(0))
    return total


def node_budget(stack: str, pool: GpuPool) -> tuple[int | None, int | None]:
    """CPUs and memory (bytes) a training pod can have on the pool's smallest node: the type's
    vCPUs less the whole CPUs the kubelet reserves (the static policy's `numReservedCPUs`, the
    ceiling of system + kube reserved: pkg/kubelet/cm/cpumanager/cpu_manager.go) less the
    DaemonSets' requests; memory less both reservations and the eviction threshold. On an
    existing cluster the node's CPUs and memory where the flavor gives them (the kubelet's
    reservations are the admin's)."""
    cfg = stack_config(stack)
    if not pool.instance_types:
        flavor = cfg.scheduling.flavor(pool.name)
        memory = flavor.memory_gib_per_node
        return flavor.cpus_per_node, memory * 2**30 if memory else None
    (group,) = [g for g in cfg.gpu_node_groups if g.name == pool.name]
    kubelet = group.kubelet
    reserved = [
        quantity(r.get("memory", 0)) for r in (kubelet.system_reserved, kubelet.kube_reserved)
    ]
    cpus = min(r.vcpus for r in group.instances) - kubelet.reserved_cpus
    memory = min(r.memory_gib for r in group.instances) * 2**30 - sum(reserved)
    return math.floor(cpus - daemonset_cpu(stack)), int(memory - EVICTION_HARD_MEMORY)


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_job_is_guaranteed_on_whole_pinned_cores_that_fit_its_pool(stack):
    jobs = every_job(stack)
    assert jobs, f"{stack}: no job rendered"
    problems = []
    for what, where, job in jobs:
        (spec,) = jobsets.pod_specs(job)
        pool = pool_of(stack_config(where), spec)
        if qos_class(spec) != "Guaranteed":
            problems.append(f"{what}: {qos_class(spec)}")
            continue
        cpus, memory = node_budget(where, pool)
        for container in containers(spec):
            requests = container["resources"]["requests"]
            cpu, mem = quantity(requests["cpu"]), quantity(requests["memory"])
            if pool.sharing.mode == "none" and exclusive_cpus(spec, container) < 1:
                problems.append(f"{what}: {container['name']} gets no CPU of its own ({cpu})")
            if cpus is not None and cpu > cpus:
                problems.append(f"{what}: {cpu} CPUs on {pool.name}, whose nodes leave {cpus}")
            if memory is not None and mem > memory:
                problems.append(f"{what}: {mem} bytes on {pool.name}, whose nodes leave {memory}")
    assert problems == []


def trainer(cfg: PlatformConfig, pool: str, **choices: Any) -> dict[str, Any]:
    job = render(spec_for_pool(cfg, pool, name="t", image="i", command=["x"], **choices))[0]
    return jobsets.trainer(job)["resources"]


def test_a_p5_pod_takes_23_cores_a_gpu():
    """p5.48xlarge: 192 vCPUs and 8 H100s (AWS, "Amazon EC2 P5 instances"); the GPU nodes'
    default kubelet reserves 500m + 500m, one whole CPU, and two are kept for DaemonSets:
    (192 - 1 - 2) // 8 = 23 cores a GPU, 184 for the whole node, 23 x 2 for a 2-GPU pod. Memory:
    254 GiB a GPU (tests/components/scheduling/test_training_job.py), 2,032 for the node."""
    cfg = stack_config("prod")
    whole = trainer(cfg, "h100-ondemand")
    assert whole["requests"] == whole["limits"]
    assert (whole["requests"]["cpu"], whole["requests"]["memory"]) == ("184", "2032Gi")
    assert trainer(cfg, "h100-ondemand", gpus_per_node=2)["limits"]["cpu"] == "46"


def test_a_p4d_pod_takes_11_cores_a_gpu():
    """p4d.24xlarge: 96 vCPUs, 8 A100s (AWS, "Amazon EC2 P4 instances"): (96 - 1 - 2) // 8."""
    assert trainer(stack_config("staging"), "a100-efa")["limits"]["cpu"] == "88"


def test_a_time_sliced_pod_takes_its_replicas_share_in_millicores():
    """dev's pool mixes g6e.xlarge (4 vCPUs, 1 L40S: (4 - 1 - 2) // 1 = 1 core) with larger
    types and time-slices each GPU four ways: a pod on one replica takes 250m, Guaranteed on the
    shared CPUs, and four such pods fit the one core."""
    assert trainer(stack_config("dev"), "spot-small")["limits"]["cpu"] == "250m"


def test_an_existing_pool_without_cpus_per_gpu_stays_burstable():
    """The documented fallback: with no cores per GPU the pod requests no CPU (docs/training.md)."""
    cfg = stack_config("onprem")
    assert trainer(cfg, "a100")["limits"]["cpu"] == "240"
    pools = [p.model_copy(update={"cpus_per_gpu": None}) for p in cfg.existing.gpu_pools]
    bare = cfg.model_copy(update={"existing": cfg.existing.model_copy(update={"gpu_pools": pools})})
    assert "cpu" not in trainer(bare, "a100")["limits"]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_the_daemonsets_fit_in_the_cpus_kept_for_them(stack):
    """Two whole CPUs are kept for DaemonSets (model/config/nodes.DAEMONSET_CPUS). The ones the
    plan renders take at most one, leaving the other for those it cannot see: the EKS managed
    add-ons' (VPC CNI, kube-proxy, Pod Identity agent, EBS CSI node, node monitoring agent) and
    the GPU Operator's operands, which its ClusterPolicy creates at run time."""
    assert daemonset_cpu(stack) <= 1, float(daemonset_cpu(stack))


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_the_daemonsets_fit_in_the_memory_kept_for_them(stack):
    """Two GiB are kept for DaemonSets on every GPU node (model/config/nodes.DAEMONSET_MEMORY_GIB)
    out of what training pods take; the ones the plan renders request at most one, leaving the
    other for those it cannot see, as with CPUs above."""
    assert daemonset_cpu(stack, "memory") <= 2**30, float(daemonset_cpu(stack, "memory"))


def test_cpu_quantities_read_as_kubernetes_reads_them():
    from model.config.base import cpu_quantity

    assert [cpu_quantity(q) for q in ("500m", "2", "1.5", "1e3", ".5", "1k")] == [
        Fraction(1, 2), 2, Fraction(3, 2), 1000, Fraction(1, 2), 1000]  # fmt: skip


def test_every_job_passes_what_the_selftest_check_reads():
    """The builder's container carries each variable the self-test's inventory.cpu_pinning
    reads (bootstrap/selftest/inventory.py; the image side's tests import nothing of the
    program, so the names are the contract's literals), from the downward API."""
    cfg = stack_config("prod")
    (job,) = render(spec_for_pool(cfg, cfg.gpu_pools[0].name, name="t", image="i", command=["x"]))
    trainer = jobsets.trainer(job)
    fields = {
        e["name"]: e["valueFrom"]["resourceFieldRef"]
        for e in trainer["env"]
        if "resourceFieldRef" in e.get("valueFrom", {})
    }
    assert fields == {
        "CPU_REQUEST_MILLICORES": {"resource": "requests.cpu", "divisor": "1m"},
        "CPU_LIMIT_MILLICORES": {"resource": "limits.cpu", "divisor": "1m"},
        "MEMORY_REQUEST_MIB": {"resource": "requests.memory", "divisor": "1Mi"},
        "MEMORY_LIMIT_MIB": {"resource": "limits.memory", "divisor": "1Mi"},
    }


@pytest.mark.parametrize("allocation", ["device_plugin", "dra"])
def test_a_mig_slice_is_sized_as_a_slice_whether_the_plugin_or_a_claim_hands_it_out(allocation):
    """A pod's CPUs and memory are its share of the node whatever names the share: a DRA
    pool's slices are charged to Kueue under the profile's quota name, not `nvidia.com/gpu`,
    and the sizing once read that name and sized each slice as a whole GPU (7 slices: 161
    CPUs, more than a p5.48xlarge has). p5.48xlarge: 8 GPUs; strategy single cuts each into
    seven 1g slices (NVIDIA MIG User Guide, H100 profiles); the pool's 23 CPUs a GPU make
    23 x 8 / 56 of a CPU a slice."""
    values = {k.split(":", 1)[1]: v for k, v in DRA_CONFIGS[DRA_STACK].items()}
    values["gpu_operator"] = {"mig_strategy": "single"}
    groups = [dict(g) for g in values["gpu_node_groups"]]
    for g in groups:
        if g["name"] == "h100-mig":
            g["gpu_allocation"] = allocation
    values["gpu_node_groups"] = groups
    cfg = parse_config(values, DRA_STACK)
    image = "registry.example.com/t@sha256:" + "a" * 64
    one, seven = (
        jobsets.trainer(
            render(spec_for_pool(cfg, "h100-mig", name="s", image=image, command=["x"], **size))[-1]
        )["resources"]["requests"]
        for size in ({"gpus_per_node": 1}, {"gpus_per_node": 7})
    )
    assert one["cpu"] == "3285m"
    assert seven["cpu"] == "23000m"  # a shared slice is sized in millicores
