"""Where each rank's NCCL flight record goes when NCCL's watchdog dumps it: without a setting,
torch 2.13 writes it under `$HOME/.cache/torch/` (torch/csrc/distributed/c10d/FlightRecorder.cpp,
DebugInfoWriter::getWriter: `TORCH_FR_DUMP_TEMP_FILE`, else `TORCH_NCCL_DEBUG_INFO_TEMP_FILE`,
else that default), and HOME is the pod's /tmp, an emptyDir lost with the pod: a job without
trainkit lost the record of the hang that restarted it. Every job the platform renders points
it at a folder of its own on shared-data; the launcher makes the folder
(tests/image/launcher/test_rendered_jobs.py runs it)."""

from __future__ import annotations

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from jobs.team import TeamJob, plan_job
from tests.conftest import STACKS, stack_config
from tests.helpers.jobsets import pod_specs
from tests.helpers.rendered_jobs import burst_jobs, platform_jobs, submitted_jobs, workers_of

IMAGE = "registry.example/team/train@sha256:" + "e" * 64


def trainer_and_mounts(job: dict) -> tuple[dict[str, str], dict[str, str]]:
    """The trainer's literal environment, and its mount paths by the claim mounted there."""
    (pod,) = pod_specs(job)
    container = next(c for c in pod["containers"] if c["name"] == "trainer")
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in pod["volumes"]
        if "persistentVolumeClaim" in v
    }
    mounts = {
        claims[m["name"]]: m["mountPath"] for m in container["volumeMounts"] if m["name"] in claims
    }
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}, mounts


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_job_keeps_its_flight_record_on_shared_data_in_a_folder_of_its_own(stack):
    jobs = [(f"platform {j['kind']} {j['metadata']['name']}", j) for j in platform_jobs(stack)]
    jobs += submitted_jobs(stack)
    jobs += [job for worker in workers_of(stack) for job in burst_jobs(stack, worker)]
    wrong = []
    for what, job in jobs:
        env, mounts = trainer_and_mounts(job)
        prefix = env.get("TORCH_FR_DUMP_TEMP_FILE", "(unset: $HOME/.cache/torch, in the pod)")
        folder = prefix.rsplit("/", 1)[0]
        # The claim the storage plane makes in every job namespace (components/storage).
        on_shared = folder.startswith(mounts.get("shared-data", "(no shared-data)") + "/")
        if not on_shared or f"/{job['metadata']['name']}/" not in f"{folder}/":
            wrong.append(f"{what}: {prefix}")
    assert not wrong, "\n".join(wrong)


def test_a_job_with_a_checkpoint_folder_keeps_it_where_trainkit_does():
    """bootstrap/trainkit/process.py join(): `<TRAINKIT_CHECKPOINT_DIR>/hangs/nccl-trace-rank-`;
    the same prefix, so that trainkit's own setting and the platform's agree."""
    spec = plan_job(stack_config("prod"), TeamJob(image=IMAGE, command=["t.py"], nodes=1,
                                                  name="llama"))  # fmt: skip
    env, _ = trainer_and_mounts(render(spec)[0])
    assert env["TRAINKIT_CHECKPOINT_DIR"] == "/mnt/shared-data/runs/jobs/llama"
    assert (
        env["TORCH_FR_DUMP_TEMP_FILE"] == "/mnt/shared-data/runs/jobs/llama/hangs/nccl-trace-rank-"
    )


def test_a_job_without_one_gets_a_folder_under_flight_records():
    spec = spec_for_pool(stack_config("onprem"), "a100", name="run-7", image=IMAGE,
                         command=["t.py"], namespace="research")  # fmt: skip
    env, _ = trainer_and_mounts(render(spec)[0])
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == (
        "/mnt/shared-data/flight-records/research/run-7/nccl-trace-rank-"
    )


@pytest.mark.parametrize("name", ["TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"])
def test_a_jobs_own_prefix_is_kept(name):
    spec = spec_for_pool(stack_config("onprem"), "a100", name="run-7", image=IMAGE,
                         command=["t.py"], env={name: "/mnt/shared-data/mine/fr-"})  # fmt: skip
    env, _ = trainer_and_mounts(render(spec)[0])
    assert env[name] == "/mnt/shared-data/mine/fr-"
    assert [k for k in env if k.endswith("_TEMP_FILE")] == [name]
