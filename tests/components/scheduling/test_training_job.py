"""The distributed-job builder: valid Kubernetes objects on every stack's pools, and the literal
settings a multi-node training job lives or dies by."""

from __future__ import annotations

import re

import pytest
import yaml

from components.scheduling.training_job import render, spec_for_pool
from model.stacks import ROOT
from tests.conftest import STACKS, planned, stack_config, validate_kubernetes
from tests.helpers.job_specs import IMAGE, POOLS


def rendered(stack: str, pool: str, **choices):
    cfg = stack_config(stack)
    spec = spec_for_pool(
        cfg, pool, name="train-run", image=IMAGE, command=["train.py", "--steps=10"], **choices
    )
    return render(spec)


def trainer(objects) -> dict:
    (job,) = objects
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container


@pytest.mark.parametrize(("stack", "pool"), POOLS)
def test_the_job_is_valid_on_every_pool_of_every_stack(stack, pool):
    objects = rendered(stack, pool, nodes=2)
    kinds = [o["kind"] for o in objects]
    # The Job alone: its peers meet through the namespace's platform Service.
    assert kinds == ["Job"]
    for obj in objects:
        validate_kubernetes(obj, stack_config(stack).cluster.kubernetes_version)


def test_the_validator_refuses_a_job_with_a_misspelt_field():
    (job,) = rendered("prod", "h100-block")
    job["spec"]["completionMod"] = "Indexed"
    with pytest.raises(AssertionError, match="completionMod"):
        validate_kubernetes(job, "1.34")


def test_one_indexed_pod_per_node_resolving_through_the_namespaces_rendezvous_service():
    (job,) = rendered("prod", "h100-block", nodes=4)
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == 4 and spec["parallelism"] == 4
    assert spec["template"]["spec"]["subdomain"] == "rendezvous"
    assert spec["template"]["metadata"]["labels"]["gpu-platform/rendezvous"] == "member"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    service = next(
        o
        for o in planned("prod").kubernetes_objects()
        if o["kind"] == "Service"
        and o["metadata"] == {**o["metadata"], "name": "rendezvous"}
        and o["metadata"]["namespace"] == "training"
    )
    assert service["spec"]["clusterIP"] == "None"
    # Peers look index 0 up before any pod is ready.
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == {"gpu-platform/rendezvous": "member"}
    assert service["spec"]["ports"] == [{"name": "rendezvous", "port": 29500}]


def test_torchrun_rendezvous_on_index_zero_with_the_completion_index_as_node_rank():
    command = trainer(rendered("prod", "h100-block", nodes=2))["command"]
    assert command == [
        "torchrun",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        "--master-addr=train-run-0.rendezvous",
        "--master-port=29500",
        "train.py",
        "--steps=10",
    ]
    env = {e["name"]: e for e in trainer(rendered("prod", "h100-block"))["env"]}
    # Kubernetes docs, "Indexed Job": the index is the pod label
    # batch.kubernetes.io/job-completion-index.
    assert env["JOB_COMPLETION_INDEX"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}
    }


def test_kueue_admits_it_the_job_starts_suspended_with_queue_and_priority_labels():
    (job,) = rendered("prod", "h100-block", queue="default", priority_class="research")
    # Kueue pkg/controller/constants: QueueLabel and WorkloadPriorityClassLabel.
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "research"
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"]["spec"]["priorityClassName"] == "research"


def test_without_a_queue_the_job_is_not_suspended_and_carries_no_kueue_label():
    (job,) = rendered("prod", "h100-block", queue=None)
    assert job["spec"]["suspend"] is False
    assert not any(k.startswith("kueue.x-k8s.io/") for k in job["metadata"]["labels"])


def test_an_evicted_or_preempted_pod_does_not_spend_the_backoff_limit():
    (job,) = rendered("prod", "h100-block")
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["podFailurePolicy"] == {
        "rules": [
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            }
        ]
    }


def test_shipped_p5_pool_requests_eight_gpus_32_efa_and_its_hugepages():
    resources = trainer(rendered("prod", "h100-block"))["resources"]
    # AWS EC2 User Guide: p5.48xlarge has 8 H100 and 32 EFA interfaces. AWS's EKS EFA guide:
    # "instances with the EFA driver installed pre-allocate 5128 2MiB Huge Pages" = 10,256 MiB,
    # the whole node's, which a pod taking every GPU takes too. CPU: 23 cores a GPU of its 192
    # vCPUs (tests/components/scheduling/test_job_qos.py).
    expected = {
        "cpu": "184",
        "nvidia.com/gpu": 8,
        "vpc.amazonaws.com/efa": 32,
        "hugepages-2Mi": "10256Mi",
        "memory": "128Gi",
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
    # The stack's cpus_per_gpu: 30 cores a GPU of the DGX's 256 threads.
    assert resources["requests"] == {
        "cpu": "240",
        "nvidia.com/gpu": 8,
        "rdma/rdma_shared_device": 1,
        "memory": "128Gi",
    }
    template = objects[-1]["spec"]["template"]
    # No topology annotation: the shipped stack's topology_levels are EXAMPLEs not yet on the
    # nodes (scheduling.topology_labels_applied), so Kueue places by quota alone.
    assert template["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma"}


def test_shipped_dev_pool_without_efa_requests_no_fabric_nor_hugepages():
    resources = trainer(rendered("dev", "spot-small"))["resources"]
    # One time-sliced replica of four: a quarter of the one core g6e.xlarge leaves a GPU.
    assert resources["requests"] == {"cpu": "250m", "nvidia.com/gpu": 1, "memory": "16Gi"}


def test_pods_land_on_the_pool_and_tolerate_the_gpu_taint():
    pod = rendered("prod", "h100-ondemand")[-1]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform/node-group": "h100-ondemand"}
    assert pod["tolerations"] == [
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
    pod = objects[-1]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["dshm"] == {
        "name": "dshm",
        "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"},
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
    }
    assert trainer(objects)["envFrom"] == [{"configMapRef": {"name": "nccl-h100-block"}}]


def test_the_docs_snippet_renders_a_valid_job(capsys):
    """docs/training.md, "Submitting a training job": the snippet a team copies runs as written."""
    page = (ROOT / "docs" / "training.md").read_text()
    section = page.split("## Submitting a training job", 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    exec(compile(snippet, "docs/training.md", "exec"), {})
    (job,) = yaml.safe_load_all(capsys.readouterr().out)
    validate_kubernetes(job, stack_config("prod").cluster.kubernetes_version)
    assert job["spec"]["completions"] == 2
    assert job["metadata"]["namespace"] == "training"


def test_a_service_account_runs_the_pods_only_when_given():
    cfg = stack_config("prod")
    (plain,) = rendered("prod", "h100-block")
    assert "serviceAccountName" not in plain["spec"]["template"]["spec"]
    spec = spec_for_pool(cfg, "h100-block", name="n", image=IMAGE, command=["t.py"],
                         service_account="selftest-cordon")  # fmt: skip
    (job,) = render(spec)
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "selftest-cordon"
