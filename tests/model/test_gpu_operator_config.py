"""The GPU software as a stack sees it: what the plan says a pod can request per GPU pool, the
warning about GPUDirect RDMA on the nodes' own driver, and the bad input that is refused."""

from __future__ import annotations

import re
import textwrap
from xml.etree import ElementTree

import pytest

from components.data.gpu_operator import pool_report
from infra.stack_warnings import host_driver_rdma, mig_fabric_pools
from model.config import GpuOperatorSettings, OnPremGpuPoolSettings
from model.config.nodes import GpuSharingSettings
from model.config.pools import pool_of_onprem
from model.stacks import ROOT
from tests.conftest import AWS_STACKS, STACKS, planned, stack_config
from tests.helpers.bad_stacks import SOURCE, assert_refused, aws, case, existing, plan_bad

POOL = {
    "name": "lab",
    "node_selector": {"lab/gpu": "a100"},
    "gpu_model": "A100",
    "gpu_memory_gib": 80,
    "gpus_per_node": 8,
    "nodes": 2,
}


def onprem(mig_strategy="single", **fields):
    return pool_of_onprem(OnPremGpuPoolSettings(**{**POOL, **fields}), mig_strategy)


def onprem_stack(fabric: str, mofed_preinstalled: bool, install_driver: bool = False):
    """The shipped onprem stack with its one pool on `fabric` and the hosts' MOFED as given."""
    cfg = stack_config("onprem")
    (pool,) = cfg.existing.gpu_pools
    return cfg.model_copy(
        update={
            "existing": cfg.existing.model_copy(
                update={"gpu_pools": [pool.model_copy(update={"fabric": fabric})]}
            ),
            "fabric": cfg.fabric.model_copy(update={"mofed_preinstalled": mofed_preinstalled}),
            "gpu_operator": GpuOperatorSettings(install_driver=install_driver),
        }
    )


# GPU Operator docs, "GPUDirect RDMA and GPUDirect Storage": kernel support comes from DMA-BUF
# (open kernel modules; NVIDIA recommends it) or the legacy nvidia-peermem module, which the
# operator loads from its driver DaemonSet only. NVIDIA driver README, "GPUDirect RDMA Peer
# Memory Client": nvidia-peermem needs MOFED's peer-memory API in the running kernel.
@pytest.mark.parametrize("fabric", ["infiniband", "roce"])
def test_host_driver_with_host_mofed_must_load_nvidia_peermem_at_boot(fabric):
    (warning,) = host_driver_rdma(onprem_stack(fabric, mofed_preinstalled=True))
    assert warning.startswith("gpu-platform:gpu_operator.install_driver: false")
    assert f"pools on {fabric} (a100)" in warning
    assert "gpu-operator v26.7.0 loads nvidia-peermem only in its own driver container" in warning
    assert "Load nvidia-peermem at every boot (/etc/modules-load.d/)" in warning
    assert "DMA-BUF" in warning
    assert "NCCL stages every transfer through host memory" in warning
    assert "the self-test fails the pool" in warning


@pytest.mark.parametrize("fabric", ["infiniband", "roce"])
def test_host_driver_with_the_doca_driver_container_cannot_use_a_host_nvidia_peermem(fabric):
    """With the Network Operator's DOCA driver container, MOFED arrives after boot: a host's
    nvidia-peermem has nothing to register with at boot, so only DMA-BUF or the operator's
    own driver (whose nvidia-peermem waits for MOFED) give GPUDirect RDMA."""
    (warning,) = host_driver_rdma(onprem_stack(fabric, mofed_preinstalled=False))
    assert "fabric.mofed_preinstalled: false" in warning
    assert "/etc/modules-load.d/" not in warning
    assert "DMA-BUF" in warning
    assert "gpu_operator.install_driver: true" in warning


@pytest.mark.parametrize("mofed_preinstalled", [True, False])
@pytest.mark.parametrize("fabric", ["infiniband", "roce"])
def test_no_warning_when_the_operator_installs_the_driver_or_without_rdma(
    fabric, mofed_preinstalled
):
    cfg = onprem_stack(fabric, mofed_preinstalled, install_driver=True)
    assert host_driver_rdma(cfg) == []
    for stack in AWS_STACKS:
        assert host_driver_rdma(stack_config(stack)) == []


def test_the_onprem_plan_shows_the_gpudirect_rdma_warning():
    """The shipped stack runs host drivers on RoCE: the plan (and `pulumi up`) say so."""
    warnings = [w for w in planned("onprem").warnings if "nvidia-peermem" in w]
    assert warnings == host_driver_rdma(stack_config("onprem"))
    assert len(warnings) == 1


# ------------------------------------------------------------------------------ plan output


def test_shipped_staging_pool_report_names_gpus_and_efa_devices():
    # AWS EC2 user guide, EFA supported instance types: p4d.24xlarge has 4 EFA interfaces and
    # 8 A100 GPUs. EKS user guide, EFA: instances with the EFA driver pre-allocate 5128 2 MiB
    # hugepages, 10256Mi.
    assert planned("staging").outputs["gpu_pools"] == {
        "a100-efa": {
            "per_node": {
                "nvidia.com/gpu": 8,
                "vpc.amazonaws.com/efa": 4,
                "hugepages-2Mi": "10256Mi",
            },
            "max_nodes": 2,
            "sharing": "none",
            "node_labels": {},
            # components/data/gpu_node_group.py labels every node with its group's name.
            "node_selector": {"gpu-platform/node-group": "a100-efa"},
            "fabric": "efa",
            # NVIDIA MIG User Guide, "Supported GPUs": the A100 (40 GB, 80 GB) partitions.
            "mig_capable": True,
        }
    }


def test_shipped_dev_pool_report_counts_time_sliced_replicas():
    # g5.2xlarge has 1 A10G (EC2 accelerated computing instance specs); 4 replicas each.
    report = planned("dev").outputs["gpu_pools"]["spot-small"]
    assert report["per_node"] == {"nvidia.com/gpu": 4}
    assert report["node_labels"] == {"nvidia.com/device-plugin.config": "time-slicing-4"}


def test_onprem_pool_report_tells_the_admin_which_labels_its_nodes_need():
    report = pool_report(onprem("mixed", gpu_sharing={"mode": "mig"}))
    # A100-SXM4-80GB mixed: two 1g.10gb, one 2g.20gb and one 3g.40gb per GPU, 8 GPUs.
    assert report["per_node"] == {
        "nvidia.com/mig-1g.10gb": 16,
        "nvidia.com/mig-2g.20gb": 8,
        "nvidia.com/mig-3g.40gb": 8,
    }
    assert report["node_labels"] == {
        "nvidia.com/device-plugin.config": "mig-mixed",
        "nvidia.com/mig.config": "all-balanced-1g.10gb",
    }


# ------------------------------------------------------------------------------ bad input

GROUP = {"name": "a100", "instance_types": ["p4d.24xlarge"]}


def lab(*pools):
    return existing(
        existing={"name": "lab", "kubeconfig_path": "~/.kube/lab.yaml", "gpu_pools": list(pools)}
    )


BAD = [
    case(
        aws(gpu_node_groups=[{**GROUP, "gpu_sharing": {"mode": "time-slicing"}}]),
        "gpu-platform:gpu_node_groups[0].gpu_sharing.replicas",
        "time-slicing with 1 replica",
        "give replicas 2 to 48",
        "time-slicing-one-replica",
    ),
    case(
        lab({**POOL, "gpu_sharing": {"mode": "mps", "replicas": 1}}),
        "gpu-platform:existing.gpu_pools[0].gpu_sharing.replicas",
        "mps with 1 replica",
        "give replicas 2 to 48",
        "mps-one-replica",
    ),
    case(
        aws(gpu_node_groups=[{**GROUP, "labels": {"nvidia.com/device-plugin.config": "mps-9"}}]),
        "gpu-platform:gpu_node_groups[0].labels",
        "sets nvidia.com/device-plugin.config",
        "set gpu_sharing (mode, replicas) and gpu_operator.mig_strategy instead",
        "hand-set-operator-label",
    ),
    case(
        aws(gpu_operator={"install_driver": True}),
        "gpu-platform:gpu_operator.install_driver",
        "true",
        "AL2023 NVIDIA AMI",
        "driver-install-on-aws",
    ),
    case(
        aws(gpu_operator={"mig_strategy": "balanced"}),
        "gpu-platform:gpu_operator.mig_strategy",
        "'balanced'",
        "valid values are 'single' or 'mixed'",
        "unknown-mig-strategy",
    ),
    case(
        lab(POOL) | {"gpu-platform:gpu_operator": {"namespce": "gpu"}},
        "gpu-platform:gpu_operator.namespce",
        "unknown key",
        "namespace",
        "operator-key-typo",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_bad_gpu_operator_settings_are_refused_at_its_key(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


# ------------------------------------------------------------------------- MIG strategy


def test_default_mig_strategy_is_the_charts_single():
    """gpu-operator v26.7.0 deployments/gpu-operator/values.yaml (shared/charts/gpu-operator/
    v26.7.0/values.yaml): `mig: strategy: single`. No shipped stack sets it, so every one
    renders the chart's default."""
    assert GpuOperatorSettings().mig_strategy == "single"
    for stack in STACKS:
        (release,) = [
            r
            for r in planned(stack).of_type("kubernetes:helm.sh/v3:Release")
            if r.inputs["chart"] == "gpu-operator"
        ]
        assert release.inputs["values"]["mig"] == {"strategy": "single"}, stack


@pytest.mark.parametrize("stack", STACKS)
def test_every_pool_is_cut_as_the_clusters_one_mig_strategy_says(stack):
    """NVIDIA GPU Operator docs, "GPU Operator with MIG": `mig.strategy` is set once in the
    ClusterPolicy. With gpu_operator.mig_strategy mixed, every MIG pool of the stack is labelled
    for the balanced layout and advertises nvidia.com/mig-<profile>, none nvidia.com/gpu."""
    cfg = stack_config(stack)
    mixed = cfg.model_copy(update={"gpu_operator": GpuOperatorSettings(mig_strategy="mixed")})
    for pool in mixed.gpu_pools:
        assert pool.mig_strategy == "mixed", pool.name
        if pool.sharing.mode != "mig":
            continue
        report = pool_report(pool)
        assert report["node_labels"]["nvidia.com/device-plugin.config"] == "mig-mixed"
        assert report["node_labels"]["nvidia.com/mig.config"].startswith("all-balanced-")
        assert "nvidia.com/gpu" not in report["per_node"]


# A stack file written for the per-pool key: told where the setting went, on every provider,
# at each pool that sets it, with the value to write (or the valid ones when it had none).
MOVED_TO = (
    "moved to gpu_operator.mig_strategy, because the GPU Operator's mig.strategy is one setting "
    "for the whole cluster; remove it from this pool and write it once as gpu_operator: "
)
MOVED = [
    pytest.param(
        aws(
            gpu_node_groups=[
                {**GROUP, "gpu_sharing": {"mode": "mig"}},
                {**GROUP, "name": "b", "gpu_sharing": {"mode": "mig", "mig_strategy": "mixed"}},
            ]
        ),
        [
            "gpu-platform:gpu_node_groups[1].gpu_sharing.mig_strategy: "
            f"{MOVED_TO}{{mig_strategy: mixed}} (got 'mixed')"
        ],
        id="aws",
    ),
    pytest.param(
        lab(
            {**POOL, "gpu_sharing": {"mode": "mig", "mig_strategy": "single"}},
            {
                **POOL,
                "name": "b",
                "node_selector": {"lab/gpu": "b"},
                "gpu_sharing": {"mode": "mig", "mig_strategy": "half"},
            },
        ),
        [
            "gpu-platform:existing.gpu_pools[0].gpu_sharing.mig_strategy: "
            f"{MOVED_TO}{{mig_strategy: single}} (got 'single')",
            "gpu-platform:existing.gpu_pools[1].gpu_sharing.mig_strategy: "
            f"{MOVED_TO}{{mig_strategy: single or mixed}} (got 'half')",
        ],
        id="onprem",
    ),
]


@pytest.mark.parametrize(("stack", "expected"), MOVED)
def test_per_pool_mig_strategy_is_refused_with_where_it_moved(
    tmp_path, monkeypatch, capsys, stack, expected
):
    code, output = plan_bad(tmp_path, monkeypatch, capsys, stack)
    assert code == 2, output
    assert output.startswith(f"{SOURCE}: invalid gpu-platform configuration"), output
    assert [line for line in output.splitlines() if "mig_strategy" in line] == [
        f"  - {line}" for line in expected
    ], output


# ---------------------------------------------------------- VM nodes (docs/gpu-nodes.md)


def passthrough_section() -> str:
    page = (ROOT / "docs" / "gpu-nodes.md").read_text()
    heading = "### On-prem nodes that are virtual machines: KVM GPU passthrough\n"
    assert heading in page, "docs/gpu-nodes.md has no word on GPU nodes that are VMs"
    return page.split(heading, 1)[1].split("\n## ", 1)[0]


def test_docs_say_what_a_kvm_host_needs_for_gpu_passthrough_and_that_eks_needs_none():
    section = passthrough_section()
    for needed in ("IOMMU on", "vfio-pci", "managed='yes'", "NVIDIA driver only in the guest"):
        assert needed in section
    assert "GPU Operator then sees" in section
    assert "None of this applies on EKS" in section


def test_docs_hostdev_snippet_is_a_managed_pci_passthrough_libvirt_accepts():
    # libvirt "Domain XML format", Host device assignment: a PCI device is
    # <hostdev mode='subsystem' type='pci' managed='yes'> with <source><address domain= bus=
    # slot= function=/></source>; managed='yes' detaches it from the host driver at start.
    (snippet,) = re.findall(r"```xml\n(.*?)```", passthrough_section(), flags=re.DOTALL)
    hostdev = ElementTree.fromstring(textwrap.dedent(snippet))
    assert hostdev.tag == "hostdev"
    assert hostdev.attrib == {"mode": "subsystem", "type": "pci", "managed": "yes"}
    address = hostdev.find("source/address")
    assert sorted(address.attrib) == ["bus", "domain", "function", "slot"]


@pytest.mark.parametrize("fabric", ["infiniband", "roce", "tcp"])
@pytest.mark.parametrize("mode", ["mig", "none"])
def test_mig_on_a_pool_with_a_multi_node_fabric_warns_that_it_locks_out_multi_node_jobs(
    fabric, mode
):
    """`python -m jobs` refuses a distributed job on a MIG pool (jobs/common.py pool_problems),
    so a MIG pool's RDMA fabric serves no job: the plan says so (EFA, on AWS: the staging
    fixture of tests/helpers/warning_stacks.py)."""
    cfg = stack_config("onprem")
    (pool,) = cfg.existing.gpu_pools
    pool = pool.model_copy(update={"fabric": fabric, "gpu_sharing": GpuSharingSettings(mode=mode)})
    existing = cfg.existing.model_copy(update={"gpu_pools": [pool]})
    found = mig_fabric_pools(cfg.model_copy(update={"existing": existing}))
    if mode == "mig" and fabric != "tcp":
        (warning,) = found
        assert warning.startswith(
            f"GPU pool a100: gpu_sharing.mode mig on a pool with fabric {fabric} locks out its "
            "multi-node jobs"
        )
        assert warning.endswith("[warning mig-fabric-pool]")
    else:
        assert found == []
