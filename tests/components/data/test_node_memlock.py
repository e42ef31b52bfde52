"""The locked-memory limit a container gets on each node, through the model of nodeadm,
containerd, runc and systemd in tests/helpers/container_rlimits.py (sources cited there).

Verbs memory registration (libfabric's EFA provider, NCCL's InfiniBand transport) pins buffers
and is charged against RLIMIT_MEMLOCK; a uid-1000 trainer cannot use CAP_IPC_LOCK to get past it
(Kubernetes has no ambient capabilities), so on an EFA node the limit itself must be gone. Every
other node keeps the default."""

from __future__ import annotations

import base64

import pytest

from components.data.gpu_node_group import group_user_data
from components.data.nodes import node_config, user_data
from components.selftest.job import pool_env
from model.catalog import CATALOG
from model.config import GpuNodeGroupSettings, KubeletSettings
from tests.conftest import AWS_STACKS, STACKS, planned, stack_config
from tests.helpers import container_rlimits as model

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
# OCI runtime spec (config.md, "POSIX process"): rlimit soft and hard are uint64; Linux's
# RLIM_INFINITY, (~0UL), is "unlimited" there and in getrlimit(2).
UNLIMITED = (18446744073709551615, 18446744073709551615)
# The kernel's default when nothing raises it: MLOCK_LIMIT, 8 MiB since Linux 5.16 (also what a
# container showed in NVIDIA/nvidia-container-toolkit#2037: `ulimit -l` 8192 KB).
DEFAULT = (8388608, 8388608)
# nodeadm v20260724 nodeadm/internal/containerd/base-runtime-spec.json: RLIMIT_NOFILE 65536 soft,
# 1048576 hard, the only rlimit of the AMI's base spec.
AMI_NOFILE = (65536, 1048576)


def nodeconfig(base_runtime_spec: dict | None = None) -> dict:
    spec: dict = {"kubelet": {"config": {"maxPods": 100}}}
    if base_runtime_spec is not None:
        spec["containerd"] = {"baseRuntimeSpec": base_runtime_spec}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


def rlimits(*entries: tuple[str, int, int]) -> dict:
    return {"process": {"rlimits": [{"type": t, "soft": s, "hard": h} for t, s, h in entries]}}


DROPIN = """#!/bin/bash
cat > /etc/systemd/system/containerd.service.d/90-memlock.conf <<'DROPIN'
[Service]
LimitMEMLOCK=infinity
DROPIN
"""


# ------------------------------------------------------------- the model, rule by rule


def test_nodeadm_writes_its_default_spec_when_no_nodeconfig_sets_one():
    assert model.base_runtime_spec([nodeconfig()])["process"]["rlimits"] == [
        {"type": "RLIMIT_NOFILE", "soft": 65536, "hard": 1048576}
    ]


def test_nodeadm_merges_maps_but_an_rlimits_list_replaces_the_default_whole():
    """nodeadm e2e case containerd-base-runtime-spec: `foo: bar` is added beside the default's
    keys, and its one RLIMIT_NOFILE entry (12345) is all that is left of the default's list."""
    given = {"foo": "bar", **rlimits(("RLIMIT_NOFILE", 12345, 12345))}
    spec = model.base_runtime_spec([nodeconfig(given)])
    assert spec["foo"] == "bar"
    assert spec["process"]["noNewPrivileges"] is True
    assert model.containerd_loads(spec) == {"RLIMIT_NOFILE": (12345, 12345)}
    # A memlock entry alone therefore drops the AMI's RLIMIT_NOFILE.
    only_memlock = model.base_runtime_spec(
        [nodeconfig(rlimits(("RLIMIT_MEMLOCK", 1 << 30, 1 << 30)))]
    )
    assert "RLIMIT_NOFILE" not in model.containerd_loads(only_memlock)


def test_nodeadm_passes_every_number_through_a_float64():
    # Go: float64(2**64 - 1) == 2**64, written as the shortest digits that round-trip.
    assert model.through_go_float(18446744073709551615) == 18446744073709552000
    assert model.through_go_float(1048576) == 1048576
    assert model.through_go_float(2**53) == 2**53


def test_unlimited_memlock_through_nodeadm_stops_containerd_on_the_node():
    """RLIM_INFINITY in `containerd.baseRuntimeSpec` reaches containerd as
    18446744073709552000, which does not fit the spec's uint64: the CRI plugin fails to load
    the base spec, and the node runs no pod. (Replayed with Go's encoding/json for the report:
    "cannot unmarshal number 18446744073709552000 into Go struct field ... of type uint64".)"""
    spec = model.base_runtime_spec(
        [nodeconfig(rlimits(("RLIMIT_NOFILE", 65536, 1048576), ("RLIMIT_MEMLOCK", *UNLIMITED)))]
    )
    with pytest.raises(model.ContainerdRefusesBaseSpec, match="18446744073709552000"):
        model.containerd_loads(spec)


def test_runc_sets_what_the_spec_lists_and_the_rest_is_containerds():
    listed = user_data([nodeconfig(rlimits(("RLIMIT_MEMLOCK", 1 << 30, 1 << 30)))], [DROPIN])
    assert model.container_rlimit(listed) == (1 << 30, 1 << 30)
    inherited = user_data([nodeconfig()], [DROPIN + "systemctl daemon-reload\n"])
    assert model.container_rlimit(inherited) == UNLIMITED


def test_a_containerd_drop_in_counts_only_once_systemd_reloads():
    assert model.container_rlimit(user_data([nodeconfig()], [DROPIN])) == DEFAULT
    reload_first = "#!/bin/bash\nsystemctl daemon-reload\n" + DROPIN.removeprefix("#!/bin/bash\n")
    assert model.container_rlimit(user_data([nodeconfig()], [reload_first])) == DEFAULT
    reloaded = user_data([nodeconfig()], [DROPIN + "systemctl daemon-reload\n"])
    assert model.container_rlimit(reloaded) == UNLIMITED
    assert model.container_rlimit(user_data([nodeconfig()])) == DEFAULT


def test_a_drop_in_of_another_unit_leaves_containerd_alone():
    kubelet = DROPIN.replace("containerd.service.d", "kubelet.service.d")
    assert (
        model.container_rlimit(user_data([nodeconfig()], [kubelet + "systemctl daemon-reload\n"]))
        == DEFAULT
    )


# -------------------------------------------------- every group of every AWS stack


def stack_user_data(stack: str) -> dict[str, tuple[GpuNodeGroupSettings | None, str]]:
    """Each launch template's decoded user data, with its GPU group (None: the system nodes);
    a canary group's is its pool's, built from the same spec."""
    plan, gpu = planned(stack), stack_config(stack).gpu_node_groups
    groups = {f"{stack}-{g.name}{canary}": g for g in gpu for canary in ("", "-canary")}
    return {
        lt.name: (groups.get(lt.name), base64.b64decode(lt.inputs["userData"]).decode())
        for lt in plan.of_type(LAUNCH_TEMPLATE)
    }


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_containers_on_efa_nodes_run_without_a_memlock_limit_and_others_keep_the_default(stack):
    seen = {True: 0, False: 0}
    for name, (group, text) in stack_user_data(stack).items():
        efa = bool(group and group.efa)
        seen[efa] += 1
        assert model.container_rlimit(text) == (UNLIMITED if efa else DEFAULT), name
    assert seen[False], f"{stack}: no node group without EFA (the system nodes at least)"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_node_keeps_the_amis_base_spec_and_containerd_loads_it(stack):
    """No group's user data touches nodeadm's baseRuntimeSpec: containerd loads the AMI's spec,
    whose RLIMIT_NOFILE stays."""
    for name, (_, text) in stack_user_data(stack).items():
        assert model.base_spec_of(text) == {"RLIMIT_NOFILE": AMI_NOFILE}, name


def test_the_shipped_stacks_hold_an_efa_group():
    """So that the per-stack test above sees both kinds of node."""
    assert any(g.efa for s in AWS_STACKS for g in stack_config(s).gpu_node_groups)


@pytest.mark.parametrize(
    "settings",
    [
        # EFA without GPU tuning: the boot script holds only hugepages and the memlock drop-in.
        {"efa": True, "gpu_tuning": {"persistence_mode": False}},
        {
            "efa": True,
            "gpu_tuning": {"compute_mode": "exclusive-process", "power_limit_watts": 500},
        },
    ],
)
def test_efa_groups_lift_the_limit_with_or_without_gpu_tuning(settings):
    group = GpuNodeGroupSettings(name="g", instance_types=["p5.48xlarge"], **settings)
    assert model.container_rlimit(group_user_data(group, fast_pull=True)) == UNLIMITED


@pytest.mark.parametrize("name", sorted(n for n, row in CATALOG.items() if row.gpus))
def test_a_group_without_efa_keeps_the_default_on_every_gpu_type(name):
    # A type sold only in UltraServers is a Capacity Block group of whole ones (P6e-GB200: 9).
    sold = (
        {"capacity": "capacity_block", "capacity_reservation_id": "cr-0123456789abcdef0",
         "scaling": {"min_size": 0, "max_size": 9}}
        if CATALOG[name].ultraserver_nodes
        else {}
    )  # fmt: skip
    group = GpuNodeGroupSettings(name="g", instance_types=[name], **sold)
    assert model.container_rlimit(group_user_data(group, fast_pull=True)) == DEFAULT


def test_system_nodes_keep_the_default():
    row = CATALOG["m7i.xlarge"]
    text = user_data([node_config(row, KubeletSettings(), min(row.max_pods, 110))])
    assert model.container_rlimit(text) == DEFAULT


# The fabrics bootstrap/selftest/inventory.py's memlock check knows: efa, infiniband and roce
# (VERBS_FABRICS, held to unlimited), and tcp (not judged).
SELFTEST_FABRICS = {"efa", "infiniband", "roce", "tcp"}


@pytest.mark.parametrize("stack", STACKS)
def test_the_selftest_is_told_the_fabric_of_every_pool(stack):
    """inventory.memlock judges the limit by SELFTEST_FABRIC: every pool's run must carry the
    pool's own, as the stack file sets it (`efa` on a group, `fabric` on an on-prem pool)."""
    cfg = stack_config(stack)
    if cfg.provider == "aws":
        expected = {g.name: "efa" if g.efa else "tcp" for g in cfg.gpu_node_groups}
    else:
        expected = {p.name: p.fabric for p in cfg.existing.gpu_pools}
    told = {pool.name: pool_env(cfg, pool.name)["SELFTEST_FABRIC"] for pool in cfg.gpu_pools}
    assert told == expected
    assert set(told.values()) <= SELFTEST_FABRICS


def test_the_shipped_stacks_cover_efa_a_verbs_fabric_on_prem_and_tcp():
    fabrics = {pool.fabric for s in STACKS for pool in stack_config(s).gpu_pools}
    assert {"efa", "roce", "tcp"} <= fabrics
