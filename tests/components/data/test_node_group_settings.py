"""GPU node group settings every shipped stack leaves at their defaults (kubelet topology scope
`pod` under `restricted`, a 200 GiB root volume, 30 minutes before an idle node goes) reach the
launch template, its nodeadm NodeConfig and the ASG tags from config (STYLE.md §14):
tests/helpers/varied_stacks.py sets other valid values and the plan follows."""

from __future__ import annotations

import base64

from tests.conftest import find
from tests.helpers.user_data import parse_user_data
from tests.helpers.varied_stacks import VARIED_STACK, varied_plan

GROUP = f"{VARIED_STACK}-a100-efa"


def launch_template():
    return find(varied_plan(), "aws:ec2/launchTemplate:LaunchTemplate", GROUP)


def test_the_node_config_takes_the_stack_s_topology_manager_scope_and_policy():
    (config,) = parse_user_data(base64.b64decode(launch_template().inputs["userData"]).decode())
    kubelet = config["spec"]["kubelet"]["config"]
    # KubeletConfiguration (kubelet.config.k8s.io/v1beta1): topologyManagerScope,
    # topologyManagerPolicy, as nodeadm passes them through.
    assert kubelet["topologyManagerScope"] == "container"
    assert kubelet["topologyManagerPolicy"] == "best-effort"


def test_the_root_volume_takes_the_stack_s_size():
    (mapping,) = launch_template().inputs["blockDeviceMappings"]
    assert mapping["deviceName"] == "/dev/xvda"
    assert mapping["ebs"]["volumeSize"] == 300


def test_the_autoscaler_waits_the_stack_s_time_before_removing_an_idle_node():
    (tag,) = [
        t.inputs["tag"]
        for t in varied_plan().of_type("aws:autoscaling/tag:Tag")
        if t.name == f"{GROUP}-autoscaling-options/scaledownunneededtime"
    ]
    # cluster-autoscaler cloudprovider/aws/README.md: a Go duration.
    assert tag["value"] == "45m0s"
