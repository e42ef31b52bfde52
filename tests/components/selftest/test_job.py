"""The post-deploy self-test: its config (modes, floors, refused input), the JobSet it declares on
every stack, how pulumi up waits for it, and what it waits for."""

from __future__ import annotations

import json

import pytest

from components.scheduling.kueue import uncounted_resources
from components.scheduling.queues import kueue_objects
from components.scheduling.training_job import render
from components.selftest.job import run_id, selftest_env, selftest_report, selftest_spec
from model.config import ConfigError, parse_config
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import (
    STACKS,
    find,
    make_project,
    planned,
    stack_config,
)
from tests.helpers import jobsets
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing

JOB = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
DIGEST = "@sha256:" + "0" * 64
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest" + DIGEST
P5 = {"name": "h100", "instance_types": ["p5.48xlarge"], "efa": True, "scaling": {"max_size": 2}}


def with_selftest(stack: str, **selftest):
    """A shipped stack's config with the self-test switched on."""
    cfg = stack_config(stack)
    raw = cfg.model_dump(exclude_unset=True)
    raw["selftest"] = {"image": IMAGE, **selftest}
    return parse_config(raw, f"stacks/Pulumi.{stack}.yaml")


# --------------------------------------------------------------------------- config


def test_off_until_an_image_is_given_then_block_in_production_and_warn_elsewhere():
    assert stack_config("staging").selftest.resolved_mode(production=True) == "off"
    assert with_selftest("prod").selftest.resolved_mode(production=True) == "block"
    assert with_selftest("dev").selftest.resolved_mode(production=False) == "warn"
    assert with_selftest("dev", mode="off").selftest.resolved_mode(production=False) == "off"


def test_floors_default_to_the_documented_figures_with_their_source():
    report = selftest_report(with_selftest("prod", nodes=2))
    floors = report["floors"]
    # shared/FACTS.md "Self-test numbers": one 8 x H100 node 460 GB/s; 2 x p5 444 GB/s at 2 GiB.
    assert floors["intra_node_busbw_gbps"]["value"] == 460.0
    assert floors["inter_node_busbw_gbps"]["value"] == 444.0
    assert "FACTS.md" in floors["inter_node_busbw_gbps"]["source"]
    # 9,600 GiB of PERSISTENT_2 at 500 MB/s/TiB gives 4,688 MB/s (STYLE.md's worked example);
    # half of it, shared by two nodes.
    assert floors["shared-data.write_mb_s"]["value"] == 1172.0
    assert floors["shared-data.read_mb_s"]["value"] == 1172.0
    assert floors["nvme-cache.small_file_p99_us"]["value"] == 200.0
    assert floors["gemm_fraction"]["value"] == 0.75
    assert floors["memory_bandwidth_fraction"]["value"] == 0.80
    a100 = selftest_report(stack_config("onprem"))["floors"]
    # FACTS.md: one 8 x A100 node 228 GB/s; no cross-node figure for the on-prem pool.
    assert a100["intra_node_busbw_gbps"]["value"] == 228.0
    assert "inter_node_busbw_gbps" not in a100


def test_a_stack_floor_overrides_the_table():
    floors = selftest_report(with_selftest("prod", intra_node_busbw_gbps=400))["floors"]
    assert floors["intra_node_busbw_gbps"] == {
        "value": 400.0,
        "source": "selftest.intra_node_busbw_gbps",
    }


REFUSED = [
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "pool": "h200"}),
        f"{NS}:selftest.pool",
        "'h200'",
        "h100",
        id="unknown-pool",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "nodes": 3}),
        f"{NS}:selftest.nodes",
        "3 nodes",
        "at most 2",
        id="more-nodes-than-the-pool",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "gpus_per_node": 16}),
        f"{NS}:selftest.gpus_per_node",
        "16 GPUs",
        "has 8",
        id="more-gpus-than-a-node",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": "registry.example.com/selftest:latest"}),
        f"{NS}:selftest.image",
        "registry.example.com/selftest:latest",
        "pinned by digest",
        id="image-by-tag",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"mode": "block"}),
        f"{NS}:selftest.image",
        "required with mode block",
        "selftest.mode: off",
        id="block-without-image",
    ),
    pytest.param(
        existing(selftest={"image": IMAGE}),
        f"{NS}:selftest.mode",
        "no GPU pool",
        "mode: off",
        id="no-pool-to-test",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "provisioning_minutes": -5}),
        f"{NS}:selftest.provisioning_minutes",
        "-5",
        "greater than or equal to 0",
        id="negative-provisioning-allowance",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), REFUSED)
def test_bad_selftest_config_exits_2_naming_the_key(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_a_refused_selftest_raises_config_error_before_anything():
    with pytest.raises(ConfigError):
        parse_config(
            {"provider": "existing", "existing": {"name": "x", "kubeconfig_path": "~/k"},
             "selftest": {"mode": "bogus"}},
            "stacks/Pulumi.bad.yaml",
        )  # fmt: skip


# --------------------------------------------------------------------------- the Job


@pytest.mark.parametrize("stack", STACKS)
def test_the_selftest_job_is_valid_on_every_stack(stack):
    cfg = with_selftest(stack)
    for obj in render(selftest_spec(cfg)):
        jobsets.validate(obj, cfg.cluster.kubernetes_version)


def test_the_selftest_runs_the_bootstrap_package_under_torchrun_and_files_its_report():
    spec = selftest_spec(with_selftest("prod", nodes=2))
    (job,) = render(spec)
    container = jobsets.trainer(job)
    assert container["command"][-2:] == ["-m", "selftest"]
    assert container["image"] == IMAGE
    env = {e["name"]: e.get("value") for e in container["env"]}
    run = spec.env["SELFTEST_RUN_ID"]
    assert job["metadata"]["name"] == f"selftest-{run}"
    assert env["SELFTEST_OUT"] == f"/mnt/shared-data/selftest/{run}"
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["SELFTEST_EXPECTED_GPUS"] == "8"
    assert env["SELFTEST_EXPECTED_FABRIC_DEVICES"] == "32"
    assert env["SELFTEST_INSTANCE_TYPE"] == "p5.48xlarge"
    assert jobsets.job_spec(job)["activeDeadlineSeconds"] == 30 * 60
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "research"


def test_a_new_run_whenever_the_stack_changes_and_the_same_run_when_it_does_not():
    one, same = run_id(with_selftest("prod")), run_id(with_selftest("prod"))
    other = run_id(with_selftest("prod", nodes=2))
    assert one == same
    assert one != other
    assert len(one) == 10


def test_block_awaits_the_jobsets_completed_condition_and_warn_skips_the_await():
    """pulumi-kubernetes v4 (provider/pkg/metadata/overrides.go): `pulumi.com/waitFor:
    condition=<type>` awaits any object until that condition is True; JobSet v0.12.0 sets
    `Completed` when the JobSet succeeds (api/jobset/v1alpha2/jobset_types.go,
    JobSetCompleted)."""
    (blocking,) = render(selftest_spec(with_selftest("prod", mode="block")))
    assert blocking["metadata"]["annotations"] == {"pulumi.com/waitFor": "condition=Completed"}
    (warning,) = render(selftest_spec(with_selftest("prod", mode="warn")))
    assert warning["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}


def test_a_failed_check_is_a_verdict_not_a_fault_to_restart():
    """The self-test exits non-zero on a FAIL: its JobSet restarts no group for it (maxRestarts
    0, whatever scheduling.jobs says); a preempted group (143) still restarts without counting."""
    (obj,) = render(selftest_spec(with_selftest("prod")))
    policy = obj["spec"]["failurePolicy"]
    assert policy["maxRestarts"] == 0
    assert [r["action"] for r in policy["rules"]] == [
        "FailJobSet",
        "RestartJobSetAndIgnoreMaxRestarts",
    ]


# --------------------------------------------------------------------------- under mocks


def test_shipped_onprem_declares_the_job_after_everything_it_tests():
    plan = planned("onprem")
    (job,) = [r for r in plan.resources if r.type == JOB]
    assert job.name == "onprem-selftest-job"
    # Depending on a component waits for its children: the Job's dependencies are the
    # children of every component it tests.
    for needed in (
        "gpu-platform:data:GpuOperator$kubernetes:helm.sh/v3:Release",
        "gpu-platform:data:NcclSettings$kubernetes:core/v1:ConfigMap",
        "gpu-platform:data:NetworkOperator$kubernetes:mellanox.com/v1alpha1:NicClusterPolicy",
        "gpu-platform:storage:RookCeph$kubernetes:core/v1:PersistentVolumeClaim",
        "gpu-platform:scheduling:Scheduling$kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
        "gpu-platform:observability:Monitoring$kubernetes:helm.sh/v3:Release",
    ):
        assert any(needed in d for d in job.dependencies), needed
    assert plan.outputs["selftest"]["mode"] == "block"
    assert plan.outputs["selftest"]["nodes"] == 2


def test_an_aws_stack_gets_a_private_scanned_immutable_encrypted_repository(tmp_path):
    stack = aws(
        gpu_node_groups=[P5],
        storage={"fsx": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 1200}},
        selftest={"image": IMAGE},
    )
    plan = build_plan(run_program("st", make_project(tmp_path, {"st": stack})))
    (repo,) = [r for r in plan.resources if r.type == "aws:ecr/repository:Repository"]
    assert repo.inputs["imageScanningConfiguration"] == {"scanOnPush": True}
    assert repo.inputs["imageTagMutability"] == "IMMUTABLE"
    assert repo.inputs["encryptionConfigurations"] == [{"encryptionType": "KMS"}]
    (job,) = [r for r in plan.resources if r.type == JOB]
    assert any("gpu-platform:data:EfaDevicePlugin$" in d for d in job.dependencies)
    assert any("gpu-platform:storage:FsxLustre$" in d for d in job.dependencies)
    # The GPU nodes and the autoscaler that brings them up from zero.
    assert any("gpu-platform:data:GpuNodeGroup$" in d for d in job.dependencies)
    assert any("gpu-platform:data:ClusterAutoscaler$" in d for d in job.dependencies)
    assert any(w.startswith("selftest.mode is warn") for w in plan.warnings)


def test_off_declares_no_job():
    plan = planned("staging")
    assert not [r for r in plan.resources if r.type == JOB]
    assert plan.outputs["selftest"] == {"mode": "off"}


def test_the_shipped_example_digest_is_warned_about():
    assert any("all-zero EXAMPLE digest" in w for w in planned("onprem").warnings)


def test_without_kueue_the_job_is_neither_queued_nor_suspended():
    cfg = with_selftest("onprem", nodes=2)
    raw = cfg.model_dump(exclude_unset=True)
    raw["scheduling"] = {"enabled": False}
    # MultiKueue runs on Kueue: the shipped onprem's workers go with it.
    raw.pop("multikueue", None)
    (job,) = render(selftest_spec(parse_config(raw, "stacks/Pulumi.onprem.yaml")))
    assert job["spec"]["suspend"] is False
    assert "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]
    assert "priorityClassName" not in jobsets.pod_spec(job)


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_can_admit_what_the_selftest_asks_for(stack):
    """Kueue admits no workload asking for a resource its ClusterQueue neither covers nor
    excludes (Kueue docs, "Resources": excludeResourcePrefixes); the Job would wait forever."""
    cfg = with_selftest(stack)
    (job,) = render(selftest_spec(cfg))
    container = jobsets.trainer(job)
    objects = kueue_objects(cfg, autoscaled=cfg.provider == "aws")
    # The self-test runs in the training namespace, on that team's ClusterQueue.
    training = cfg.namespaces.training
    name = next(t.cluster_queue for t in cfg.scheduling.all_teams(training) if t.name == training)
    (queue,) = [o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == name]
    covered = {r for g in queue["spec"]["resourceGroups"] for r in g["coveredResources"]}
    excluded = uncounted_resources(cfg)
    for resource in container["resources"]["requests"]:
        assert resource in covered or resource.startswith(tuple(excluded)), resource


def test_expected_fabric_devices_per_pool_kind():
    def expected(cfg):
        (job,) = render(selftest_spec(cfg))
        container = jobsets.trainer(job)
        env = {e["name"]: e.get("value") for e in container["env"]}
        return env["SELFTEST_EXPECTED_FABRIC_DEVICES"], env["SELFTEST_FABRIC"]

    # p5.48xlarge: 32 EFA interfaces (AWS EC2 User Guide); onprem lists two HCAs, mlx5_0 and
    # mlx5_1; the dev pool has no EFA.
    assert expected(with_selftest("prod")) == ("32", "efa")
    assert expected(stack_config("onprem")) == ("2", "roce")
    assert expected(with_selftest("dev")) == ("0", "tcp")


def test_the_job_tells_the_selftest_where_this_nodes_exporter_and_its_floors_are():
    # The GPU Operator names its exporter Service nvidia-dcgm-exporter (port 9400); with
    # internalTrafficPolicy Local a pod reaches the exporter of its own node (Kubernetes docs,
    # "Service Internal Traffic Policy").
    cfg = stack_config("prod")
    env = selftest_env(cfg, "abc")
    assert env["SELFTEST_DCGM_URL"] == ("http://nvidia-dcgm-exporter.gpu-operator.svc:9400/metrics")
    release = "kubernetes:helm.sh/v3:Release"
    operator = find(planned("prod"), release, "prod-gpu-operator").inputs["values"]
    assert operator["dcgmExporter"]["service"] == {"internalTrafficPolicy": "Local"}
    # The names the runner reads (bootstrap/selftest: collectives.floor_for, compute).
    assert {
        "intra_node_busbw_gbps",
        "gemm_fraction",
        "memory_bandwidth_fraction",
        "shared-data.write_mb_s",
        "nvme-cache.small_file_p99_us",
    } <= set(json.loads(env["SELFTEST_FLOORS"]))


# --------------------------------------------------------------------------- how long up waits


def minutes(timeout: str) -> int:
    assert timeout.endswith("m"), timeout
    return int(timeout[:-1])


def assert_up_outwaits_the_job(plan, cfg) -> int:
    """Every Job pulumi up awaits: its wait covers queueing and node provisioning, which start
    on Pulumi's clock at creation, before the Job's own (activeDeadlineSeconds counts from the
    Job's startTime, reset when Kueue resumes a suspended Job: Kubernetes docs, "Job
    suspension"), and then the whole run."""
    awaited = 0
    for job in plan.of_type(JOB):
        deadline = jobsets.job_spec(job.inputs)["activeDeadlineSeconds"]
        allowance = cfg.selftest.provisioning_minutes
        for op in ("create", "update"):
            assert minutes(job.custom_timeouts[op]) * 60 == deadline + allowance * 60, op
        awaited += 1
    assert awaited == (cfg.selftest.resolved_mode(cfg.production) != "off")
    return awaited


@pytest.mark.parametrize("stack", STACKS)
def test_up_waits_for_queueing_and_provisioning_then_the_whole_run(stack):
    assert_up_outwaits_the_job(planned(stack), stack_config(stack))


def test_shipped_onprem_waits_an_hour_for_a_half_hour_run():
    # selftest.timeout_minutes 30 and provisioning_minutes 30 (defaults): the Job may run 1,800
    # s once started, pulumi up waits 60 minutes from its creation.
    (job,) = planned("onprem").of_type(JOB)
    assert jobsets.job_spec(job.inputs)["activeDeadlineSeconds"] == 1800
    assert job.custom_timeouts == {"create": "60m", "update": "60m"}
    assert planned("onprem").outputs["selftest"]["up_waits_minutes"] == 60


def test_an_aws_stack_that_blocks_waits_for_its_allowance(tmp_path):
    stack = aws(
        gpu_node_groups=[P5],
        selftest={
            "image": IMAGE,
            "mode": "block",
            "timeout_minutes": 20,
            "provisioning_minutes": 45,
        },
    )
    plan = build_plan(run_program("st", make_project(tmp_path, {"st": stack})))
    (job,) = plan.of_type(JOB)
    assert jobsets.job_spec(job.inputs)["activeDeadlineSeconds"] == 1200
    assert job.custom_timeouts == {"create": "65m", "update": "65m"}
    assert assert_up_outwaits_the_job(plan, stack_config_of(stack)) == 1


def stack_config_of(raw: dict):
    return parse_config(
        {k.removeprefix(f"{NS}:"): v for k, v in raw.items()}, "stacks/Pulumi.st.yaml"
    )
