"""The manager-worker contract of MultiKueue (components/scheduling/multikueue_contract.py): what
the manager refuses of a worker stack that lacks the bursting queue, a team's LocalQueue, a
framework's kind (JobSet), the pools or topology a burst asks for, or that is not deployed (as a
worker) yet."""

from __future__ import annotations

import pytest

from model.config import ConfigError, parse_config
from plan.cli import plan_stack
from tests.conftest import make_project, stack_config, stack_file_config
from tests.helpers.varied_stacks import DRA_BESIDE_STACK, DRA_BURST_STACK, DRA_WORKER_PROJECTS


def plan_with_worker(tmp_path, worker_scheduling: dict):
    burst = stack_file_config("burst")
    burst["gpu-platform:scheduling"] = worker_scheduling
    root = make_project(tmp_path, {"onprem": stack_file_config("onprem"), "burst": burst})
    return plan_stack("onprem", root)


def test_a_worker_without_the_bursting_queue_makes_the_manager_refuse_it_by_name(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_worker(
            tmp_path,
            {
                "cluster_queues": [{"name": "spot"}],
                "teams": [{"name": "research", "cluster_queue": "spot"}],
            },
        )
    (problem,) = error.value.problems
    assert problem.startswith("gpu-platform:scheduling.cluster_queues[1].burst.workers")
    assert "declares no ClusterQueue 'burst' (it declares: spot)" in problem


def test_a_worker_without_the_teams_local_queue_makes_the_manager_refuse_it(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_worker(tmp_path, {"cluster_queues": [{"name": "burst"}]})
    assert any("LocalQueue research/default" in p for p in error.value.problems)


def plan_with_burst(tmp_path, change_worker=None, change_burst=None):
    """onprem planned against a burst stack and a bursting queue changed by the callables."""
    burst, onprem = stack_file_config("burst"), stack_file_config("onprem")
    if change_worker:
        change_worker(burst)
    if change_burst:
        change_burst(onprem["gpu-platform:scheduling"]["cluster_queues"][1]["burst"])
    root = make_project(tmp_path, {"onprem": onprem, "burst": burst})
    return plan_stack("onprem", root)


def test_a_burst_larger_than_the_workers_pools_is_refused_at_its_gpus(tmp_path):
    # The burst stack's two p5.48xlarge pools hold 2 nodes x 8 GPUs each: 32 GPUs at most.
    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_burst=lambda b: b.update(gpus=40))
    (problem,) = error.value.problems
    assert problem.startswith("gpu-platform:scheduling.cluster_queues[1].burst.gpus: 40, but")
    assert "hold at most 32 GPUs (burst 32)" in problem


def test_a_burst_of_a_type_the_worker_has_no_pool_of_is_refused_at_its_instance_type(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_burst=lambda b: b.update(instance_type="p4d.24xlarge"))
    (problem,) = error.value.problems
    assert problem.startswith(
        "gpu-platform:scheduling.cluster_queues[1].burst.instance_type: p4d.24xlarge, but "
        "worker burst has no pool of it (its pools: h100-spot (p5.48xlarge), h100-block "
        "(p5.48xlarge))"
    )


def test_a_worker_whose_nodes_lack_the_mirrored_topology_is_refused(tmp_path):
    """Without EFA the worker's p5 pools name no Topology, so the manager's mirror of one
    would match jobs against levels the worker does not place by."""

    def no_efa(burst):
        for group in burst["gpu-platform:gpu_node_groups"]:
            group["efa"] = False

    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_worker=no_efa)
    assert len(error.value.problems) == 2
    assert all(
        p.startswith("gpu-platform:scheduling.cluster_queues[1].burst.instance_type: the manager")
        and "carries none" in p
        for p in error.value.problems
    ), error.value.problems


def test_a_worker_stack_that_does_not_serve_as_one_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError) as error:
        plan_with_burst(tmp_path, change_worker=lambda b: b.pop("gpu-platform:multikueue"))
    (problem,) = error.value.problems
    assert problem.startswith(
        "multikueue.workers[0].stack: 'organization/gpu-platform/burst': stack burst does not "
        "serve as a MultiKueue worker"
    )
    assert "set multikueue.serve_as_worker: true in stacks/Pulumi.burst.yaml" in problem


def test_a_worker_not_yet_deployed_is_reported_as_such_with_what_to_do():
    """`pulumi preview` of the manager before the worker's `pulumi up`: the StackReference
    yields no outputs (None)."""
    from components.scheduling.multikueue_contract import worker_problems

    (problem,) = worker_problems(stack_config("onprem"), {"burst": None})
    assert problem == (
        "gpu-platform:multikueue.workers[0].stack: 'organization/gpu-platform/burst' exports no "
        "multikueue_queues: it is not deployed as a MultiKueue worker yet; set "
        "multikueue.serve_as_worker: true in that stack, run `pulumi up` on it, then on this one"
    )
    assert "declares no ClusterQueue" not in problem


def test_a_worker_deployed_before_it_exported_its_pools_is_asked_to_redeploy():
    from components.scheduling.multikueue_contract import worker_problems

    exported = {
        "cluster_queues": ["burst"],
        "local_queues": ["research/default"],
        "frameworks": ["batch/job", "jobset.x-k8s.io/jobset"],
    }
    assert worker_problems(stack_config("onprem"), {"burst": exported}) == [
        "gpu-platform:scheduling.cluster_queues[1].burst.workers: worker burst's "
        "multikueue_queues lists no pools: an older version of this program deployed it; run "
        "`pulumi up` on it again"
    ]


# Kueue v0.19.2's integration names: pkg/controller/jobs/job (`FrameworkName = "batch/job"`) and
# pkg/controller/jobs/jobset (`FrameworkName = "jobset.x-k8s.io/jobset"`).
FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset"]


def exported_by_burst() -> dict:
    from components.scheduling.multikueue_contract import exported_queues

    return exported_queues(stack_config("burst"))


def test_the_worker_exports_that_it_serves_batch_jobs_and_jobsets():
    """The burst stack installs JobSet (its CRD from the chart) and runs both frameworks."""
    assert exported_by_burst()["frameworks"] == FRAMEWORKS


def test_a_worker_deployed_before_jobset_is_asked_to_redeploy():
    """A worker stack `pulumi up` ran with an earlier version exports no frameworks: it has no
    JobSet CRD, and Kueue's connection to it would fail on the JobSet watch
    (multikueuecluster.go `updateConfigAndRefreshWatchers`)."""
    from components.scheduling.multikueue_contract import worker_problems

    exported = exported_by_burst()
    del exported["frameworks"]
    assert worker_problems(stack_config("onprem"), {"burst": exported}) == [
        "gpu-platform:multikueue.workers[0].stack: worker burst's multikueue_queues lists no "
        "frameworks: an older version of this program deployed it, without JobSet, whose kind "
        "the manager's Kueue watches there; run `pulumi up` on it again"
    ]


def test_a_worker_that_serves_no_jobsets_is_refused_naming_the_framework():
    from components.scheduling.multikueue_contract import worker_problems

    exported = {**exported_by_burst(), "frameworks": ["batch/job"]}
    (problem,) = worker_problems(stack_config("onprem"), {"burst": exported})
    assert problem.startswith(
        "gpu-platform:multikueue.workers[0].stack: worker burst serves no jobset.x-k8s.io/jobset "
        "(it serves: batch/job)"
    )
    assert worker_problems(stack_config("onprem"), {"burst": exported_by_burst()}) == []


# What MultiKueue does not copy (Kueue v0.19.2 pkg/controller/jobs/jobset/
# jobset_multikueue_adapter.go, SyncJob: it creates the JobSet alone on the worker;
# site/content/en/docs/tasks/manage/setup_dra.md, "MultiKueue considerations":
# "ResourceClaimTemplate and DeviceClass objects are not automatically synced").
SYNC_JOB = "jobset_multikueue_adapter.go SyncJob"


def test_a_worker_pool_the_burst_selects_on_dra_is_refused_naming_the_pool_and_its_file(
    tmp_path,
):
    """The dra-burst fixture moves the burst stack's h100-spot (p5.48xlarge, the type onprem's
    queue bursts on) to DRA: its jobs' claim templates would stay on the manager."""
    _, files = DRA_WORKER_PROJECTS[DRA_BURST_STACK]
    with pytest.raises(ConfigError) as error:
        plan_stack("onprem", make_project(tmp_path, files))
    assert error.value.source == "stacks/Pulumi.onprem.yaml"
    (problem,) = error.value.problems
    assert problem.startswith(
        "gpu-platform:scheduling.cluster_queues[1].burst.workers: bursts to worker burst, whose "
        "pool h100-spot of p5.48xlarge allocates its GPUs through DRA (gpu_allocation: dra in "
        "stacks/Pulumi.burst.yaml): a job there claims them through a ResourceClaimTemplate "
        "applied beside its JobSet, and MultiKueue copies only the JobSet to a worker"
    )
    assert SYNC_JOB in problem
    assert problem.endswith(
        "valid: gpu_allocation device_plugin on that pool, or a burst.instance_type of the "
        "worker's device-plugin pools"
    )


def test_a_worker_says_which_of_its_pools_claim_gpus_through_dra():
    _, files = DRA_WORKER_PROJECTS[DRA_BESIDE_STACK]
    from components.scheduling.multikueue_contract import exported_queues

    worker = parse_config({k.split(":", 1)[1]: v for k, v in files["burst"].items()}, "burst")
    allocation = {p["pool"]: p["gpu_allocation"] for p in exported_queues(worker)["pools"]}
    # The fixture's burst stack: its two p5 groups set no gpu_allocation (the default), the
    # A100 group beside them sets dra.
    assert allocation == {"h100-spot": "device_plugin", "h100-block": "device_plugin",
                          "a100-dra": "dra"}  # fmt: skip


def test_a_worker_deployed_before_it_exported_its_pools_allocation_is_asked_to_redeploy():
    from components.scheduling.multikueue_contract import worker_problems

    exported = exported_by_burst()
    for pool in exported["pools"]:
        del pool["gpu_allocation"]
    assert worker_problems(stack_config("onprem"), {"burst": exported}) == [
        "gpu-platform:scheduling.cluster_queues[1].burst.workers: worker burst's "
        "multikueue_queues says not how its pools allocate GPUs: an older version of this "
        "program deployed it; run `pulumi up` on it again"
    ]
