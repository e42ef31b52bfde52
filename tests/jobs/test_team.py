"""`python -m jobs submit`: a team's own image and command becomes a valid distributed job on every
pool of every stack that can hold it, a JobSet under the launcher's torchrun, through the
queue the stack declares, with its checkpoint folder in TRAINKIT_CHECKPOINT_DIR; what cannot
run is refused with the recipes' messages before anything is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import RESERVED_ENV, render
from jobs.common import Destination, SubmitError, pool_problems
from jobs.kubectl import resource_type
from jobs.team import TeamJob, main, plan_job
from model.config import parse_config
from model.stacks import ROOT
from tests.conftest import (
    STACKS,
    make_project,
    planned,
    stack_config,
    stack_file_config,
)
from tests.helpers import jobsets
from tests.helpers.hang import HANG_S
from tests.helpers.job_commands import ACCEPTED, REFUSED
from tests.helpers.kubectl import stand_in_kubectl
from tests.helpers.plan_objects import kinds
from tests.helpers.varied_stacks import (
    DRA_BESIDE_STACK,
    DRA_WORKER_PROJECTS,
    GB200_BURST_STACK,
)

IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/team-a/llama-ft@sha256:" + "d" * 64
COMMAND = ["python", "train.py", "--lr", "1e-5"]
POOLS = [(s, p.name) for s in STACKS for p in stack_config(s).gpu_pools]


def team_job(**choices) -> TeamJob:
    return TeamJob(**{"image": IMAGE, "command": COMMAND, "nodes": 1, **choices})


def trainer(objects) -> dict:
    return jobsets.trainer(objects[-1])


def env_of(objects) -> dict[str, str | None]:
    return {e["name"]: e.get("value") for e in trainer(objects)["env"]}


# ---------------------------------------------------------------------- rendered jobs


@pytest.mark.parametrize(("stack", "pool"), POOLS)
def test_a_teams_job_is_valid_on_every_pool_of_every_stack_that_can_hold_it(stack, pool):
    cfg = stack_config(stack)
    gpu_pool = next(p for p in cfg.gpu_pools if p.name == pool)
    nodes = min(2, gpu_pool.max_nodes)
    job = team_job(nodes=nodes, pool=pool, framework="tensorflow", env={"WANDB_MODE": "off"})
    if gpu_pool.sharing.mode == "mig":
        with pytest.raises(SubmitError, match="MIG slices"):
            plan_job(cfg, job)
        return
    objects = render(plan_job(cfg, job))
    assert [o["kind"] for o in objects] == ["JobSet"]
    assert jobsets.job_spec(objects[-1])["completions"] == nodes
    for obj in objects:
        jobsets.validate(obj, cfg.cluster.kubernetes_version)


def test_the_shipped_stacks_have_pools_for_a_teams_job():
    # The test above must not pass by having nothing to render.
    assert {s for s, _ in POOLS} == set(STACKS)


def test_the_command_runs_under_the_launchers_torchrun_with_the_jobs_rendezvous():
    spec = plan_job(stack_config("prod"), team_job(nodes=2, pool="h100-ondemand", name="llama"))
    assert trainer(render(spec))["command"] == [
        # The platform's launcher runs torchrun's agent; rank 0's pod is
        # <jobset>-<replicatedJob>-<job index>-<completion index> under the JobSet's subdomain.
        "python",
        "/opt/gpu-platform/launcher/launch.py",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        "--master-addr=llama-trainer-0-0.llama",
        "--master-port=29500",
        # The default --grace-period-seconds, 300, less the launcher's 10 s.
        "--shutdown-timeout=290",
        # torchrun runs the script in its own Python (torch.distributed.run, "training_script":
        # followed by its arguments): the team's `python` is that one, stripped.
        "train.py",
        "--lr",
        "1e-5",
    ]


def test_the_checkpoint_folder_is_output_slash_job_name_on_shared_data():
    cfg = stack_config("prod")
    env = env_of(render(plan_job(cfg, team_job(name="llama"))))
    # The default output, runs/jobs, on the shared-data volume mounted at /mnt/shared-data.
    assert env["TRAINKIT_CHECKPOINT_DIR"] == "/mnt/shared-data/runs/jobs/llama"
    env = env_of(render(plan_job(cfg, team_job(name="llama", output="team-a/checkpoints"))))
    assert env["TRAINKIT_CHECKPOINT_DIR"] == "/mnt/shared-data/team-a/checkpoints/llama"
    mounts = {m["mountPath"] for m in trainer(render(plan_job(cfg, team_job())))["volumeMounts"]}
    assert "/mnt/shared-data" in mounts


def test_tensorflow_jobs_grow_gpu_memory_unless_they_say_otherwise():
    # TensorFlow guide, "Use a GPU", "Limiting GPU memory growth": TF_FORCE_GPU_ALLOW_GROWTH=true.
    cfg = stack_config("prod")
    tf = env_of(render(plan_job(cfg, team_job(framework="tensorflow"))))
    assert tf["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    own = team_job(framework="tensorflow", env={"TF_FORCE_GPU_ALLOW_GROWTH": "false"})
    assert env_of(render(plan_job(cfg, own)))["TF_FORCE_GPU_ALLOW_GROWTH"] == "false"
    assert "TF_FORCE_GPU_ALLOW_GROWTH" not in env_of(render(plan_job(cfg, team_job())))
    with pytest.raises(SubmitError, match="--framework 'jax': one of pytorch, tensorflow"):
        plan_job(cfg, team_job(framework="jax"))


def test_the_job_takes_what_a_whole_p5_node_offers_and_is_scraped_and_given_time_to_save():
    spec = plan_job(stack_config("prod"), team_job(pool="h100-block", env={"SEED": "7"}))
    objects = render(spec)
    container = trainer(objects)
    # AWS EC2 User Guide: p5.48xlarge, 8 H100 and 32 EFA interfaces; AWS's EKS EFA guide: 5128
    # huge pages of 2 MiB pre-allocated.
    limits = container["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 8
    assert limits["vpc.amazonaws.com/efa"] == 32
    assert limits["hugepages-2Mi"] == "10256Mi"
    assert container["envFrom"] == [{"configMapRef": {"name": "nccl-h100-block"}}]
    assert env_of(objects)["SEED"] == "7"
    assert container["image"] == IMAGE
    pod = jobsets.pod_template(objects[-1])
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    # The port the recipes and trainkit serve metrics on, which the PodMonitor scrapes by name.
    assert {"name": "metrics", "containerPort": 8000} in container["ports"]
    assert pod["metadata"]["labels"]["gpu-platform/metrics"] == "training"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 300


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_admits_a_teams_job_through_a_local_queue_and_priority_the_stack_declares(stack):
    cfg = stack_config(stack)
    (job,) = render(plan_job(cfg, team_job(priority_class="preemptible")))
    labels = job["metadata"]["labels"]
    if not cfg.scheduling.enabled:
        assert not any(k.startswith("kueue.x-k8s.io/") for k in labels)
        assert job["spec"]["suspend"] is False
        return
    plan = planned(stack)
    # Kueue pkg/controller/constants: QueueLabel and WorkloadPriorityClassLabel.
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels["kueue.x-k8s.io/priority-class"] == "preemptible"
    local_queues = {
        (q["metadata"]["namespace"], q["metadata"]["name"]) for q in kinds(plan, "LocalQueue")
    }
    assert (job["metadata"]["namespace"], "default") in local_queues
    assert "preemptible" in {w["metadata"]["name"] for w in kinds(plan, "WorkloadPriorityClass")}
    pod = jobsets.pod_spec(job)
    assert pod["priorityClassName"] in {p["metadata"]["name"] for p in kinds(plan, "PriorityClass")}
    assert job["spec"]["suspend"] is True


def test_the_same_job_keeps_its_name_and_resumes_another_job_gets_another():
    cfg = stack_config("prod")
    first = plan_job(cfg, team_job()).name
    assert plan_job(cfg, team_job()).name == first
    assert plan_job(cfg, team_job(command=[*COMMAND, "--epochs", "2"])).name != first
    assert plan_job(cfg, team_job(nodes=2)).name != first
    # The image's repository names whose job it is.
    assert first.startswith("llama-ft-") and len(first) == len("llama-ft-") + 10


def test_every_variable_the_builder_sets_is_reserved():
    """A team's --env must not set a variable twice: RESERVED_ENV lists every one the builder
    writes itself (HOME, the completion index, the downward API, the restart attempt, the
    job's identity and the watchdog's bounds) (every stack runs a Pushgateway), and the
    variables torchrun would read for what its rendered flags set (--shutdown-timeout). The
    flight record's prefix is a default a job may set itself."""
    spec = spec_for_pool(stack_config("onprem"), "a100", name="x", image=IMAGE, command=["t"])
    names = {e["name"] for e in trainer(render(spec))["env"]}
    shutdown = {"PET_SHUTDOWN_TIMEOUT", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"}
    assert names | shutdown == set(RESERVED_ENV) | {"TORCH_FR_DUMP_TEMP_FILE"}
    for name in (*RESERVED_ENV, "TRAINKIT_CHECKPOINT_DIR"):
        with pytest.raises(SubmitError, match=f"--env {name}: the platform sets it"):
            plan_job(stack_config("prod"), team_job(env={name: "x"}))


# ------------------------------------------------------------------ the command line


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "project").mkdir()
    return make_project(tmp_path / "project", {"st": stack_config_doc("staging")})


def stack_config_doc(base: str, groups=None) -> dict:
    config = stack_file_config(base)
    if groups is not None:
        config["gpu-platform:gpu_node_groups"] = groups
    return config


def submit(root: Path, *argv: str, command=COMMAND) -> int:
    return main([*argv, "--stack", "st", "--out", str(root / "out"), "--", *command], root=root)


def refused(root: Path, capsys, *argv: str, command=COMMAND) -> str:
    assert submit(root, *argv, command=command) == 2
    assert not (root / "out").exists(), "a refused job must not be written"
    err = capsys.readouterr().err
    assert err.startswith("error: the job cannot be submitted to st:")
    return err


def test_main_writes_the_jobset_under_the_jobs_name(project, capsys):
    argv = ("--nodes", "2", "--gpus-per-node", "4", "--image", IMAGE, "--name", "ft")
    assert submit(project, *argv) == 0
    path = project / "out" / "ft" / "job.yaml"
    (job,) = yaml.safe_load_all(path.read_text())
    assert job["kind"] == "JobSet"
    assert jobsets.job_spec(job)["completions"] == 2
    # staging's one pool: p4d.24xlarge nodes.
    out = capsys.readouterr().out
    assert f"Wrote {path}: JobSet training/ft, 2 node(s) x 4 GPU(s) of pool a100-efa" in out


def test_python_dash_m_jobs_submit_runs_from_the_repository_root(tmp_path):
    """The command as a team types it, `--` and all, in a fresh interpreter."""
    run = subprocess.run(
        [
            sys.executable, "-m", "jobs", "submit", "--stack", "prod", "--pool", "h100-block",
            "--nodes", "2", "--image", IMAGE, "--name", "cli", "--out", str(tmp_path),
            "--", "python", "train.py", "--lr", "1e-5",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (job,) = yaml.safe_load_all((tmp_path / "cli" / "job.yaml").read_text())
    container = jobsets.trainer(job)
    assert container["command"][-3:] == ["train.py", "--lr", "1e-5"]


def test_a_pool_too_small_is_refused_naming_each_limit_as_for_a_recipe(project, capsys):
    argv = ("--nodes", "3", "--gpus-per-node", "16", "--pool", "a100-efa", "--image", IMAGE)
    err = refused(project, capsys, *argv)
    # staging: 2 p4d.24xlarge nodes at most, 8 A100 each (AWS EC2 User Guide).
    assert "--pool 'a100-efa' cannot hold the job:" in err
    assert "--nodes 3, but it has at most 2 nodes" in err
    assert "--gpus-per-node 16, but its nodes have 8 GPUs" in err


def test_an_unknown_pool_is_refused_with_the_stacks_pools(project, capsys):
    err = refused(project, capsys, "--nodes", "1", "--pool", "h100", "--image", IMAGE)
    assert "--pool 'h100' is not a GPU pool of this stack; its pools: a100-efa" in err


def test_no_pool_with_the_gpu_memory_asked_for_lists_every_pool_and_why(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    groups = [
        {"name": "a10g-4", "instance_types": ["g5.12xlarge"], "scaling": {"max_size": 2}},
        {"name": "a10g-8", "instance_types": ["g5.48xlarge"], "scaling": {"max_size": 2}},
    ]
    root = make_project(tmp_path / "project", {"st": stack_config_doc("staging", groups)})
    err = refused(root, capsys, "--nodes", "1", "--min-gpu-memory-gib", "40", "--image", IMAGE)
    # AWS EC2 User Guide: g5 instances carry NVIDIA A10G GPUs of 24 GiB.
    assert "no GPU pool of the stack (gpu_node_groups) can hold the job:" in err
    for pool in ("a10g-4", "a10g-8"):
        assert (
            f"{pool}: A10G with 24 GiB, below the 40 GiB the job needs (--min-gpu-memory-gib)"
            in err
        )


def test_a_mig_pool_and_a_stack_without_pools_are_refused(tmp_path, capsys):
    (tmp_path / "mig").mkdir()
    group = {
        "name": "a100-mig",
        "instance_types": ["p4d.24xlarge"],
        "zone": "us-east-1c",
        "scaling": {"max_size": 2},
        "gpu_sharing": {"mode": "mig"},
    }
    root = make_project(tmp_path / "mig", {"st": stack_config_doc("staging", [group])})
    err = refused(root, capsys, "--nodes", "1", "--image", IMAGE)
    assert "a100-mig: its GPUs are cut into MIG slices; distributed jobs train on whole GPUs" in err
    (tmp_path / "none").mkdir()
    root = make_project(tmp_path / "none", {"st": stack_config_doc("staging", [])})
    err = refused(root, capsys, "--nodes", "1", "--image", IMAGE)
    assert "the stack has no GPU pool (gpu_node_groups is empty); the job needs one" in err


def test_what_no_job_could_run_is_refused_all_at_once_by_flag(project, capsys):
    err = refused(
        project,
        capsys,
        "--nodes", "1", "--image", "team-a/llama:latest", "--env", "HOME=/root",
        "--env", "1BAD=x", "--output", "/abs/path", "--grace-period-seconds", "5",
        command=[],
    )  # fmt: skip
    assert "no command: give it after --, e.g. `-- python train.py --lr 1e-5`" in err
    assert "--image 'team-a/llama:latest': expected an image pinned by digest" in err
    assert "--env HOME: the platform sets it for every job" in err
    assert "--env 1BAD: not an environment variable name Kubernetes accepts" in err
    assert "--output '/abs/path': expected a relative path inside shared-data" in err
    assert "--grace-period-seconds 5: give 30 or more" in err


@pytest.mark.parametrize("command", list(REFUSED), ids=" ".join)
def test_a_command_the_launcher_cannot_run_is_refused_at_render_time_naming_why(
    project, capsys, command
):
    """The launcher runs a script or module in Python and refuses anything else (exit 2, the
    JobSet fails at once): refused here instead, before anything is written, with what to give
    (tests/helpers/job_commands.py; the image side runs what the accepted ones render through
    the launcher's own parse)."""
    err = refused(project, capsys, "--nodes", "1", "--image", IMAGE, command=list(command))
    assert f"command {' '.join(command)!r}: {REFUSED[command]}" in err
    assert "give `python train.py ARGS` or `python -m module ARGS` (python3 too)" in err


@pytest.mark.parametrize("command", list(ACCEPTED), ids=" ".join)
def test_a_python_command_renders_the_script_or_module_without_the_interpreter(command):
    module, target, args = ACCEPTED[command]
    spec = plan_job(stack_config("prod"), team_job(command=list(command), name="x"))
    assert trainer(render(spec))["command"][8:] == [*(["-m"] if module else []), target, *args]


def test_sizes_below_one_and_names_that_are_no_dns_label_are_refused(project, capsys):
    err = refused(project, capsys, "--nodes", "0", "--gpus-per-node", "0", "--image", IMAGE)
    assert "--nodes 0: give 1 or more" in err and "--gpus-per-node 0: give 1 or more" in err
    err = refused(project, capsys, "--nodes", "1", "--name", "Big_Run", "--image", IMAGE)
    assert "--name 'Big_Run': JobSet's webhook refuses it" in err


def test_a_name_the_jobset_webhook_would_refuse_is_refused_at_render_time(project, capsys):
    """jobset v0.12.0 pkg/webhooks/jobset_webhook.go l. 249: `<name>-trainer-0-1-abcde` within
    63 characters and starting with a letter: 45 characters at 2 nodes."""
    for name in ("a" * 46, "9lives"):
        err = refused(project, capsys, "--nodes", "2", "--name", name, "--image", IMAGE)
        assert f"--name '{name}': JobSet's webhook refuses it" in err
        assert "with 2 node(s) the name has at most 45 characters and starts with a letter" in err


def test_no_image_is_refused_unless_only_rendering(project, capsys):
    err = refused(project, capsys, "--nodes", "1")
    assert "--image is missing" in err and "--render-only" in err
    assert submit(project, "--nodes", "1", "--render-only", "--name", "dry") == 0
    (job,) = yaml.safe_load_all((project / "out" / "dry" / "job.yaml").read_text())
    image = jobsets.trainer(job)["image"]
    # RFC 2606 reserves .invalid: a placeholder that can never be pulled.
    assert image.split("/")[0].endswith(".invalid")


def test_apply_looks_the_job_up_then_applies_the_job_yaml_with_the_kubeconfig(
    project, tmp_path, monkeypatch
):
    kubectl = stand_in_kubectl(tmp_path / "bin", monkeypatch)
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    flags = ("--nodes", "1", "--image", IMAGE, "--name", "ft")
    assert submit(project, *flags) == 0
    job_yaml = project / "out" / "ft" / "job.yaml"
    (job,) = yaml.safe_load_all(job_yaml.read_text())
    types = resource_type(job["apiVersion"], job["kind"])
    get = ["get", types, "ft", "-n", "training", "-o", "json", "--ignore-not-found"]
    kubectl.answer(*get)
    kubectl.answer("apply", "-f", str(job_yaml))
    assert submit(project, *flags, "--apply", "--kubeconfig", str(kubeconfig)) == 0
    assert kubectl.calls == [
        ["--kubeconfig", str(kubeconfig), *get],
        ["--kubeconfig", str(kubeconfig), "apply", "-f", str(job_yaml)],
    ]


def test_apply_without_kubectl_or_a_kubeconfig_or_with_a_placeholder_is_refused(
    project, tmp_path, monkeypatch, capsys
):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    err = refused(project, capsys, "--nodes", "1", "--image", IMAGE, "--apply")
    assert "--apply runs kubectl, which is not on PATH" in err
    assert "--apply needs a kubeconfig: pass --kubeconfig PATH or set KUBECONFIG" in err
    err = refused(project, capsys, "--nodes", "1", "--render-only", "--apply")
    assert "--render-only with --apply: a placeholder image cannot run" in err


def test_a_time_sliced_pool_takes_the_job_with_a_warning(tmp_path, capsys):
    """dev's spot-small shares each A10G among 4 pods (stacks/Pulumi.dev.yaml)."""
    (tmp_path / "project").mkdir()
    root = make_project(tmp_path / "project", {"st": stack_config_doc("dev")})
    assert submit(root, "--nodes", "1", "--pool", "spot-small", "--image", IMAGE) == 0
    err = capsys.readouterr().err
    assert "warning: pool spot-small shares each GPU among 4 pods (time-slicing)" in err


def test_a_bad_stack_exits_2_with_the_plans_message(project, capsys):
    assert main(["--stack", "nope", "--nodes", "1", "--", "t.py"], root=project) == 2
    err = capsys.readouterr().err
    assert "stacks/Pulumi.nope.yaml: invalid gpu-platform configuration" in err


# ---------------------------------------------------------------------------- --team

TEAMS = [
    (s, t.name)
    for s in STACKS
    for t in stack_config(s).scheduling.all_teams(stack_config(s).namespaces.training)
]


def worker_configs(stack: str) -> dict:
    return {
        w.name: stack_config(w.stack.rsplit("/", 1)[-1])
        for w in stack_config(stack).multikueue.workers
    }


@pytest.mark.parametrize(("stack", "team"), TEAMS)
def test_a_teams_job_lands_in_its_namespace_through_its_queue_at_its_priority(stack, team):
    cfg = stack_config(stack)
    (job,) = render(plan_job(cfg, team_job(team=team), worker_configs(stack)))
    assert job["metadata"]["namespace"] == team
    if cfg.scheduling.enabled:
        teams = cfg.scheduling.all_teams(cfg.namespaces.training)
        settings = next(t for t in teams if t.name == team)
        labels = job["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == "default"
        assert labels["kueue.x-k8s.io/priority-class"] == settings.priority_class
        assert jobsets.pod_spec(job)["priorityClassName"] == settings.priority_class


def test_a_teams_default_priority_is_research_and_the_flag_overrides_it():
    # scheduling.teams[].priority_class defaults to research (model/config/scheduling.py).
    cfg = stack_config("onprem")
    (research,) = [t for t in cfg.scheduling.teams if t.name == "research"]
    assert research.priority_class == "research"
    (job,) = render(plan_job(cfg, team_job(team="research", priority_class="preemptible"),
                             worker_configs("onprem")))  # fmt: skip
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "preemptible"


def test_an_unknown_team_is_refused_with_the_stacks_teams():
    with pytest.raises(SubmitError) as refused:
        plan_job(stack_config("onprem"), team_job(team="vision"), worker_configs("onprem"))
    assert refused.value.problems == [
        "--team 'vision' is not a team of this stack; its teams (scheduling.teams, and the "
        "training namespace): training, research"
    ]


def test_a_bursting_teams_job_is_rendered_for_the_workers_pool_and_managed_by_multikueue():
    # onprem's team research submits to ClusterQueue burst, whose worker is the burst stack
    # (p5.48xlarge: 8 H100, 32 EFA interfaces; stacks/Pulumi.burst.yaml).
    spec = plan_job(stack_config("onprem"), team_job(team="research", nodes=2),
                    worker_configs("onprem"))  # fmt: skip
    (job,) = render(spec)
    assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert spec.pool.name == "h100-spot"
    assert trainer([job])["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32
    assert trainer([job])["envFrom"] == [{"configMapRef": {"name": "nccl-h100-spot"}}]
    with pytest.raises(SubmitError, match="--pool 'a100' is not a GPU pool of this stack"):
        plan_job(stack_config("onprem"), team_job(team="research", pool="a100"),
                 worker_configs("onprem"))  # fmt: skip


def test_main_submits_a_bursting_teams_job_reading_the_workers_stack_file(tmp_path, capsys):
    root = make_project(
        tmp_path,
        {"onprem": stack_file_config("onprem"), "burst": stack_file_config("burst")},
    )
    argv = ["--stack", "onprem", "--team", "research", "--nodes", "2", "--image", IMAGE]
    out = tmp_path / "out"
    assert main([*argv, "--name", "ft", "--out", str(out), "--", *COMMAND], root=root) == 0
    (job,) = yaml.safe_load_all((out / "ft" / "job.yaml").read_text())
    assert job["metadata"]["namespace"] == "research"
    printed = capsys.readouterr().out
    assert "JobSet research/ft, 2 node(s) x 8 GPU(s) of pool h100-spot" in printed
    assert "dispatched by MultiKueue to worker burst" in printed
    assert main([*argv, "--team", "nlp", "--out", str(out), "--", *COMMAND], root=root) == 2
    assert "--team 'nlp' is not a team of this stack" in capsys.readouterr().err


def test_main_refuses_a_bursting_teams_job_on_a_worker_pool_that_claims_gpus_through_dra(
    tmp_path, capsys
):
    """MultiKueue copies only the JobSet to a worker, never the claim template `jobs submit`
    applies beside it (Kueue v0.19.2 pkg/controller/jobs/jobset/jobset_multikueue_adapter.go,
    SyncJob; site/content/en/docs/tasks/manage/setup_dra.md, "MultiKueue considerations"): on
    the worker the job's pods would wait for a template that never comes. The worker of the
    dra-beside fixture has an A100 pool on DRA beside its p5 pools."""
    _, files = DRA_WORKER_PROJECTS[DRA_BESIDE_STACK]
    root = make_project(tmp_path, files)
    argv = ["--stack", "onprem", "--team", "research", "--nodes", "2", "--image", IMAGE]
    out = tmp_path / "out"
    code = main([*argv, "--pool", "a100-dra", "--out", str(out), "--", *COMMAND], root=root)
    assert code == 2
    assert not out.exists()
    err = capsys.readouterr().err
    # Its nodes are not the burst's either: the manager's flavor selects only p5.48xlarge.
    assert "--pool 'a100-dra' cannot hold the job: its nodes are p4d.24xlarge in " in err
    assert "queue bursts to nodes of p5.48xlarge (scheduling.cluster_queues[1].burst" in err
    assert "; its job is applied with a " in err
    assert "ResourceClaimTemplate beside the JobSet (pool a100-dra: gpu_allocation dra in " in err
    assert "stacks/Pulumi.burst.yaml)" in err
    assert "jobset_multikueue_adapter.go SyncJob" in err
    assert "team research's queue bursts there (scheduling.cluster_queues[1].burst)" in err
    # Left to choose, it takes a worker pool on the device plugin and says why not the other.
    assert main([*argv, "--name", "ft", "--out", str(out), "--", *COMMAND], root=root) == 0
    objects = list(yaml.safe_load_all((out / "ft" / "job.yaml").read_text()))
    assert [o["kind"] for o in objects] == ["JobSet"]
    assert "cannot hold it: a100-dra (its nodes are p4d.24xlarge in " in capsys.readouterr().err


def test_a_bursting_teams_multi_node_job_is_refused_a_worker_pool_of_an_nvlink_domain():
    """A GB200 pool's job of 2 or more nodes is applied with a ComputeDomain, which MultiKueue
    does not copy; one node takes none (components/scheduling/job_claims.py). The worker of
    gb200-burst is the GB200 stack: 18 nodes a domain (EKS User Guide, "Use P6e-GB200
    UltraServers with Amazon EKS": u-p6e-gb200x72 is 18 instances)."""
    _, files = DRA_WORKER_PROJECTS[GB200_BURST_STACK]
    worker = parse_config({k.split(":", 1)[1]: v for k, v in files["burst"].items()}, "burst")
    (pool,) = worker.gpu_pools
    team = next(t for t in stack_config("onprem").scheduling.teams if t.name == "research")
    dest = Destination(team, worker, "burst", "stacks/Pulumi.burst.yaml", "q.burst")
    (problem,) = pool_problems(pool, "the job", 2, None, None, dest)
    assert problem.startswith(
        "its job is applied with a ComputeDomain beside the JobSet (pool nvl72: "
        "p6e-gb200.36xlarge, an NVLink domain of 18 nodes in stacks/Pulumi.burst.yaml)"
    )
    assert pool_problems(pool, "the job", 1, None, None, dest) == []
    # Not bursting: the same job is the GB200 stack's own, with its ComputeDomain beside it.
    assert pool_problems(pool, "the job", 2, None, None, Destination(team, worker)) == []


def test_a_bursting_teams_job_runs_only_on_a_worker_pool_of_the_bursts_instance_type():
    """The manager's burst flavor selects nodes of `burst.instance_type` alone
    (components/scheduling/multikueue.py, its nodeLabels): a job rendered for another pool of
    the worker would be admitted to that flavor and ask nodes it never has. The worker gains a
    p4d.24xlarge pool on the device plugin, cheaper by the hour than the p5.48xlarge the burst
    selects (model/catalog_rows.py: 21.958 against 55.04 USD), so the cheapest rule alone would
    take it."""
    _, files = DRA_WORKER_PROJECTS[DRA_BESIDE_STACK]
    worker_file = {**files["burst"]}
    groups = [g for g in worker_file["gpu-platform:gpu_node_groups"] if g["name"] != "a100-dra"]
    a100 = next(
        g for g in files["burst"]["gpu-platform:gpu_node_groups"] if g["name"] == "a100-dra"
    )
    worker_file["gpu-platform:gpu_node_groups"] = [
        *groups,
        {**{k: v for k, v in a100.items() if k != "gpu_allocation"}, "name": "a100"},
    ]
    worker = parse_config({k.split(":", 1)[1]: v for k, v in worker_file.items()}, "burst")
    manager = stack_config("onprem")
    spec = plan_job(manager, team_job(team="research", nodes=2), {"burst": worker})
    assert spec.pool.name in {"h100-spot", "h100-block"}
    assert all(
        "p5.48xlarge" in p.instance_types for p in worker.gpu_pools if p.name == spec.pool.name
    )
    with pytest.raises(SubmitError, match=r"queue bursts to nodes of p5\.48xlarge"):
        plan_job(manager, team_job(team="research", nodes=2, pool="a100"), {"burst": worker})
