"""Jobs on a DRA pool claim their GPUs (issue 41 §1): the job builder renders a
ResourceClaimTemplate of the job's own, which the pod lists in `spec.resourceClaims` and each GPU
container in `resources.claims`, with no `nvidia.com/gpu` request; every job the plan and
`python -m jobs` render on every DRA pool passes the controller models (Kueue's charging, the
references, Pod Security, QoS) and the API server's schema; jobs on device-plugin pools render
as before.

Literals: the claim shape of ../shared/PINS.md "Claim shapes" (dra-driver-nvidia-gpu v0.4.1
docs/install.md, demo/specs/quickstart/v1/gpu-test1.yaml: `resource.k8s.io/v1`,
`exactly: {deviceClassName: gpu.nvidia.com, count}`, ExactCount); the allocation mode Kueue
v0.19.2 charges (pkg/dra/claims.go countDevicesPerClass, PINS.md "DRA quota (0.19.2)"); the
p4d.24xlarge's 8 GPUs (EC2 accelerated computing instance types); the H100's smallest MIG
profile 1g.10gb (NVIDIA MIG User Guide, "Supported MIG Profiles")."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from components.scheduling.job_claims import claim_templates, pod_claims
from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from contract.env import TRAINING_JOB_POOL
from jobs.team import TeamJob, plan_job
from model.config import PlatformConfig, parse_config
from plan.model import Plan
from plan.render import render_plan
from tests.conftest import SHARED_HELM, STACKS, project_plan, stack_config, validate_kubernetes
from tests.controllers.kueue_admission import Kueue, admission_problems, manager_config_of
from tests.controllers.pod_security import pod_templates, violations
from tests.controllers.qos import qos_class
from tests.controllers.references import Cluster, Placed, problems
from tests.helpers import jobsets
from tests.helpers.bad_stacks import NS
from tests.helpers.dra_objects import schema_problems
from tests.helpers.plan_out import SELFTEST_IMAGE
from tests.helpers.rendered_jobs import (
    job_of,
    platform_claim_templates_of,
    platform_jobs_of,
    submitted_jobs_of,
    submitted_renders_of,
)
from tests.helpers.varied_stacks import DRA_CONFIGS, DRA_STACK, dra_config

IMAGE = "registry.example.com/team/train@sha256:" + "e" * 64


def selftest_config(stack: str) -> dict[str, Any]:
    """The DRA stack with the self-test on: its run, its schedule and its node-join check are
    declared by the plan, each with the claim templates it needs."""
    config = DRA_CONFIGS[stack]
    selftest = {**config.get(f"{NS}:selftest", {}), "image": SELFTEST_IMAGE}
    return {**config, f"{NS}:selftest": selftest}


@functools.cache
def planned_with_selftest(stack: str) -> Plan:
    return project_plan(stack, {stack: selftest_config(stack)})


def config(stack: str) -> PlatformConfig:
    return parse_config({k.split(":", 1)[1]: v for k, v in selftest_config(stack).items()}, stack)


@functools.cache
def cluster_objects(stack: str) -> tuple[dict[str, Any], ...]:
    """What the plan declares on the DRA stack's cluster, its charts' objects among them (the
    driver's DeviceClasses, Kueue's Configuration)."""
    plan = planned_with_selftest(stack)
    rendering = render_plan(plan, (SHARED_HELM,))
    return (*plan.kubernetes_objects(), *(o for _, o in rendering.objects()))


def renders(stack: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(what, objects) of every job on the DRA stack: the platform's, whose claim templates the
    plan declares, the node-join check's DaemonSets and the canaries' Jobs, what `python -m
    jobs` writes, and a one-node job on MIG slices of each MIG pool (which `jobs submit`
    refuses: MIG takes no distributed job), as the builder renders it."""
    cfg, plan = config(stack), planned_with_selftest(stack)
    found = [(f"platform {j['metadata']['name']}", [j]) for j in platform_jobs_of(cfg, plan)]
    found += [
        (f"platform {o['kind']} {o['metadata']['name']}", [o])
        for o in plan.kubernetes_objects()
        if o["kind"] in ("DaemonSet", "Job")
        and o["metadata"]["namespace"] == cfg.namespaces.selftest
        and (o["kind"] == "DaemonSet" or "gpu-platform/canary" in o["metadata"]["labels"])
    ]
    found += submitted_renders_of(cfg)
    for pool in cfg.gpu_pools:
        if pool.sharing.mode == "mig":
            spec = spec_for_pool(
                cfg, pool.name, name="slices", image=IMAGE, command=["t.py"], gpus_per_node=2,
            )  # fmt: skip
            found.append((f"slices on {pool.name}", render(spec)))
    return found


def pool_of(job: dict[str, Any]) -> str:
    """The pool a job runs on, as its trainer is told (contract/env.TRAINING_JOB_POOL)."""
    ((_, pod), *_) = pod_templates(job)
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    return env[TRAINING_JOB_POOL]


def claimed_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [spec for _, spec in pod_templates(job) if spec.get("resourceClaims")]


def test_a_job_on_a_dra_pool_claims_its_gpus_through_a_template_of_its_own():
    cfg = dra_config(DRA_STACK)
    spec = plan_job(cfg, TeamJob(image=IMAGE, command=["train.py"], nodes=2, pool="a100-efa"))
    template, jobset = render(spec)
    assert template == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": f"{spec.name}-gpus",
            "namespace": "training",
            "labels": dict(spec.labels),
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpus",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 8,
                            },
                        }
                    ]
                }
            }
        },
    }
    (pod,) = [spec for _, spec in pod_templates(jobset)]
    assert pod["resourceClaims"] == [
        {"name": "gpus", "resourceClaimTemplateName": f"{spec.name}-gpus"}
    ]
    for container in [*pod["containers"], *pod.get("initContainers", [])]:
        resources = container["resources"]
        assert resources["claims"] == [{"name": "gpus"}]
        assert "nvidia.com/gpu" not in {*resources["requests"], *resources["limits"]}


def test_the_rendered_job_is_its_claims_then_the_jobset():
    """render() puts the claim templates before the JobSet (they must exist before its pods are
    admitted), and the pod lists exactly pod_claims."""
    cfg = dra_config(DRA_STACK)
    spec = plan_job(cfg, TeamJob(image=IMAGE, command=["train.py"], nodes=2, pool="a100-efa"))
    *templates, jobset = render(spec)
    assert templates == claim_templates(spec)
    (pod,) = [pod for _, pod in pod_templates(jobset)]
    assert pod["resourceClaims"] == pod_claims(spec)


def test_a_mig_pools_job_claims_slices_of_its_smallest_profile_through_the_platforms_class():
    cfg = dra_config(DRA_STACK)
    spec = spec_for_pool(
        cfg, "h100-mig", name="slices", image=IMAGE, command=["t.py"], gpus_per_node=2
    )
    template, _ = render(spec)
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {
        "deviceClassName": "mig-1g.10gb.gpu-platform",
        "allocationMode": "ExactCount",
        "count": 2,
    }


@pytest.mark.parametrize("stack", DRA_CONFIGS)
def test_every_job_on_every_dra_pool_claims_and_passes_every_model(stack):
    """Kueue charges it (the Configuration as rendered), every name it holds resolves, its
    templates are what the API server of the stack's minor takes, its pods stay `restricted`
    and Guaranteed."""
    cfg = config(stack)
    objects = cluster_objects(stack)
    kueue_config = manager_config_of(objects)
    dra_pools = {p.name for p in cfg.gpu_pools if p.gpu_allocation == "dra"}
    found = renders(stack)
    # Every DRA pool's jobs claim, and the sweep reaches each pool.
    on_dra = [(w, objs[-1]) for w, objs in found if pool_of(objs[-1]) in dra_pools]
    assert {pool_of(j) for _, j in on_dra} == dra_pools
    assert [w for w, j in on_dra if not claimed_pods(j)] == []
    templates = [o for _, objs in found for o in objs if o["kind"] == "ResourceClaimTemplate"]
    templates += [o for o in objects if o["kind"] == "ResourceClaimTemplate"]
    templates += platform_claim_templates_of(cfg)
    assert templates
    version = cfg.cluster.kubernetes_version
    for template in templates:
        assert schema_problems(template, version) == []
    # The JobSet against its CRD, its Job and every other workload against Kubernetes' schema
    # of the minor: a pod's resourceClaims and a container's claims included.
    for what, objs in found:
        job = objs[-1]
        try:
            if job["kind"] in ("JobSet", "Job"):
                jobsets.validate_object(job, version)
            else:
                validate_kubernetes(job, version)
        except AssertionError as error:
            raise AssertionError(f"{stack}: {what}: {error}") from error
    kueue = Kueue.of([*objects, *templates], kueue_config, windows="open")
    cluster = {stack: Cluster(stack, [*objects, *templates])}
    refused = {}
    for what, objs in found:
        job = objs[-1]
        queued = "kueue.x-k8s.io/queue-name" in job["metadata"].get("labels", {})
        found_problems = [
            *(admission_problems(kueue, job) if queued else []),
            *problems(Placed(job, stack), cluster, {}),
            *(
                f"{rule.rule}"
                for _, pod in pod_templates(job)
                for rule in violations(({}, pod), "restricted")
            ),
            # A device-plugin pool without cpus_per_gpu is Burstable, as before DRA.
            *(
                f"QoS {qos_class(pod)}"
                for _, pod in pod_templates(job)
                if pool_of(job) in dra_pools and qos_class(pod) != "Guaranteed"
            ),
        ]
        if found_problems:
            refused[what] = found_problems
    assert refused == {}


@pytest.mark.parametrize("stack", STACKS)
def test_jobs_on_device_plugin_pools_render_the_job_alone_asking_nvidia_com_gpu(stack):
    """A device-plugin pool's job is the JobSet alone, as before DRA: no template, no claim."""
    for what, objects in submitted_renders_of(stack_config(stack)):
        assert [o["kind"] for o in objects] == ["JobSet"], what
        job = job_of(objects)
        for _, pod in pod_templates(job):
            assert "resourceClaims" not in pod, what
            assert all("nvidia.com/gpu" in c["resources"]["limits"] for c in pod["containers"])


def test_the_dra_stacks_device_plugin_pool_keeps_its_gpu_request():
    cfg = dra_config(DRA_STACK)
    jobs = [j for w, j in submitted_jobs_of(cfg) if " g5 " in f"{w} "]
    assert jobs
    for job in jobs:
        for _, pod in pod_templates(job):
            assert "resourceClaims" not in pod
            assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
