"""What the scheduled self-test's tests build stacks from and read its CronJobs with: an image,
pools of an AWS and an on-prem stack, the resource types, and the pod and env of a CronJob."""

from __future__ import annotations

from components.selftest.job import pool_env
from components.selftest.schedule import cron_jobs

DIGEST = "@sha256:" + "0" * 64
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest" + DIGEST
P5 = {"name": "h100", "instance_types": ["p5.48xlarge"], "efa": True, "scaling": {"max_size": 2}}
MIG = {"name": "a100-mig", "instance_types": ["p4d.24xlarge"], "gpu_sharing": {"mode": "mig"}}
FSX = {"fsx": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 1200}}
LAB = {"name": "lab", "kubeconfig_path": "~/.kube/lab.yaml"}
A100_POOL = {
    "name": "a100",
    "gpu_model": "A100",
    "gpu_memory_gib": 80,
    "gpus_per_node": 8,
    "nodes": 2,
    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
}
RELEASE = "kubernetes:helm.sh/v3:Release"
CRON_JOB = "kubernetes:batch/v1:CronJob"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
# The Pushgateway's Service: the chart names it after a release holding the chart's name, on
# port 9091 (prometheus-pushgateway 3.8.0, templates/_helpers.tpl and values.yaml).
PUSHGATEWAY_URL = "http://prometheus-pushgateway.monitoring.svc:9091"


def selftest_cron_jobs(plan) -> list:
    """The CronJobs the SelfTest declares (the Pushgateway's sweep is another component's)."""
    return [r for r in plan.of_type(CRON_JOB) if "gpu-platform:selftest:SelfTest$" in r.urn]


def pod_of(cron: dict) -> dict:
    return cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def env_of(pod: dict) -> dict[str, str]:
    (container,) = pod["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def stack_cron_jobs(cfg) -> list[dict]:
    return cron_jobs(cfg, lambda pool: pool_env(cfg, pool))
