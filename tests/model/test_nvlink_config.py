"""What keeps a GB200 pool's ComputeDomains from working is refused before anything is declared
(model/config/dra.py, model/config/selftest.py), naming the stack file, the key, the value and
what is valid. Sources: ../shared/PINS.md "DRA quota (0.19.2)" (Kueue charges claims only
through resource.k8s.io/v1, from 1.34), "ComputeDomains and IMEX" (a node in one ComputeDomain at
a time), the driver chart 0.4.1 templates/kubeletplugin.yaml (one DaemonSet serves GPUs on every
node it runs on once `resources.gpus.enabled`)."""

from __future__ import annotations

import copy

import pytest

from tests.helpers.bad_stacks import NS, assert_refused
from tests.helpers.selftest_stacks import IMAGE
from tests.helpers.varied_stacks import GB200_CONFIG


def gb200(**sections) -> dict:
    stack = copy.deepcopy(GB200_CONFIG)
    stack.update({f"{NS}:{k}": v for k, v in sections.items()})
    return stack


def beside_a_dra_pool() -> dict:
    stack = gb200(cluster={**GB200_CONFIG[f"{NS}:cluster"], "kubernetes_version": "1.35"})
    a100 = {
        "name": "a100",
        "instance_types": ["p4d.24xlarge"],
        "gpu_allocation": "dra",
        "scaling": {"min_size": 1, "desired_size": 1, "max_size": 2},
    }
    stack[f"{NS}:gpu_node_groups"] = [*stack[f"{NS}:gpu_node_groups"], a100]
    return stack


CASES = [
    pytest.param(
        gb200(selftest={"image": IMAGE, "nodes": 2, "gpus_per_node": 2}),
        f"{NS}:selftest.gpus_per_node",
        "2, but a multi-node job on pool nvl72 has a ComputeDomain of its own",
        "take all 4 GPUs of each node",
        id="selftest-on-part-of-gb200-nodes",
    ),
    pytest.param(
        gb200(cluster={**GB200_CONFIG[f"{NS}:cluster"], "kubernetes_version": "1.33"}),
        f"{NS}:cluster.kubernetes_version",
        "1.33, but pool nvl72 shares an NVLink domain",
        "valid: 1.34 or later",
        id="gb200-below-1.34",
    ),
    pytest.param(
        beside_a_dra_pool(),
        f"{NS}:gpu_node_groups[0].gpu_allocation",
        "device_plugin, but pool nvl72 takes ComputeDomain channels",
        "valid: gpu_allocation dra here too, or device_plugin on a100",
        id="gb200-device-plugin-beside-a-dra-pool",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), CASES)
def test_a_gb200_stack_its_compute_domains_cannot_serve_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
