"""`python -m jobs recipe`: the recipes' jobs render valid Kubernetes objects that Kueue admits
through queues the stack declares, gradient accumulation makes up the global batch on fewer
GPUs, every refusal comes before any job with the key or flag to fix, and the platform's
PodMonitor scrapes what the recipes export."""

from __future__ import annotations

import json

import pytest
import yaml

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from jobs.common import SubmitError
from jobs.kubectl import resource_type
from jobs.recipe import main, plan_job
from model.config import PlatformConfig
from model.config.loading import read_yaml
from model.config.recipe_training import EsrganSettings
from tests.conftest import STACKS, planned, stack_config
from tests.helpers import crds, jobsets
from tests.helpers.jobset_objects import live
from tests.helpers.kubectl import stand_in_kubectl
from tests.helpers.plan_objects import kinds
from tests.helpers.recipe_projects import DIGEST, IMAGE, refused, stack_with, submit
from tests.helpers.varied_stacks import DRA_CONFIGS, dra_config, gb200_config

RECIPES = ("prepare", "sd-finetune", "esrgan")


def staged(cfg: PlatformConfig) -> PlatformConfig:
    """The stack with the recipes image set and every model's checksums listed."""
    weights = {
        name: w.model_copy(update={"sha256": {"model.bin": DIGEST}})
        for name, w in cfg.recipes.weights.items()
    }
    recipes = cfg.recipes.model_copy(update={"image": IMAGE, "weights": weights})
    return cfg.model_copy(update={"recipes": recipes})


def holding_pools(cfg: PlatformConfig, recipe: str) -> list[str]:
    """The README's rule, restated: whole GPUs (no MIG) with the GPU memory the stack's config
    says the recipe needs (prepare names none)."""
    need = getattr(cfg.recipes.section(recipe), "min_gpu_memory_gib", 0)
    return [p.name for p in cfg.gpu_pools if p.sharing.mode != "mig" and p.gpu_memory_gib >= need]


def trainer(objects) -> dict:
    return jobsets.trainer(objects[-1])


# ---------------------------------------------------------------------- rendered jobs


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("stack", STACKS)
def test_every_recipe_renders_a_valid_job_on_a_pool_that_holds_it(stack, recipe):
    """On one of the pools that hold it, the cheapest (tests/jobs/test_pool_choice.py), saying
    why in the JobSet's annotation."""
    cfg = staged(stack_config(stack))
    fitting = holding_pools(cfg, recipe)
    if not fitting:
        with pytest.raises(SubmitError, match=rf"can hold {recipe}:|{recipe} needs one"):
            plan_job(cfg, recipe, nodes=1)
        return
    spec, _ = plan_job(cfg, recipe, nodes=1)
    assert spec.pool.name in fitting
    assert spec.annotations["gpu-platform/pool-choice"]
    objects = render(spec)
    assert [o["kind"] for o in objects] == ["JobSet"]
    for obj in objects:
        jobsets.validate(obj, cfg.cluster.kubernetes_version)


FIXTURES = {"gb200": gb200_config, **{name: lambda n=name: dra_config(n) for name in DRA_CONFIGS}}


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("stack", [*STACKS, *FIXTURES])
def test_every_recipe_on_every_pool_at_every_size_renders_or_is_refused_by_reason(stack, recipe):
    """The class of a recipe's default size meeting a pool's rule: on each pool, at one node,
    two and the pool's most, with the recipe's own GPUs per node, `jobs recipe` either renders
    a valid job or refuses with its reasons, never fails inside the job builder. (On a GB200
    pool a multi-node job has a ComputeDomain, which asks whole nodes, while prepare asks one
    GPU a node.)"""
    cfg = staged(FIXTURES[stack]() if stack in FIXTURES else stack_config(stack))
    for pool in cfg.gpu_pools:
        for nodes in sorted({1, min(2, pool.max_nodes), pool.max_nodes}):
            try:
                spec, _ = plan_job(cfg, recipe, nodes=nodes, pool=pool.name)
            except SubmitError as refusal:
                assert refusal.problems, (pool.name, nodes)
                continue
            for obj in render(spec):
                assert obj["kind"] in {"JobSet", "ComputeDomain", "ResourceClaimTemplate"}


def test_a_recipe_of_several_nodes_on_a_gb200_pool_takes_whole_nodes_by_default():
    # dra-driver-nvidia-gpu v0.4.1 cmd/compute-domain-kubelet-plugin/computedomain.go
    # AddNodeLabel: a node belongs to one ComputeDomain at a time, so a multi-node job on an
    # NVL72 pool takes all 4 GPUs of each p6e-gb200.36xlarge (EKS UltraServer page: 4 GPUs).
    cfg = staged(gb200_config())
    spec, _ = plan_job(cfg, "prepare", nodes=2)
    assert spec.gpus == 4
    spec, _ = plan_job(cfg, "prepare", nodes=1)
    assert spec.gpus == 1
    with pytest.raises(SubmitError, match="take all 4 GPUs of each node"):
        plan_job(cfg, "prepare", nodes=2, gpus_per_node=1)


def test_shipped_stacks_hold_every_recipe_but_sd_finetune_on_devs_24_gib_a10g():
    # model/config/recipe_training.py: sd-finetune needs 40 GiB, esrgan 24; AWS EC2 User Guide:
    # g5 and g6e.xlarge carry 24 GiB A10G / 48 GiB L40S, dev's group mixes them (the smallest
    # counts).
    for stack, recipes in {
        "dev": ("prepare", "esrgan"),
        "staging": RECIPES,
        "prod": RECIPES,
        "onprem": RECIPES,
    }.items():
        assert tuple(r for r in RECIPES if holding_pools(stack_config(stack), r)) == recipes
        for recipe in recipes:
            plan_job(staged(stack_config(stack)), recipe, nodes=1)


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_admits_the_job_through_a_local_queue_and_priority_the_stack_declares(stack):
    cfg = staged(stack_config(stack))
    assert holding_pools(cfg, "prepare"), f"{stack}: no pool of whole GPUs to run a recipe on"
    (job,) = render(plan_job(cfg, "prepare", nodes=1)[0])
    labels, plan = job["metadata"]["labels"], planned(stack)
    if not cfg.scheduling.enabled:
        assert not any(k.startswith("kueue.x-k8s.io/") for k in labels)
        return
    # Kueue pkg/controller/constants: QueueLabel and WorkloadPriorityClassLabel.
    queue = labels["kueue.x-k8s.io/queue-name"]
    priority = labels["kueue.x-k8s.io/priority-class"]
    assert (queue, priority) == (cfg.recipes.queue, cfg.recipes.priority_class)
    local_queues = {
        (q["metadata"]["namespace"], q["metadata"]["name"]) for q in kinds(plan, "LocalQueue")
    }
    assert (job["metadata"]["namespace"], queue) in local_queues
    assert priority in {w["metadata"]["name"] for w in kinds(plan, "WorkloadPriorityClass")}
    pod = jobsets.pod_spec(job)
    assert pod["priorityClassName"] in {p["metadata"]["name"] for p in kinds(plan, "PriorityClass")}
    assert job["spec"]["suspend"] is True


def test_the_pod_runs_the_recipe_under_torchrun_with_its_settings_in_the_environment():
    spec, _ = plan_job(
        staged(stack_config("prod")), "sd-finetune", nodes=2, gpus_per_node=4, name="sd-run"
    )
    container = trainer(render(spec))
    assert container["command"] == [
        "python",
        "/opt/gpu-platform/launcher/launch.py",
        "--nnodes=2",
        "--nproc-per-node=4",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        "--master-addr=sd-run-trainer-0-0.sd-run",
        "--master-port=29500",
        # recipes.grace_period_seconds (300 by default) less the launcher's 10 s.
        "--shutdown-timeout=290",
        "-m",
        "recipes",
        "sd-finetune",
        # Its own folder: a job with other settings gets another name, and never resumes this.
        "--out",
        "/mnt/shared-data/runs/sd-finetune/sd-run",
    ]
    env = {e["name"]: e.get("value") for e in container["env"]}
    settings = json.loads(env["RECIPE_SETTINGS"])
    # model/config/recipe_training.py defaults, from the source documents: lr 3e-6, global batch 32.
    assert settings["recipe"] == "sd-finetune"
    assert settings["learning_rate"] == 3e-6
    assert settings["global_batch"] == 32 and settings["micro_batch"] == 4
    assert settings["weights"] == {
        "stable-diffusion": {
            "path": "weights/stable-diffusion-v1-5",
            "sha256": {"model.bin": DIGEST},
        }
    }
    assert container["image"] == IMAGE
    # The config's defaults: the training namespace's LocalQueue, research priority.
    labels = render(spec)[-1]["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels["kueue.x-k8s.io/priority-class"] == "research"
    assert labels["gpu-platform/recipe"] == "sd-finetune"
    # Half a p5 node: 4 of its 8 H100 and 16 of its 32 EFA devices (AWS EC2 User Guide).
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 4
    assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == 16
    assert container["envFrom"] == [{"configMapRef": {"name": "nccl-h100-block"}}]
    # recipes.grace_period_seconds' default: time to save a checkpoint on eviction, where
    # Kubernetes' own 30 s is too short for a UNet's optimizer state.
    assert jobsets.pod_spec(render(spec)[-1])["terminationGracePeriodSeconds"] == 300


def test_prepare_takes_one_gpu_per_node_unless_asked_and_has_no_accumulation():
    cfg = staged(stack_config("prod"))
    spec, steps = plan_job(cfg, "prepare", nodes=2)
    assert (spec.gpus, steps) == (1, None)
    spec, _ = plan_job(cfg, "prepare", nodes=2, gpus_per_node=4)
    assert spec.gpus == 4


@pytest.mark.parametrize(
    ("nodes", "gpus", "expected"),
    [(1, 8, 1), (1, 4, 2), (1, 2, 4), (1, 1, 8), (2, 4, 1), (2, 2, 2)],
)
def test_gradient_accumulation_makes_up_the_global_batch_of_32_on_fewer_gpus(nodes, gpus, expected):
    """Issue 12 and the source documents: global batch 32 = 4 per GPU on 8 GPUs; accumulation
    makes up the difference on fewer."""
    cfg = staged(stack_config("prod"))
    _, steps = plan_job(cfg, "sd-finetune", nodes=nodes, gpus_per_node=gpus)
    assert steps == expected


def test_the_default_name_is_the_same_for_the_same_job_and_new_for_another():
    cfg = staged(stack_config("prod"))
    first, _ = plan_job(cfg, "esrgan", nodes=1)
    again, _ = plan_job(cfg, "esrgan", nodes=1)
    other, _ = plan_job(cfg, "esrgan", nodes=2, gpus_per_node=1)
    assert first.name == again.name != other.name
    assert first.name.startswith("esrgan-") and len(first.name) == len("esrgan-") + 10


def test_esrgan_takes_two_gpus_at_eight_per_gpu_by_default_as_fits_its_size():
    """The issue: ESRGAN's 16.7M-parameter generator is launch-bound on 8 GPUs; its defaults are
    1-2 GPUs at micro-batch 8-16, the paper's global batch 16 (ESRGAN section 4.1)."""
    settings = EsrganSettings()
    assert (settings.global_batch, settings.micro_batch) == (16, 8)
    spec, steps = plan_job(staged(stack_config("prod")), "esrgan", nodes=1)
    assert (spec.gpus_per_node, steps) == (2, 1)
    # dev's spot-small nodes have one GPU (a g5: 1 A10G, AWS EC2 User Guide): accumulation 2.
    spec, steps = plan_job(staged(stack_config("dev")), "esrgan", nodes=1, pool="spot-small")
    assert (spec.gpus_per_node, steps) == (1, 2)


# ------------------------------------------------------------------------- metrics


def test_recipe_pods_serve_metrics_on_the_port_and_label_the_podmonitor_selects():
    spec, _ = plan_job(staged(stack_config("prod")), "esrgan", nodes=1)
    (job,) = render(spec)
    pod = jobsets.pod_template(job)
    assert pod["metadata"]["labels"]["gpu-platform/metrics"] == "training"
    assert {"name": "metrics", "containerPort": 8000} in trainer(render(spec))["ports"]


def test_a_job_without_a_metrics_port_is_not_scraped():
    cfg = stack_config("prod")
    spec = spec_for_pool(cfg, "h100-block", name="x", image=IMAGE, command=["t.py"])
    (job,) = render(spec)
    assert "gpu-platform/metrics" not in jobsets.pod_template(job)["metadata"]["labels"]
    assert [p["name"] for p in trainer(render(spec))["ports"]] == ["rendezvous"]


@pytest.mark.parametrize("stack", STACKS)
def test_one_podmonitor_scrapes_the_training_namespaces_every_15_s(stack):
    cfg = stack_config(stack)
    (monitor,) = kinds(planned(stack), "PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == cfg.namespaces.monitoring
    spec = monitor["spec"]
    assert spec["selector"] == {"matchLabels": {"gpu-platform/metrics": "training"}}
    # The pod's JobSet becomes `job_name` (Prometheus pod discovery's
    # __meta_kubernetes_pod_label_<label>): the straggler rules group a job's ranks by it.
    assert spec["podMetricsEndpoints"] == [
        {
            "port": "metrics",
            "interval": "15s",
            "relabelings": [
                {
                    "sourceLabels": ["__meta_kubernetes_pod_label_jobset_sigs_k8s_io_jobset_name"],
                    "targetLabel": "job_name",
                }
            ],
        }
    ]
    teams = [t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)]
    assert spec["namespaceSelector"] == {"matchNames": teams}
    assert cfg.namespaces.training in teams
    # Prometheus Operator v0.93.0's PodMonitor schema (../shared/crds).
    assert crds.errors(monitor) == []


def test_the_podmonitor_schema_refuses_a_misspelt_endpoint_field():
    (monitor,) = kinds(planned("prod"), "PodMonitor")
    broken = json.loads(json.dumps(monitor))
    broken["spec"]["podMetricsEndpoints"][0]["intervall"] = "15s"
    assert any("intervall" in e for e in crds.errors(broken))


# ------------------------------------------------------------------ the command line


@pytest.fixture
def project(tmp_path):
    (tmp_path / "project").mkdir()
    return stack_with(tmp_path)


def test_main_writes_the_jobset_to_job_yaml(project, capsys):
    assert submit(project, "esrgan", "--nodes", "2", "--gpus-per-node", "1", "--name", "sr") == 0
    path = project / "out" / "esrgan" / "job.yaml"
    (job,) = yaml.safe_load_all(path.read_text())
    assert job["kind"] == "JobSet"
    assert job["metadata"]["name"] == "sr" and jobsets.job_spec(job)["completions"] == 2
    out = capsys.readouterr().out
    # esrgan's global batch 16 = micro-batch 8 x 2 GPUs (2 nodes x 1) x accumulation 1.
    assert f"Wrote {path}: JobSet training/sr, 2 node(s) x 1 GPU(s) of pool a100-efa" in out
    assert "gradient accumulation 1" in out


def test_a_global_batch_the_gpus_cannot_reach_is_refused_with_what_would_work(project, capsys):
    err = refused(project, capsys, "sd-finetune", "--nodes", "1", "--gpus-per-node", "3")
    assert (
        "recipes.sd_finetune.global_batch 32 is not a multiple of 12; with 3 GPUs at micro_batch "
        "4 reachable global batches are 12, 24, 36, …; or use 1, 2, 4, 8 GPUs" in err
    )


def test_a_global_batch_no_multiple_of_the_micro_batch_is_refused_as_the_plan_refuses_it(
    tmp_path, capsys
):
    (tmp_path / "project").mkdir()
    root = stack_with(tmp_path, recipes={"esrgan": {"global_batch": 15}})
    err = refused(root, capsys, "esrgan", "--nodes", "1")
    assert (
        "gpu-platform:recipes.esrgan.global_batch: 15 is not a multiple of micro_batch (8), so "
        "no GPU count reaches it; give 8 or 16, or another micro_batch" in err
    )


def test_an_unknown_pool_is_refused_with_the_stacks_pools(project, capsys):
    err = refused(project, capsys, "esrgan", "--nodes", "1", "--pool", "a100")
    assert "--pool 'a100' is not a GPU pool of this stack; its pools: a100-efa" in err


def test_a_pool_too_small_for_the_job_is_refused_naming_each_limit(project, capsys):
    err = refused(
        project, capsys, "esrgan", "--nodes", "3", "--gpus-per-node", "16", "--pool", "a100-efa"
    )
    # staging: 2 p4d.24xlarge nodes at most, 8 A100 each (AWS EC2 User Guide).
    assert "--nodes 3, but it has at most 2 nodes" in err
    assert "--gpus-per-node 16, but its nodes have 8 GPUs" in err


def test_no_pool_with_the_gpu_memory_lists_every_pool_and_why(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    groups = [
        {"name": "a10g-4", "instance_types": ["g5.12xlarge"], "scaling": {"max_size": 2}},
        {"name": "a10g-8", "instance_types": ["g5.48xlarge"], "scaling": {"max_size": 2}},
    ]
    root = stack_with(tmp_path, groups=groups)
    err = refused(root, capsys, "sd-finetune", "--nodes", "1", "--gpus-per-node", "4")
    # AWS EC2 User Guide: g5 instances carry NVIDIA A10G GPUs of 24 GiB.
    assert "no GPU pool of the stack (gpu_node_groups) can hold sd-finetune:" in err
    for pool in ("a10g-4", "a10g-8"):
        assert (
            f"{pool}: A10G with 24 GiB, below the 40 GiB sd-finetune needs "
            "(recipes.sd_finetune.min_gpu_memory_gib)" in err
        )


def test_a_mig_pool_is_refused(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    group = {
        "name": "a100-mig",
        "instance_types": ["p4d.24xlarge"],
        "zone": "us-east-1c",
        "scaling": {"max_size": 2},
        "gpu_sharing": {"mode": "mig"},
    }
    root = stack_with(tmp_path, groups=[group])
    err = refused(root, capsys, "esrgan", "--nodes", "1")
    assert "a100-mig: its GPUs are cut into MIG slices; distributed jobs train on whole GPUs" in err


def test_a_stack_without_gpu_pools_is_refused(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    root = stack_with(tmp_path, groups=[])
    err = refused(root, capsys, "prepare", "--nodes", "1")
    assert "the stack has no GPU pool (gpu_node_groups is empty); prepare needs one" in err


def test_weights_without_checksums_and_an_unset_image_are_refused_by_key(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    root = stack_with(tmp_path)
    stack = root / "stacks" / "Pulumi.st.yaml"
    doc = read_yaml(stack, str(stack))
    del doc["config"]["gpu-platform:recipes"]
    stack.write_text(yaml.safe_dump(doc))
    err = refused(root, capsys, "prepare", "--nodes", "1")
    assert "recipes.image is unset" in err and "--render-only" in err
    assert (
        "recipes.weights.clip.sha256 is empty: prepare reads clip from shared-data "
        "weights/clip-vit-base-patch32, which is not staged" in err
    )
    assert "`python -m recipes checksums <folder>`" in err


def test_render_only_renders_before_the_image_is_pushed_or_any_weights_are_staged(tmp_path, capsys):
    """Issue 19: `--render-only` works before any weights are staged; the unstaged models are
    named, and --apply still refuses a job that could not run."""
    (tmp_path / "project").mkdir()
    root = stack_with(tmp_path)
    stack = root / "stacks" / "Pulumi.st.yaml"
    doc = read_yaml(stack, str(stack))
    del doc["config"]["gpu-platform:recipes"]
    stack.write_text(yaml.safe_dump(doc))
    assert submit(root, "sd-finetune", "--nodes", "1", "--render-only") == 0
    err = capsys.readouterr().err
    assert "warning: rendered only: recipes.weights.stable-diffusion.sha256 is empty" in err
    (job,) = yaml.safe_load_all((root / "out" / "sd-finetune" / "job.yaml").read_text())
    image = jobsets.trainer(job)["image"]
    # RFC 2606 reserves .invalid: a placeholder that can never be pulled.
    assert image.split("/")[0].endswith(".invalid")


def test_a_bad_stack_exits_2_with_the_plans_message(project, capsys):
    assert main(["esrgan", "--stack", "nope", "--nodes", "1"], root=project) == 2
    err = capsys.readouterr().err
    assert "stacks/Pulumi.nope.yaml: invalid gpu-platform configuration" in err
    assert err.rstrip().endswith(
        "Nothing was declared. Fix the stack file, or `pulumi config set --path`."
    )


# --------------------------------------------------------------------------- --apply


def test_apply_looks_the_job_up_then_applies_the_job_yaml_with_the_kubeconfig(
    project, tmp_path, monkeypatch
):
    kubectl = stand_in_kubectl(tmp_path / "bin", monkeypatch)
    job_yaml = project / "out" / "esrgan" / "job.yaml"
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    # Rendered first to learn the job's name and kind, then looked up: none exists.
    assert submit(project, "esrgan", "--nodes", "1") == 0
    (job,) = yaml.safe_load_all(job_yaml.read_text())
    name, types = job["metadata"]["name"], resource_type(job["apiVersion"], job["kind"])
    kubectl.answer("get", types, name, "-n", "training", "-o", "json", "--ignore-not-found")
    kubectl.answer("apply", "-f", str(job_yaml))
    flags = ("--apply", "--kubeconfig", str(kubeconfig))
    assert submit(project, "esrgan", "--nodes", "1", *flags) == 0
    assert kubectl.calls == [
        ["--kubeconfig", str(kubeconfig), "get", types, name, "-n", "training", "-o", "json",
         "--ignore-not-found"],
        ["--kubeconfig", str(kubeconfig), "apply", "-f", str(job_yaml)],
    ]  # fmt: skip


def test_apply_falls_back_to_kubeconfig_in_the_environment(project, tmp_path, monkeypatch):
    kubectl = stand_in_kubectl(tmp_path / "bin", monkeypatch)
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    # No answers: the lookup fails as an unreachable cluster would, and nothing is applied.
    assert submit(project, "prepare", "--nodes", "1", "--apply") == 1
    assert kubectl.calls[0][:2] == ["--kubeconfig", str(kubeconfig)]
    assert kubectl.verbs() == ["get"]


def test_a_recipe_job_that_exists_is_left_as_it_is_as_a_teams_is(
    project, tmp_path, monkeypatch, capsys
):
    """jobs/submission.submit_to serves both commands; tests/jobs/test_resubmit.py covers each
    state."""
    kubectl = stand_in_kubectl(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\n")
    assert submit(project, "esrgan", "--nodes", "1") == 0
    job_yaml = project / "out" / "esrgan" / "job.yaml"
    (job,) = yaml.safe_load_all(job_yaml.read_text())
    name, types = job["metadata"]["name"], resource_type(job["apiVersion"], job["kind"])
    get = ("get", types, name, "-n", "training", "-o", "json", "--ignore-not-found")
    kubectl.answer(*get, stdout=live(job, "running"))
    assert submit(project, "esrgan", "--nodes", "1", "--apply", "--resume") == 3
    assert kubectl.verbs() == ["get"]
    captured = capsys.readouterr()
    assert f"{job['kind']} training/{name} exists: running" in captured.out
    assert "--resume refused" in captured.err


def test_apply_without_kubectl_or_a_kubeconfig_is_refused_before_writing(
    project, tmp_path, monkeypatch, capsys
):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    err = refused(project, capsys, "esrgan", "--nodes", "1", "--apply")
    assert "--apply runs kubectl, which is not on PATH" in err
    assert "--apply needs a kubeconfig: pass --kubeconfig PATH or set KUBECONFIG" in err
    err = refused(
        project, capsys, "esrgan", "--nodes", "1", "--apply", "--kubeconfig", str(tmp_path / "no")
    )
    assert f"--kubeconfig {tmp_path / 'no'}: no such file" in err


def test_an_onprem_stack_applies_with_its_own_kubeconfig_path(monkeypatch):
    """stacks/Pulumi.onprem.yaml names existing.kubeconfig_path; a missing file says so."""
    from jobs.common import kubeconfig

    monkeypatch.setenv("HOME", "/nonexistent-home")
    with pytest.raises(
        SubmitError, match=r"existing.kubeconfig_path ~/.kube/onprem-a100.yaml: no such file"
    ):
        kubeconfig(None, stack_config("onprem"), {"KUBECONFIG": "/etc/hostname"})


def test_a_time_sliced_pool_takes_the_job_with_a_warning(tmp_path, capsys):
    """dev's spot-small shares each A10G among 4 pods (stacks/Pulumi.dev.yaml)."""
    (tmp_path / "project").mkdir()
    root = stack_with(tmp_path, base="dev")
    assert submit(root, "esrgan", "--nodes", "1") == 0
    err = capsys.readouterr().err
    assert "warning: pool spot-small shares each GPU among 4 pods (time-slicing)" in err


@pytest.mark.parametrize(
    ("choices", "message"),
    [
        ({"nodes": 0}, "--nodes 0: give 1 or more"),
        ({"nodes": 1, "gpus_per_node": 0}, "--gpus-per-node 0: give 1 or more"),
        ({"nodes": 1, "name": "Big_Run"}, "--name 'Big_Run': JobSet's webhook refuses it"),
    ],
)
def test_sizes_below_one_and_names_that_are_no_dns_label_are_refused(choices, message):
    with pytest.raises(SubmitError, match=message):
        plan_job(staged(stack_config("prod")), "esrgan", **choices)


def test_a_name_whose_pod_names_exceed_63_characters_is_refused(project, capsys):
    """JobSet's webhook refuses a JobSet whose pod names `<name>-trainer-0-<index>-abcde`
    exceed a 63-character DNS-1035 label (jobset v0.12.0 pkg/webhooks/jobset_webhook.go
    l. 249, podNameTooLongErrorMsg): `-trainer-0-1-abcde` is 18 characters, so 2 nodes leave
    45; `python -m jobs recipe` refuses a longer name at render time, exit 2."""
    cfg = staged(stack_config("prod"))
    spec, _ = plan_job(cfg, "esrgan", nodes=2, gpus_per_node=1, name="a" * 45)
    (obj,) = render(spec)
    assert len(f"{obj['metadata']['name']}-trainer-0-1-abcde") == 63
    flags = ("--nodes", "2", "--gpus-per-node", "1", "--name", "a" * 46)
    assert submit(project, "esrgan", *flags) == 2
    err = capsys.readouterr().err
    assert f"--name '{'a' * 46}': JobSet's webhook refuses it" in err
    assert "with 2 node(s) the name has at most 45 characters" in err


def test_a_recipe_for_a_team_runs_in_its_namespace_through_its_queue():
    # onprem's team research bursts to the worker burst (stacks/Pulumi.onprem.yaml): the job is
    # rendered for burst's pool and handed to MultiKueue.
    burst = {"burst": stack_config("burst")}
    spec, _ = plan_job(
        stack_config("onprem"), "prepare", 1, render_only=True, team="research", workers=burst
    )
    (job,) = render(spec)
    assert job["metadata"]["namespace"] == "research"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert spec.pool.name == "h100-spot"
    with pytest.raises(SubmitError, match="--team 'nlp' is not a team of this stack"):
        plan_job(stack_config("onprem"), "prepare", 1, render_only=True, team="nlp")
