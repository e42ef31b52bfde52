"""The preflight every multi-node team job and recipe runs before it trains
(components/selftest/preflight.py, components/scheduling/training_job.preflight_container): the
self-test's `--checks preflight` in the self-test's image, as each pod's init container, on the
job's own GPUs and fabric, through a rendezvous of its own on index 0."""

from __future__ import annotations

import dataclasses

import pytest

from components.scheduling.training_job import render
from components.selftest.preflight import with_preflight
from jobs.recipe import plan_job as plan_recipe
from jobs.team import TeamJob
from jobs.team import plan_job as plan_team_job
from tests.conftest import SHIPPED_STACKS, STACKS, planned, stack_config
from tests.helpers import jobsets
from tests.helpers.rendered_jobs import submitted_jobs
from tests.helpers.selftest_stacks import IMAGE


def pod_spec(jobset: dict) -> dict:
    (replicated,) = jobset["spec"]["replicatedJobs"]
    return replicated["template"]["spec"]["template"]["spec"]


def with_image(stack: str):
    """The stack with a self-test image: only onprem names one, and the preflight must hold on
    the AWS pools (EFA shares) as on the RoCE one."""
    cfg = stack_config(stack)
    selftest = cfg.selftest.model_copy(update={"image": IMAGE})
    return cfg.model_copy(update={"selftest": selftest})


def team_job(cfg, pool: str, nodes: int, gpus: int | None = None) -> dict:
    job = TeamJob(image=None, command=["train.py"], nodes=nodes, pool=pool, gpus_per_node=gpus)
    return render(plan_team_job(cfg, job))[0]


@pytest.mark.parametrize("stack", STACKS)
def test_every_multi_node_job_the_stack_submits_runs_the_preflight_first(stack):
    """Every recipe and team job of more than one node, on every pool: one init container,
    the self-test image, `-m selftest --checks preflight`, the trainer's devices and limits."""
    cfg = stack_config(stack)
    jobs = submitted_jobs(stack)
    assert jobs
    for what, jobset in jobs:
        pod = pod_spec(jobset)
        (job,) = jobset["spec"]["replicatedJobs"]
        nodes = job["template"]["spec"]["completions"]
        if nodes == 1 or cfg.selftest.image is None:
            assert "initContainers" not in pod, what
            continue
        (preflight,) = pod["initContainers"]
        (trainer,) = pod["containers"]
        assert preflight["name"] == "preflight"
        assert preflight["image"] == cfg.selftest.image, what
        command = preflight["command"]
        assert command[0] == "torchrun" and command[-4:] == ["-m", "selftest", "--checks",
                                                              "preflight"]  # fmt: skip
        assert f"--nnodes={nodes}" in command and "--node-rank=$(JOB_COMPLETION_INDEX)" in command
        # Index 0's name is the trainer's; the port is not (torchrun's default is 29500).
        master = next(a for a in trainer["command"] if a.startswith("--master-addr="))
        assert master in command
        assert "--master-port=29501" in command and "--master-port=29500" in trainer["command"]
        # The trainer's GPUs, fabric devices and limits: the pod asks for nothing more.
        assert preflight["resources"] == trainer["resources"], what
        assert preflight["securityContext"] == trainer["securityContext"]
        assert preflight["envFrom"] == trainer["envFrom"]
        jobsets.validate(jobset, planned(stack).outputs["kubernetes_version"])


def test_the_stacks_that_name_a_selftest_image_are_those_the_sweep_judges():
    """The sweep above judges the preflight where a stack has it: onprem's, and prod's and
    burst's, whose reservation windows' controller runs in the image. The EFA cases below also
    give an image to a stack in its own config."""
    named = [s for s in SHIPPED_STACKS if stack_config(s).selftest.image is not None]
    assert sorted(named) == ["burst", "onprem", "prod"]


@pytest.mark.parametrize(
    ("gpus", "efa_devices"),
    # FACTS.md: a p5.48xlarge has 8 H100 GPUs and 32 EFA interfaces; half a node, half of them.
    [(8, "32"), (4, "16")],
)
def test_an_efa_job_expects_the_efa_devices_its_pods_are_given(gpus, efa_devices):
    jobset = team_job(with_image("prod"), "h100-ondemand", nodes=2, gpus=gpus)
    (preflight,) = pod_spec(jobset)["initContainers"]
    env = {e["name"]: e.get("value") for e in preflight["env"]}
    assert env["SELFTEST_EXPECTED_GPUS"] == str(gpus)
    assert env["SELFTEST_EXPECTED_FABRIC_DEVICES"] == efa_devices
    assert env["SELFTEST_FABRIC"] == "efa"
    assert env["SELFTEST_INSTANCE_TYPE"] == "p5.48xlarge"
    (trainer,) = pod_spec(jobset)["containers"]
    assert preflight["resources"]["limits"]["vpc.amazonaws.com/efa"] == int(efa_devices)
    assert trainer["resources"] == preflight["resources"]
    jobsets.validate(jobset, planned("prod").outputs["kubernetes_version"])


def test_a_roce_job_expects_every_hca_the_shared_rdma_device_exposes():
    cfg = stack_config("onprem")
    (preflight,) = pod_spec(team_job(cfg, "a100", nodes=2))["initContainers"]
    env = {e["name"]: e.get("value") for e in preflight["env"]}
    # stacks/Pulumi.onprem.yaml names two HCAs (mlx5_0, mlx5_1).
    assert (env["SELFTEST_FABRIC"], env["SELFTEST_EXPECTED_FABRIC_DEVICES"]) == ("roce", "2")
    # Where it runs and its limits come from the downward API, as the trainer's do.
    by_name = {e["name"]: e for e in preflight["env"]}
    assert by_name["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert "resourceFieldRef" in by_name["CPU_LIMIT_MILLICORES"]["valueFrom"]
    # A read-only root: the report goes under the writable /tmp.
    assert env["SELFTEST_OUT"].startswith("/tmp/")


def test_a_one_node_job_a_stack_without_an_image_and_the_selftest_itself_run_none():
    assert "initContainers" not in pod_spec(team_job(with_image("prod"), "h100-ondemand", 1))
    assert "initContainers" not in pod_spec(team_job(stack_config("staging"), "a100-efa", 2))
    spec, _ = plan_recipe(stack_config("onprem"), "prepare", 2, pool="a100", render_only=True)
    assert "initContainers" in pod_spec(render(spec)[0])
    # The preflight is part of what with_preflight adds, nothing else changes.
    bare = dataclasses.replace(spec, preflight=None)
    assert with_preflight(stack_config("onprem"), bare) == spec


def test_the_preflight_pulls_the_selftest_image_from_the_mirror_when_there_is_one():
    cfg = with_image("prod")
    images = cfg.images.model_copy(update={"registry_mirror": "mirror.example/cache"})
    mirrored = cfg.model_copy(update={"images": images})
    (preflight,) = pod_spec(team_job(mirrored, "h100-ondemand", 2))["initContainers"]
    assert preflight["image"] == ("mirror.example/cache/gpu-platform-selftest@sha256:" + "0" * 64)
