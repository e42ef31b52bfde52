"""A stack with ECR pull-through cache rules (images.pull_through_cache), before NVIDIA's images
are copied into ECR (`STACK`) and after (`COPIED`), and the copy the plan writes for it."""

from __future__ import annotations

from model.config import PlatformConfig, parse_config
from plan.model import Plan
from plan.render import Rendering, render_plan
from tests.conftest import SHARED_HELM, project_plan
from tests.helpers.bad_stacks import NS, aws
from tests.helpers.selftest_stacks import FSX, IMAGE, P5

ACCOUNT = "111122223333"
ECR = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
DOCKER_SECRET = (
    f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
)
TRAINER = "nvcr.io/nvidia/pytorch:25.08-py3@sha256:" + "1" * 64
TOKENIZER = "ghcr.io/example/tokenize@sha256:" + "2" * 64
TOOLS = "docker.io/library/python@sha256:" + "3" * 64
CACHE = {"account_id": ACCOUNT, "credentials": {"docker.io": DOCKER_SECRET}}

STACK = aws(
    gpu_node_groups=[P5],
    storage=FSX,
    selftest={"image": IMAGE},
    images={"pull_through_cache": CACHE, "prepull": [TRAINER, TOKENIZER, TOOLS]},
)
COPIED = {
    **STACK,
    f"{NS}:images": {
        **STACK[f"{NS}:images"],
        "pull_through_cache": {**CACHE, "nvidia_copied": True},
    },
}
# The stacks by the names they are planned as.
STACKS = {"ptc": STACK, "ptcc": COPIED}


def config_of(name: str) -> PlatformConfig:
    return parse_config(
        {k.removeprefix(f"{NS}:"): v for k, v in STACKS[name].items()}, f"Pulumi.{name}.yaml"
    )


def cache_plan(name: str) -> tuple[Plan, Rendering]:
    """`name`'s plan (through the plan cache) and its releases rendered."""
    plan = project_plan(name, {name: STACKS[name]})
    return plan, render_plan(plan, (SHARED_HELM,))


# gpu-operator v26.7.0 values.yaml (../shared/charts/gpu-operator/v26.7.0): each operand the
# fixture's ClusterPolicy names, `repository`/`image`:`version`; the operator's own image takes
# the chart's appVersion, v26.7.0. The NGC base image is the fixture's, pinned by digest.
COPY_LINES = [
    f"skopeo inspect --raw docker://{ECR}/nvcr/{path} >/dev/null 2>&1 || skopeo copy --all "
    f"--preserve-digests docker://nvcr.io/{path} docker://{ECR}/nvcr/{path}"
    for path in (
        "nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04",
        "nvidia/cloud-native/k8s-cc-manager:v0.4.3",
        "nvidia/cloud-native/k8s-driver-manager:v0.12.0",
        "nvidia/cloud-native/k8s-mig-manager:v0.15.0",
        "nvidia/cloud-native/nvidia-sandbox-device-plugin:v0.0.5",
        "nvidia/cloud-native/vgpu-device-manager:v0.5.0",
        "nvidia/gpu-operator:v26.7.0",
        "nvidia/k8s-device-plugin:v0.20.0",
        "nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
        "nvidia/kubevirt-gpu-device-plugin:v1.6.0",
        f"nvidia/pytorch@sha256:{'1' * 64}",
    )
]
