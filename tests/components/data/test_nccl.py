"""NCCL / libfabric settings per fabric: each value pinned to its source, one ConfigMap per pool
on every stack, its name in the plan's outputs."""

from __future__ import annotations

import pytest

from components.data.nccl import nccl_env
from model.config import parse_config
from model.config.selftest import runs
from model.config.selftest_schedule import scheduled
from tests.conftest import STACKS, planned, stack_config
from tests.helpers.shared_data import RWX_STORAGE
from tests.helpers.varied_stacks import gb200_config

ADMIN = "arn:aws:iam::210987654321:role/platform-admins"


def aws_pool(*instance_types: str, efa: bool = True):
    cfg = parse_config(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [{"name": "g", "instance_types": list(instance_types), "efa": efa}],
        },
        "t",
    )
    return cfg.gpu_pools[0], cfg


def test_efa_on_p5_uses_libfabric_with_gpudirect_rdma():
    pool, cfg = aws_pool("p5.48xlarge")
    assert nccl_env(pool, cfg) == {
        # AWS EFA user guide, "Get started with EFA and NCCL": FI_PROVIDER=efa, and
        # FI_EFA_USE_DEVICE_RDMA=1 on instances whose EFA supports RDMA read (p4d and later).
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        # NCCL docs, "Environment variables": ^ excludes; lo and docker never carry traffic.
        "NCCL_SOCKET_IFNAME": "^lo,docker",
        # NCCL docs: P2P kept on inside the node; INFO logs the transport chosen.
        "NCCL_P2P_DISABLE": "0",
        "NCCL_DEBUG": "INFO",
    }


@pytest.mark.parametrize("instance_type", ["p4d.24xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_rdma_read_instances_get_device_rdma(instance_type):
    # AWS EC2 user guide, EFA supported instance types, RDMA read: p4d, p5en, p6-b200.
    pool, cfg = aws_pool(instance_type)
    assert nccl_env(pool, cfg)["FI_EFA_USE_DEVICE_RDMA"] == "1"


def test_a_gb200_pool_gets_device_rdma():
    # AWS EC2 user guide, EFA supported instance types, Nitro v6: p6e-gb200.36xlarge, RDMA
    # read yes. Its pool is the GB200 stack's, as AWS sells it (a Capacity Block).
    cfg = gb200_config()
    assert nccl_env(cfg.gpu_pools[0], cfg)["FI_EFA_USE_DEVICE_RDMA"] == "1"


def test_efa_without_rdma_read_leaves_device_rdma_off():
    # AWS EC2 user guide, EFA supported instance types: g5.48xlarge has EFA without RDMA read.
    pool, cfg = aws_pool("g5.48xlarge")
    env = nccl_env(pool, cfg)
    assert env["FI_PROVIDER"] == "efa"
    assert "FI_EFA_USE_DEVICE_RDMA" not in env


def test_tcp_pools_say_sockets_instead_of_falling_back_to_them():
    pool, cfg = aws_pool("g5.2xlarge", efa=False)
    env = nccl_env(pool, cfg)
    # NCCL docs, NCCL_IB_DISABLE=1: IB verbs off, TCP sockets only.
    assert env["NCCL_IB_DISABLE"] == "1"
    assert "FI_PROVIDER" not in env and "NCCL_IB_HCA" not in env


def test_onprem_roce_names_its_hcas_gid_index_and_rdma_interface():
    (pool,) = stack_config("onprem").gpu_pools
    assert nccl_env(pool, stack_config("onprem")) == {
        # Pulumi.onprem.yaml: mlx5_0 and mlx5_1, RoCE v2 at GID index 3.
        "NCCL_IB_HCA": "mlx5_0,mlx5_1",
        "NCCL_IB_GID_INDEX": "3",
        # multus-cni docs: the first additional interface of a pod is net1 (the RDMA network).
        "NCCL_SOCKET_IFNAME": "net1",
        "NCCL_P2P_DISABLE": "0",
        "NCCL_DEBUG": "INFO",
    }


def test_infiniband_without_named_hcas_uses_every_mlx5_device():
    cfg = parse_config(
        {
            "provider": "existing",
            "existing": {
                "name": "lab",
                "kubeconfig_path": "kc",
                "gpu_pools": [
                    {
                        "name": "h100",
                        "node_selector": {"lab/gpu": "h100"},
                        "gpu_model": "H100",
                        "gpu_memory_gib": 80,
                        "gpus_per_node": 8,
                        "nodes": 2,
                        "fabric": "infiniband",
                    }
                ],
            },
            "fabric": {"network": {"interface": "ib0", "cidr": "192.168.110.0/24"}},
            "storage": RWX_STORAGE,
        },
        "t",
    )
    env = nccl_env(cfg.gpu_pools[0], cfg)
    # NCCL docs, NCCL_IB_HCA: "mlx5" selects every device whose name begins with it.
    assert env["NCCL_IB_HCA"] == "mlx5"
    assert "NCCL_IB_GID_INDEX" not in env


@pytest.mark.parametrize("stack", STACKS)
def test_every_pool_has_its_configmap_in_every_team_namespace_and_the_outputs(stack):
    plan = planned(stack)
    cfg = stack_config(stack)
    found = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["data"]
        for o in plan.kubernetes_objects()
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("nccl-")
    }
    teams = {cfg.namespaces.training, *(t.name for t in cfg.scheduling.teams)}
    if runs(cfg) or scheduled(cfg):
        teams.add(cfg.namespaces.selftest)
    assert sorted(found) == sorted((ns, f"nccl-{p.name}") for ns in teams for p in cfg.gpu_pools)
    # The same settings wherever the pool's jobs run.
    for pool in cfg.gpu_pools:
        assert (
            len({str(data) for (_, name), data in found.items() if name == f"nccl-{pool.name}"})
            == 1
        )
    assert plan.outputs["nccl_configmaps"] == {
        p.name: f"{cfg.namespaces.training}/nccl-{p.name}" for p in cfg.gpu_pools
    }
