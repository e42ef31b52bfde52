"""SOCI parallel pull on AWS GPU nodes (images.fast_pull, on by default with provider aws): every
GPU node group of every AWS stack boots with nodeadm's `FastImagePull` gate in a valid MIME
part, and a group whose AMI release or disks would not serve it is refused with the reason.

Facts from ../shared/PINS.md, "Fast image start-up on the AL2023 AMI (SOCI parallel pull)",
read from awslabs/amazon-eks-ami v20260724: the gate as `nodeadm/doc/examples.md` "Enabling fast
image pull (experimental)" writes it; the name FastImagePull from release v20250821
(CHANGELOG.md); the SOCI directory on the instance-store RAID0 from v20251217; a root volume of
at least 600 MiB/s otherwise."""

from __future__ import annotations

import base64

import pytest

from components.data.gpu_node_group import group_user_data
from model.config import GpuNodeGroupSettings, parse_config
from model.config.images import ImageSettings
from tests.conftest import AWS_STACKS, planned
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing
from tests.helpers.selftest_stacks import P5
from tests.helpers.user_data import parse_user_data

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
# nodeadm/doc/examples.md, "Enabling fast image pull (experimental)".
GATE = {"FastImagePull": True}


def node_configs(template) -> list[dict]:
    return parse_user_data(base64.b64decode(template.inputs["userData"]).decode())


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_gpu_node_group_boots_with_soci_parallel_pull(stack):
    plan = planned(stack)
    templates = plan.of_type(LAUNCH_TEMPLATE)
    gpu = [t for t in templates if t.name != f"{stack}-system"]
    assert gpu, stack
    for template in gpu:
        (config,) = node_configs(template)
        assert config["spec"]["featureGates"] == GATE, template.name
    # The system nodes keep the default snapshotter: no instance store, a 250 MiB/s root.
    (system,) = [t for t in templates if t.name == f"{stack}-system"]
    assert all("featureGates" not in c["spec"] for c in node_configs(system))


def test_fast_pull_is_on_by_default_on_aws_only():
    # The default the user gets, read from the model.
    assert ImageSettings().fast_pull_on("aws") is True
    assert ImageSettings().fast_pull_on("existing") is False


def test_fast_pull_off_leaves_the_gate_out():
    group = GpuNodeGroupSettings(name="g", instance_types=["g5.2xlarge"])
    (config,) = parse_user_data(group_user_data(group, fast_pull=False))
    assert "featureGates" not in config["spec"]


REFUSED = [
    pytest.param(
        # v20250813 named the gate AggressiveImagePull (EKS AMI CHANGELOG.md).
        aws(
            cluster={"kubernetes_version": "1.33"},
            gpu_node_groups=[{**P5, "ami_release": "1.33.3-20250813"}],
        ),
        f"{NS}:gpu_node_groups[0].ami_release",
        "1.33.3-20250813 predates the FastImagePull gate",
        "images.fast_pull: false",
        id="release-before-the-gate",
    ),
    pytest.param(
        # Gate named, but the SOCI directory on the RAID0 only from v20251217.
        aws(
            cluster={"kubernetes_version": "1.34"},
            gpu_node_groups=[{**P5, "ami_release": "1.34.1-20251016"}],
        ),
        f"{NS}:gpu_node_groups[0].ami_release",
        "600 MiB/s",
        "pin ami_release from 20251217 on",
        id="release-before-soci-on-raid0",
    ),
    pytest.param(
        existing(images={"fast_pull": True}),
        f"{NS}:images.fast_pull",
        "only on the EKS AMI",
        "remove the key",
        id="existing-cluster",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), REFUSED)
def test_a_group_soci_cannot_serve_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_fast_pull_off_takes_an_old_release():
    stack = aws(
        cluster={"kubernetes_version": "1.33"},
        gpu_node_groups=[{**P5, "ami_release": "1.33.3-20250813"}],
        images={"fast_pull": False},
    )
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in stack.items()}, "Pulumi.c.yaml")
    assert cfg.images.fast_pull_on(cfg.provider) is False
