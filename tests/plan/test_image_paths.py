"""The plan's "Images per GPU pool" section (plan/image_paths.py): every GPU pool of every stack
lists the images its nodes pull and how each reaches them, from what the plan declares and
renders. Expected lines are literals: the GPU Operator's images from its chart's values at the
pin, the pre-puller's from the fixture stack's own references."""

from __future__ import annotations

import pytest

from components.registry_mirror import ImageRoute
from model.config import parse_config
from plan.cli import main
from plan.image_paths import format_image_paths
from plan.render import render_plan
from tests.conftest import AWS_STACKS, SHARED_HELM, planned, project_plan, rendered, stack_config
from tests.helpers.bad_stacks import aws
from tests.helpers.selftest_stacks import FSX, IMAGE, P5
from tests.helpers.varied_stacks import DRA_CONFIGS, DRA_STACK, dra_plan

HEADING = "Images per GPU pool (how each reaches a node):"
# ../shared/charts/gpu-operator/v26.7.0/values.yaml, devicePlugin: repository nvcr.io/nvidia,
# image k8s-device-plugin, version v0.20.0; the operator names its DaemonSet
# nvidia-device-plugin-daemonset (assets/state-device-plugin/0500_daemonset.yaml).
DEVICE_PLUGIN = (
    "    nvcr.io/nvidia/k8s-device-plugin:v0.20.0  GPU Operator operand "
    "nvidia-device-plugin-daemonset: upstream nvcr.io"
)
MIRROR = "registry.internal.example:5000/mirror"
TRAINER = "nvcr.io/nvidia/pytorch:25.08-py3@sha256:" + "1" * 64
DIGEST = "@sha256:" + "0" * 64


def blocks(text: str) -> dict[str, list[str]]:
    """Pool name -> [its heading line, its image lines]."""
    lines = text.splitlines()
    assert lines[0] == HEADING
    found: dict[str, list[str]] = {}
    for line in lines[1:]:
        if not line.startswith("    "):
            found[line.strip().split(",")[0].split(":")[0]] = [line]
        else:
            found[list(found)[-1]].append(line)
    return found


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_gpu_pool_lists_the_operator_s_images_and_soci_parallel_pull(stack):
    found = blocks(format_image_paths(planned(stack), rendered(stack), None))
    assert sorted(found) == sorted(p.name for p in stack_config(stack).gpu_pools)
    for pool, (heading, *images) in found.items():
        # images.fast_pull is on by default with provider aws.
        assert heading.endswith(", SOCI parallel pull: on"), heading
        assert DEVICE_PLUGIN in images, (stack, pool)


def test_the_efa_device_plugin_is_listed_on_efa_pools():
    # prod's pools are EFA pools in us-east-1; the chart's image is EKS's ECR account
    # 602401143452 (../shared/charts/aws-efa-k8s-device-plugin values.yaml), in the region.
    for pool, (_, *images) in blocks(
        format_image_paths(planned("prod"), rendered("prod"), None)
    ).items():
        assert any(
            "aws-efa-k8s-device-plugin:" in line
            and line.endswith(": upstream 602401143452.dkr.ecr.us-east-1.amazonaws.com")
            for line in images
        ), pool


def test_an_existing_cluster_s_pools_leave_the_snapshotter_to_the_admin():
    found = blocks(format_image_paths(planned("onprem"), rendered("onprem"), None))
    assert sorted(found) == sorted(p.name for p in stack_config("onprem").gpu_pools)
    for heading, *images in found.values():
        assert heading.endswith(
            ", SOCI parallel pull: the admin's to set up (docs/gpu-nodes.md, \"On an existing "
            'cluster")'
        ), heading
        assert DEVICE_PLUGIN in images, heading


@pytest.fixture(scope="module")
def warmed():
    stack = aws(
        gpu_node_groups=[P5],
        storage=FSX,
        selftest={"image": IMAGE, "node_join": {"canary": True}},
        images={"registry_mirror": MIRROR, "prepull": [TRAINER], "fast_pull": False},
    )
    plan = project_plan("warm", {"warm": stack})
    return blocks(
        format_image_paths(plan, render_plan(plan, (SHARED_HELM,)), ImageRoute(mirror=MIRROR))
    )


def test_a_pool_lists_its_pre_pulled_images_the_self_test_s_and_the_mirror(warmed):
    heading, *images = warmed["h100"]
    assert heading == "  h100, node group warm-h100, SOCI parallel pull: off"
    # The pre-puller's init container, from the mirror (path kept, registry dropped).
    assert (
        f"    {MIRROR}/nvidia/pytorch:25.08-py3@sha256:{'1' * 64}  DaemonSet "
        "gpu-platform-selftest/prepull-h100 (declared): mirror "
        f"{MIRROR}, pre-pulled at join"
    ) in images
    # Its pause container keeps the pod; the kubelet pulls it like any other.
    assert (
        f"    {MIRROR}/pause:3.10.1  DaemonSet gpu-platform-selftest/prepull-h100 (declared): "
        f"mirror {MIRROR}"
    ) in images
    # The node-join check pulls the self-test image on the joining node.
    assert any(
        line.startswith(f"    {MIRROR}/gpu-platform-selftest{DIGEST}  DaemonSet ")
        and line.endswith(f": mirror {MIRROR}")
        for line in images
    ), images
    assert f"    {MIRROR}/nvidia/k8s-device-plugin:v0.20.0  GPU Operator operand " in "\n".join(
        images
    )


@pytest.mark.usefixtures("cli_on_session_plans")
def test_the_plan_prints_the_section(tmp_path, capsys):
    assert main(["dev", "--out", str(tmp_path)]) == 0
    assert f"\n{HEADING}\n  spot-small, node group dev-spot-small, " in capsys.readouterr().out


def test_a_dra_pool_pulls_the_dra_kubelet_plugin_and_never_the_device_plugin():
    """The DRA driver chart 0.4.1 runs its kubelet plugin (image
    registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1, ../shared/PINS.md) only on
    the DRA pools' nodes (its required node affinity), and the GPU Operator's device plugin
    stays off them (their nvidia.com/gpu.deploy.device-plugin: "false")."""
    plan = dra_plan(DRA_STACK)
    found = blocks(format_image_paths(plan, render_plan(plan, (SHARED_HELM,)), None))
    stack = {key.removeprefix("gpu-platform:"): v for key, v in DRA_CONFIGS[DRA_STACK].items()}
    pools = parse_config(stack, "stacks/Pulumi.dra.yaml").gpu_pools
    dra_pools = {p.name for p in pools if p.gpu_allocation == "dra"}
    assert dra_pools and set(found) > dra_pools
    plugin = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"
    for pool, (_, *images) in found.items():
        on_dra = pool in dra_pools
        assert (DEVICE_PLUGIN in images) is not on_dra, pool
        assert any(line.startswith(f"    {plugin}  ") for line in images) is on_dra, pool
