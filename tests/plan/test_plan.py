"""The offline plan: every stack plans, deterministically, with no silent nulls, and the harness
catches what the mock engine lets through."""

from __future__ import annotations

import json

import pulumi
import pytest

from model.stacks import SECRET, read_project, read_stack_config
from plan import cli as plan_cli
from plan.cli import format_plan, main, stack_references, write_outputs
from plan.engine import DuplicateResourceError, RecordingMonitor, run_program
from tests.conftest import (
    STACKS,
    copy_program,
    find,
    make_project,
    planned,
    stack_file_config,
)
from tests.helpers.leaves import walk


def test_shipped_examples_are_all_present():
    # A user's own stacks come on top of these; they are never counted.
    assert {"dev", "staging", "prod", "onprem"} <= set(STACKS)


def test_every_stack_plans_without_nulls(stack_plan):
    assert stack_plan.resources
    for resource in stack_plan.resources:
        assert None not in list(walk(resource.inputs)), resource.name
    assert None not in list(walk(stack_plan.outputs))


def test_shipped_dev_values_known_after_apply_name_their_source():
    plan = planned("dev")
    subnet = find(plan, "aws:ec2/subnet:Subnet", "dev-private-us-east-1a")
    assert subnet.inputs["vpcId"] == "(known after apply: dev-vpc.id)"
    oidc = find(plan, "aws:iam/openIdConnectProvider:OpenIdConnectProvider", "dev-oidc")
    assert oidc.inputs["url"] == "(known after apply: dev-eks.identities[0].oidcs[0].issuer)"
    assert plan.outputs["vpc_id"] == "(known after apply: dev-vpc.id)"
    assert plan.outputs["kubeconfig"] == SECRET


def test_two_plans_write_byte_identical_files(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    write_outputs(run_plan("prod"), first)
    write_outputs(run_plan("prod"), second)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel


def run_plan(stack):
    from plan.model import build_plan

    return build_plan(run_program(stack))


def test_shipped_dev_resources_json_has_the_documented_shape(tmp_path):
    write_outputs(planned("dev"), tmp_path)
    doc = json.loads((tmp_path / "resources.json").read_text())
    assert set(doc) == {"stack", "resources", "outputs"}
    assert doc["stack"] == "dev"
    keys = {"urn", "type", "name", "parent", "inputs", "dependencies", "protect"}
    assert all(set(r) - {"retain_on_delete"} == keys for r in doc["resources"])
    # Only where set: dev's one team namespace, the training one (docs/operations.md,
    # "Namespaces a destroy leaves").
    retained = [(r["type"], r["name"]) for r in doc["resources"] if r.get("retain_on_delete")]
    assert retained == [("kubernetes:core/v1:Namespace", "ns-training")]
    names = sorted(p.name for p in (tmp_path / "manifests").iterdir())
    assert names == [
        "clusterqueue-cluster-shared.yaml",
        "configmap-monitoring-dashboard-fleet-health.yaml",
        "configmap-monitoring-dashboard-gpu-fleet.yaml",
        "configmap-monitoring-dashboard-queues.yaml",
        "configmap-monitoring-dashboard-team-cost.yaml",
        "configmap-monitoring-dashboard-training-job.yaml",
        "configmap-monitoring-pushgateway-sweep.yaml",
        "configmap-training-nccl-spot-small.yaml",
        "configmap-training-training-launcher.yaml",
        "cronjob-monitoring-pushgateway-sweep.yaml",
        "localqueue-training-default.yaml",
        "namespace-cluster-gpu-operator.yaml",
        "namespace-cluster-gpu-platform-selftest.yaml",
        "namespace-cluster-gpu-platform.yaml",
        "namespace-cluster-monitoring.yaml",
        "namespace-cluster-training.yaml",
        "persistentvolume-cluster-fsx-shared-data.yaml",
        "persistentvolumeclaim-training-shared-data.yaml",
        "podmonitor-monitoring-training-jobs.yaml",
        "priorityclass-cluster-preemptible.yaml",
        "priorityclass-cluster-production-training.yaml",
        "priorityclass-cluster-research.yaml",
        "prometheusrule-monitoring-gpu-platform-alerts.yaml",
        "resourceflavor-cluster-spot-small.yaml",
        "scaledobject-training-llm-inference.yaml",
        "secret-monitoring-grafana-admin.yaml",
        "storageclass-cluster-gp3.yaml",
        "workloadpriorityclass-cluster-preemptible.yaml",
        "workloadpriorityclass-cluster-production-training.yaml",
        "workloadpriorityclass-cluster-research.yaml",
    ]


def test_shipped_dev_printed_plan_nests_resources_under_components_and_counts_them():
    text = format_plan(planned("dev"))
    assert "    + gpu-platform:platform:Platform dev" in text
    assert "      + gpu-platform:control:Network dev-network" in text
    assert "        + aws:ec2/vpc:Vpc dev-vpc" in text
    custom = sum(r.custom for r in planned("dev").resources)
    assert f"Plan: {custom} to create" in text
    assert "by plane: control" in text
    assert "  vpc_id: (known after apply: dev-vpc.id)" in text


@pytest.mark.usefixtures("cli_on_session_plans")
def test_main_prints_plan_and_elapsed_time(tmp_path, capsys):
    assert main(["onprem", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    count = sum(r.custom for r in planned("onprem").resources)
    assert f"Plan: {count} to create" in out
    assert out.rstrip().splitlines()[-1].startswith(f"Planned onprem: {count} resources in ")


def test_duplicate_urns_fail_the_plan(tmp_path):
    program = (
        "import pulumi\n"
        "pulumi.CustomResource('aws:s3/bucket:Bucket', 'same', {})\n"
        "pulumi.CustomResource('aws:s3/bucket:Bucket', 'same', {})\n"
    )
    root = copy_program(tmp_path, program, {"dup": {}})
    with pytest.raises(DuplicateResourceError, match=r"aws:s3/bucket:Bucket::same"):
        run_program("dup", root)


def test_same_name_of_another_type_is_not_a_duplicate(tmp_path):
    program = (
        "import pulumi\n"
        "pulumi.CustomResource('aws:s3/bucket:Bucket', 'same', {})\n"
        "pulumi.CustomResource('aws:sqs/queue:Queue', 'same', {})\n"
    )
    root = copy_program(tmp_path, program, {"ok": {}})
    assert len(run_program("ok", root).resources) == 3


def test_project_defaults_apply_and_the_stack_file_overrides_them(tmp_path):
    project_config = {
        "production": {"type": "boolean", "default": True},
        "provider": {"type": "string", "description": "declared, no default"},
        "aws:region": "eu-west-1",
    }
    stack = {
        "gpu-platform:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "gpu-platform:network": {"flow_logs": False},
        "gpu-platform:existing": {"kubeconfig": {"secure": "v1:AAAA"}},
    }
    root = make_project(tmp_path, {"mixed": stack}, project_config)
    config, secrets = read_stack_config(read_project(root), "mixed")
    assert config["gpu-platform:production"] == "true"
    assert "gpu-platform:provider" not in config
    assert config["aws:region"] == "eu-west-1"
    assert json.loads(config["gpu-platform:network"]) == {"flow_logs": False}
    assert json.loads(config["gpu-platform:existing"]) == {"kubeconfig": SECRET}
    assert secrets == ["gpu-platform:existing"]


def test_project_default_reaches_the_program(tmp_path):
    stack = {
        "gpu-platform:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "gpu-platform:network": {
            "vpn_gateway": {"id": "vgw-0123456789abcdef0", "cidrs": ["10.8.0.0/24"]}
        },
        "gpu-platform:cluster": {
            "admin_principal_arns": ["arn:aws:iam::111122223333:role/platform-admins"],
            "api_access_cidrs": ["10.8.0.0/24"],
        },
    }
    root = make_project(tmp_path, {"p": stack}, {"production": {"default": True}})
    recording = run_program("p", root)
    protected = sorted(r.name for r in recording.resources.values() if r.protect)
    assert protected == ["p-eks", "p-eks-secrets"]


def test_missing_stack_file_exits_2_and_lists_the_stacks_that_exist(capsys):
    assert main(["nosuchstack"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stacks/Pulumi.nosuchstack.yaml: invalid gpu-platform configuration")
    assert f"the stacks that exist: {', '.join(STACKS)}" in err
    assert "Nothing was declared" in err


def test_the_engine_is_sent_no_stack_walk_a_registration_never_keeps(monkeypatch):
    """The SDK walks the Python stack on every registration to send the engine where it was
    declared (`stackTrace`, `sourcePosition`); a Registration keeps neither, so the offline
    engine skips the walk (a tenth of a plan's CPU), as the SDK does where no frame is found."""
    sent = []
    register = RecordingMonitor.RegisterResource

    def keep(self, request):
        sent.append(
            (request.name, len(request.stackTrace.frames), request.HasField("sourcePosition"))
        )
        return register(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", keep)

    class Thing(pulumi.ComponentResource):
        def __init__(self, name: str):
            super().__init__("test:index:Thing", name)

    run_program("dev", program=lambda: Thing("thing"))
    assert [name for name, _, _ in sent] == ["gpu-platform-dev", "thing"]
    assert all(frames == 0 and not position for _, frames, position in sent), sent


def test_a_worker_is_planned_once_per_process_until_its_stack_changes(
    tmp_path_factory, monkeypatch
):
    """Every plan of a MultiKueue manager stands its workers' outputs in from their own plans:
    an unchanged worker (burst, for every variant of onprem the tests plan) runs once, and a
    worker whose stack file changed runs again, so a manager never checks a stale worker."""
    monkeypatch.setattr(plan_cli, "_WORKER_OUTPUTS", {})
    runs = []
    run = plan_cli.run_program

    def counted(stack, *args, **kwargs):
        runs.append(stack)
        return run(stack, *args, **kwargs)

    monkeypatch.setattr(plan_cli, "run_program", counted)
    stacks = {"onprem": stack_file_config("onprem"), "burst": stack_file_config("burst")}
    first = stack_references("onprem", make_project(tmp_path_factory.mktemp("manager"), stacks))
    again = stack_references("onprem", make_project(tmp_path_factory.mktemp("manager"), stacks))
    assert runs == ["burst"]
    assert again == first
    # The most GPUs burst's queues can hold on its first pool is part of what it exports.
    stacks["burst"]["gpu-platform:gpu_node_groups"][0]["scaling"]["max_size"] += 1
    changed = stack_references("onprem", make_project(tmp_path_factory.mktemp("manager"), stacks))
    assert runs == ["burst", "burst"]
    assert changed != first
