"""The node series the rules read (components/observability/node_series.py), as kube-state-metrics
names them: a node label `k` is `label_<k>` on kube_node_labels, every character outside
[a-zA-Z0-9_] turned into `_` (kube-state-metrics docs/metrics/cluster/node-metrics.md and its
--metric-labels-allowlist flag)."""

from __future__ import annotations

from components.observability.node_series import ksm_label, pool_nodes


def test_a_node_label_is_named_as_kube_state_metrics_exports_it():
    assert ksm_label("nvidia.com/gpu.product") == "label_nvidia_com_gpu_product"
    assert ksm_label("gpu-platform/node-group") == "label_gpu_platform_node_group"


def test_a_pools_nodes_carry_every_label_of_its_selector():
    selector = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "gpu-platform/rack": "r1"}
    assert pool_nodes(selector) == (
        'kube_node_labels{label_gpu_platform_rack="r1", '
        'label_nvidia_com_gpu_product="NVIDIA-A100-SXM4-80GB"}'
    )
