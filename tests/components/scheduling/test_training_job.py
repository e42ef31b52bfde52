"""The distributed-job builder: a valid JobSet on every stack's pools (the CRD's schema and CEL
rules, its Job against Kubernetes' schema), and the literal settings a multi-node training job
lives or dies by."""

from __future__ import annotations

import re

import pytest
import yaml

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from model.stacks import ROOT
from tests.conftest import STACKS, stack_config
from tests.helpers import crds, jobsets
from tests.helpers.job_specs import IMAGE, POOLS
from tests.helpers.jobset_harness import jobset_action
from tests.helpers.rendered_jobs import SWEPT_STACKS, config_of, every_job


def rendered(stack: str, pool: str, **choices):
    cfg = stack_config(stack)
    spec = spec_for_pool(
        cfg, pool, name="train-run", image=IMAGE, command=["train.py", "--steps=10"], **choices
    )
    return render(spec)


def trainer(objects) -> dict:
    (obj,) = objects
    return jobsets.trainer(obj)


def pod(objects) -> dict:
    (obj,) = objects
    return jobsets.pod_spec(obj)


@pytest.mark.parametrize(("stack", "pool"), POOLS)
def test_the_jobset_is_valid_on_every_pool_of_every_stack(stack, pool):
    objects = rendered(stack, pool, nodes=2)
    # The JobSet alone: JobSet makes the headless Service its pods meet through.
    assert [o["kind"] for o in objects] == ["JobSet"]
    for obj in objects:
        jobsets.validate(obj, stack_config(stack).cluster.kubernetes_version)


def test_the_validator_refuses_a_misspelt_field_in_the_jobset_and_in_its_job():
    (obj,) = rendered("prod", "h100-block")
    obj["spec"]["failurePolicy"]["maxRestart"] = 3
    with pytest.raises(AssertionError, match="maxRestart"):
        jobsets.validate(obj, "1.34")
    (obj,) = rendered("prod", "h100-block")
    jobsets.job_spec(obj)["completionMod"] = "Indexed"
    with pytest.raises(AssertionError, match="completionMod"):
        jobsets.validate(obj, "1.34")


def test_the_validator_evaluates_the_crds_cel_rules():
    """JobSet v0.12.0 jobset_types.go: StartupPolicy InOrder and dependsOn are exclusive (a CEL
    rule on spec, not a schema constraint)."""
    (obj,) = rendered("prod", "h100-block")
    obj["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    jobsets.replicated_job(obj)["dependsOn"] = [{"name": "other", "status": "Ready"}]
    (problem,) = crds.errors(obj)
    assert problem.startswith(
        "JobSet train-run: spec: Invalid value: "
        "StartupPolicy and DependsOn APIs are mutually exclusive (CRD jobset.x-k8s.io/v1alpha2"
    ), problem
    with pytest.raises(AssertionError, match="mutually exclusive"):
        jobsets.validate(obj, "1.34")


def test_one_indexed_pod_per_node_in_one_replicated_job_resolving_by_jobsets_own_service():
    """JobSet v0.12.0 jobset_types.go `Network`: enableDNSHostnames and
    publishNotReadyAddresses (peers look index 0 up before any pod is ready), the subdomain
    defaulting to the JobSet's name; JobSet makes the headless Service of that name."""
    (obj,) = rendered("prod", "h100-block", nodes=4)
    assert obj["apiVersion"] == "jobset.x-k8s.io/v1alpha2" and obj["kind"] == "JobSet"
    (replicated,) = obj["spec"]["replicatedJobs"]
    assert replicated["name"] == "trainer" and replicated["replicas"] == 1
    spec = replicated["template"]["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == 4 and spec["parallelism"] == 4
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert obj["spec"]["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    # No subdomain of the builder's own: JobSet sets it on every pod template.
    assert "subdomain" not in spec["template"]["spec"]


def test_the_launcher_runs_torchrun_on_index_zero_with_the_completion_index_as_node_rank():
    command = trainer(rendered("prod", "h100-block", nodes=2))["command"]
    # <jobset>-<replicatedJob>-<job index>-<pod index>.<subdomain> (JobSet `Network`).
    assert command == [
        "python",
        "/opt/gpu-platform/launcher/launch.py",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        "--master-addr=train-run-trainer-0-0.train-run",
        "--master-port=29500",
        # Kubernetes' 30 s grace period (none set here) less the launcher's 10 s.
        "--shutdown-timeout=20",
        "train.py",
        "--steps=10",
    ]
    env = {e["name"]: e for e in trainer(rendered("prod", "h100-block"))["env"]}
    # Kubernetes docs, "Indexed Job": the index is the pod label
    # batch.kubernetes.io/job-completion-index.
    assert env["JOB_COMPLETION_INDEX"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}
    }


def test_kueue_admits_it_the_jobset_starts_suspended_with_queue_and_priority_labels():
    (obj,) = rendered("prod", "h100-block", queue="default", priority_class="research")
    # Kueue pkg/controller/constants: QueueLabel and WorkloadPriorityClassLabel, on the JobSet
    # (Kueue site/content/en/docs/tasks/run/jobsets.md).
    assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "research"
    assert obj["spec"]["suspend"] is True
    assert jobsets.pod_spec(obj)["priorityClassName"] == "research"
    # JobSet runs its Jobs; Kueue suspends and resumes the JobSet.
    assert "suspend" not in jobsets.job_spec(obj) and "managedBy" not in jobsets.job_spec(obj)


def test_without_a_queue_the_jobset_is_not_suspended_and_carries_no_kueue_label():
    (obj,) = rendered("prod", "h100-block", queue=None)
    assert obj["spec"]["suspend"] is False
    assert not any(k.startswith("kueue.x-k8s.io/") for k in obj["metadata"]["labels"])


def test_the_job_fails_at_its_first_failed_pod_saying_by_rule_index_why():
    """kubernetes pkg/controller/job/pod_failure_policy.go: the first matching rule wins, and a
    FailJob rule fails the Job with reason PodFailurePolicy and a message ending "matching
    FailJob rule at index <i>". Rule 0: the exit codes no restart fixes (contract/exits.py:
    2 bad arguments, 78 sysexits EX_CONFIG), on the trainer container; rule 1: a disrupted
    pod (Kubernetes docs, "Pod failure policy": DisruptionTarget) is ignored; rule 2: 143, a
    rank stopped on SIGTERM (128 + 15)."""
    (obj,) = rendered("prod", "h100-block")
    spec = jobsets.job_spec(obj)
    assert spec["backoffLimit"] == 0
    assert spec["podFailurePolicy"] == {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [2, 78]},
            },
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [143]},
            },
        ]
    }


# kubernetes/kubernetes pkg/controller/job/pod_failure_policy.go (matchPodFailurePolicy, stored
# copy 2b02db1be88b), the two Sprintf formats, filled in as the Job controller fills them
# (`%v` of the action FailJob); the Kubernetes docs' "Pod failure policy" task shows the first:
# "Container main for pod default/job-pod-failure-policy-failjob-8ckj8 failed with exit code 42
# matching FailJob rule at index 0".
UNFIXABLE_MESSAGE = (
    "Container trainer for pod training/train-run-trainer-0-1-x7k2p failed with exit code 78 "
    "matching FailJob rule at index 0"
)
PREEMPTED_MESSAGE = (
    "Container trainer for pod training/train-run-trainer-0-3-q9z4m failed with exit code 143 "
    "matching FailJob rule at index 2"
)


def test_the_jobset_fails_at_once_on_unfixable_restarts_free_when_preempted_else_counts():
    """The JobSet's failurePolicy (JobSet jobset_types.go FailurePolicy; PINS "JobSet"):
    maxRestarts from scheduling.jobs (default 3), BlockingRecreate, two rules on reason
    PodFailurePolicy targeting `trainer`."""
    (obj,) = rendered("prod", "h100-block")
    policy = obj["spec"]["failurePolicy"]
    assert policy["maxRestarts"] == 3
    assert policy["restartStrategy"] == "BlockingRecreate"
    assert [(r["name"], r["action"]) for r in policy["rules"]] == [
        ("unfixable", "FailJobSet"),
        ("preempted", "RestartJobSetAndIgnoreMaxRestarts"),
    ]
    for rule in policy["rules"]:
        assert rule["onJobFailureReasons"] == ["PodFailurePolicy"]
        assert rule["targetReplicatedJobs"] == ["trainer"]
    assert jobset_action(policy, "PodFailurePolicy", UNFIXABLE_MESSAGE) == "FailJobSet"
    restart_free = "RestartJobSetAndIgnoreMaxRestarts"
    assert jobset_action(policy, "PodFailurePolicy", PREEMPTED_MESSAGE) == restart_free
    # A rank that failed, hung or lost its node: backoffLimit 0 spent (Kubernetes
    # pkg/controller/job/job_controller.go, reason BackoffLimitExceeded).
    assert jobset_action(policy, "BackoffLimitExceeded", "Job has reached the specified "
                         "backoff limit") == "RestartJobSet"  # fmt: skip
    # The index is the message's end: a rule 20 would not read as rule 2.
    assert jobset_action(policy, "PodFailurePolicy", PREEMPTED_MESSAGE + "0") == "RestartJobSet"


def test_the_restart_limit_and_the_watchdogs_bounds_come_from_the_config():
    cfg = stack_config("prod")
    jobs = cfg.scheduling.jobs.model_copy(
        update={"max_restarts": 7, "hang_factor": 4, "hang_ceiling_seconds": 600}
    )
    spec = spec_for_pool(cfg, "h100-block", name="n", image=IMAGE, command=["t.py"], jobs=jobs)
    (obj,) = render(spec)
    assert obj["spec"]["failurePolicy"]["maxRestarts"] == 7
    env = {e["name"]: e.get("value") for e in jobsets.trainer(obj)["env"]}
    assert env["TRAINKIT_HANG_FACTOR"] == "4" and env["TRAINKIT_HANG_CEILING_S"] == "600"


def test_every_pod_knows_its_restart_attempt_and_whose_job_it_is():
    """JobSet pkg/constants/constants.go RestartsKey: the annotation
    jobset.sigs.k8s.io/restart-attempt on every pod template, read through the downward API."""
    env = {e["name"]: e for e in trainer(rendered("prod", "h100-block", queue="default"))["env"]}
    assert env["JOBSET_RESTART_ATTEMPT"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']"}
    }
    identity = ("TRAINING_JOB_NAME", "TRAINING_JOB_TEAM", "TRAINING_JOB_QUEUE", "TRAINING_JOB_POOL")
    assert {k: env[k]["value"] for k in identity} == {
        "TRAINING_JOB_NAME": "train-run",
        "TRAINING_JOB_TEAM": "training",
        "TRAINING_JOB_QUEUE": "default",
        "TRAINING_JOB_POOL": "h100-block",
    }
    # The defaults of scheduling.jobs.
    assert env["TRAINKIT_HANG_FACTOR"]["value"] == "10"
    assert env["TRAINKIT_HANG_CEILING_S"]["value"] == "1800"


@pytest.mark.parametrize(("stack", "pool"), POOLS)
def test_goodput_goes_to_the_pushgateway_every_stack_runs(stack, pool):
    """Every stack declares the Pushgateway in its monitoring namespace
    (components/observability/pushgateway.py): the chart names the Service after the release,
    port 9091 (prometheus-pushgateway 3.8.0 `templates/service.yaml`, `values.yaml`)."""
    monitoring = stack_config(stack).namespaces.monitoring
    env = {e["name"]: e.get("value") for e in trainer(rendered(stack, pool))["env"]}
    assert env["TRAINKIT_PUSHGATEWAY_URL"] == (
        f"http://prometheus-pushgateway.{monitoring}.svc:9091"
    )


@pytest.mark.parametrize(("stack", "pool"), POOLS)
def test_no_pod_lands_on_a_node_the_self_test_quarantined(stack, pool):
    """components/selftest/access.py labels a failing node gpu-platform/selftest-failed=<check>;
    a required node affinity with DoesNotExist keeps every pod of every restart off it
    (Kubernetes "Assigning Pods to Nodes", node affinity operators)."""
    affinity = pod(rendered(stack, pool))["affinity"]
    assert affinity == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "gpu-platform/selftest-failed", "operator": "DoesNotExist"}]}]}}}  # fmt: skip


def test_the_launcher_is_mounted_read_only_from_its_configmap():
    objects = rendered("prod", "h100-block")
    volumes = {v["name"]: v for v in pod(objects)["volumes"]}
    assert volumes["training-launcher"] == {
        "name": "training-launcher",
        "configMap": {
            "name": "training-launcher",
            "items": [
                {"key": "launch.py", "path": "launch.py"},
                {"key": "contract.__init__.py", "path": "contract/__init__.py"},
                {"key": "contract.exits.py", "path": "contract/exits.py"},
            ],
        },
    }
    mounts = {m["name"]: m for m in trainer(objects)["volumeMounts"]}
    assert mounts["training-launcher"] == {
        "name": "training-launcher",
        "mountPath": "/opt/gpu-platform/launcher",
        "readOnly": True,
    }


def test_shipped_p5_pool_requests_eight_gpus_32_efa_and_its_hugepages():
    resources = trainer(rendered("prod", "h100-block"))["resources"]
    # AWS EC2 User Guide: p5.48xlarge has 8 H100 and 32 EFA interfaces. AWS's EKS EFA guide:
    # "instances with the EFA driver installed pre-allocate 5128 2MiB Huge Pages" = 10,256 MiB,
    # the whole node's, which a pod taking every GPU takes too. CPU: 23 cores a GPU of its 192
    # vCPUs (tests/components/scheduling/test_job_qos.py). Memory: its 2,048 GiB (AWS, "Amazon
    # EC2 P5 instances") less the kubelet's 1 + 2 GiB, 100 MiB of eviction threshold, the
    # hugepages and 2 GiB for DaemonSets is 2,032.9 GiB: 254 GiB a GPU, 2,032 for eight.
    expected = {
        "cpu": "184",
        "nvidia.com/gpu": 8,
        "vpc.amazonaws.com/efa": 32,
        "hugepages-2Mi": "10256Mi",
        "memory": "2032Gi",
    }
    assert resources == {"requests": expected, "limits": expected}


def test_half_a_p5_node_takes_half_its_efa_devices_and_hugepages():
    resources = trainer(rendered("prod", "h100-block", gpus_per_node=4))["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == 4
    assert resources["requests"]["vpc.amazonaws.com/efa"] == 16
    # 2,564 of the node's 5,128 pages of 2 MiB.
    assert resources["requests"]["hugepages-2Mi"] == "5128Mi"


def test_shipped_onprem_roce_pool_requests_the_rdma_device_and_joins_the_rdma_network():
    objects = rendered("onprem", "a100")
    resources = trainer(objects)["resources"]
    # The stack's cpus_per_gpu: 30 cores a GPU of the DGX's 256 threads; its flavor's 2,048 GiB
    # (NVIDIA DGX A100 datasheet: 2 TB) less 3 GiB of default kubelet reservations, 100 MiB of
    # eviction threshold and 2 GiB for DaemonSets: 255 GiB a GPU.
    assert resources["requests"] == {
        "cpu": "240",
        "nvidia.com/gpu": 8,
        "rdma/rdma_shared_device": 1,
        "memory": "2040Gi",
    }
    template = jobsets.pod_template(objects[-1])
    # No topology annotation: the shipped stack's topology_levels are EXAMPLEs not yet on the
    # nodes (scheduling.topology_labels_applied), so Kueue places by quota alone.
    assert template["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma"}


def test_shipped_dev_pool_without_efa_requests_no_fabric_nor_hugepages():
    resources = trainer(rendered("dev", "spot-small"))["resources"]
    # One time-sliced replica of four: a quarter of the one core g6e.xlarge leaves a GPU, and a
    # quarter of the 26 GiB its 32 GiB (AWS, "Amazon EC2 G6e instances") leave pods after 3 GiB
    # of kubelet reservations, 100 MiB of eviction threshold and 2 GiB for DaemonSets: 6,656 MiB.
    assert resources["requests"] == {"cpu": "250m", "nvidia.com/gpu": 1, "memory": "6656Mi"}


def test_pods_land_on_the_pool_and_tolerate_the_gpu_taint():
    spec = pod(rendered("prod", "h100-ondemand"))
    assert spec["nodeSelector"] == {"gpu-platform/node-group": "h100-ondemand"}
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]


HARDENED = {
    "runAsNonRoot": True,
    "runAsUser": 1000,
    "runAsGroup": 1000,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def test_runs_as_non_root_read_only_without_privilege_escalation_or_capabilities():
    container = trainer(rendered("dev", "spot-small"))
    assert container["securityContext"] == {**HARDENED, "capabilities": {"drop": ["ALL"]}}


@pytest.mark.parametrize(("stack", "pool"), POOLS)
def test_no_pool_adds_a_capability_not_even_ipc_lock_on_kernel_bypass_fabrics(stack, pool):
    """Pod Security restricted: drop ALL, add at most NET_BIND_SERVICE. IPC_LOCK, which EFA and
    RDMA pods used to add, is not in a non-root container's effective set anyway; the memlock
    limit comes from the node (issue 25 items 4 and 10)."""
    context = trainer(rendered(stack, pool))["securityContext"]
    assert context == {**HARDENED, "capabilities": {"drop": ["ALL"]}}


def test_the_shipped_stacks_cover_every_fabric():
    """So that the per-pool test above sees each fabric."""
    fabrics = {p.fabric for s in STACKS for p in stack_config(s).gpu_pools}
    assert fabrics >= {"efa", "roce", "tcp"}


def test_shm_in_memory_storage_volumes_nccl_settings_and_a_writable_tmp():
    objects = rendered("prod", "h100-block")
    volumes = {v["name"]: v for v in pod(objects)["volumes"]}
    assert volumes["dshm"] == {
        "name": "dshm",
        # Half the pod's 2,032 GiB.
        "emptyDir": {"medium": "Memory", "sizeLimit": "1016Gi"},
    }
    assert volumes["shared-data"] == {
        "name": "shared-data",
        "persistentVolumeClaim": {"claimName": "shared-data"},
    }
    assert volumes["nvme-cache"] == {"name": "nvme-cache", "emptyDir": {}}
    assert volumes["tmp"] == {"name": "tmp", "emptyDir": {}}
    mounts = {m["mountPath"]: m["name"] for m in trainer(objects)["volumeMounts"]}
    assert mounts == {
        "/mnt/shared-data": "shared-data",
        "/mnt/nvme-cache": "nvme-cache",
        "/dev/shm": "dshm",
        "/tmp": "tmp",
        "/opt/gpu-platform/launcher": "training-launcher",
    }
    assert trainer(objects)["envFrom"] == [{"configMapRef": {"name": "nccl-h100-block"}}]


def test_the_docs_snippet_renders_a_valid_job(capsys):
    """docs/training.md, "Submitting a training job": the snippet a team copies runs as written."""
    page = (ROOT / "docs" / "training.md").read_text()
    section = page.split("## Submitting a training job", 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    exec(compile(snippet, "docs/training.md", "exec"), {})
    (obj,) = yaml.safe_load_all(capsys.readouterr().out)
    jobsets.validate(obj, stack_config("prod").cluster.kubernetes_version)
    assert jobsets.job_spec(obj)["completions"] == 2
    assert obj["metadata"]["namespace"] == "training"


def test_a_service_account_runs_the_pods_only_when_given():
    cfg = stack_config("prod")
    assert "serviceAccountName" not in pod(rendered("prod", "h100-block"))
    spec = spec_for_pool(cfg, "h100-block", name="n", image=IMAGE, command=["t.py"],
                         service_account="selftest-cordon")  # fmt: skip
    assert pod(render(spec))["serviceAccountName"] == "selftest-cordon"


@pytest.mark.parametrize("stack", SWEPT_STACKS)
def test_every_job_the_platform_and_jobs_submit_render_is_admitted_by_the_api_server(stack):
    """The self-test and its schedule, every recipe and a team's own job on every pool for
    every team, and a bursting team's on its worker's pools: each JobSet against the CRD's
    schema and CEL rules with its Job against Kubernetes', each scheduled run's Job against
    Kubernetes'."""
    version = config_of(stack).cluster.kubernetes_version
    found = every_job(stack)
    kinds = {obj["kind"] for _, obj in found}
    assert "JobSet" in kinds and kinds <= {"JobSet", "Job"}, kinds
    for what, obj in found:
        try:
            jobsets.validate_object(obj, version)
        except AssertionError as error:
            raise AssertionError(f"{stack}: {what}: {error}") from error
