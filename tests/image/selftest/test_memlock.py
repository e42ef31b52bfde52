"""The self-test's `inventory.memlock`: the locked-memory limit it runs with, unlimited on every
verbs fabric (EFA, InfiniBand, RoCE), a FAIL naming the limit below that, a SKIP without a fabric.
Read from the process for real (a child under a lowered limit) and through getrlimit patched."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from selftest import inventory, push, quarantine
from selftest.context import SelfTestContext

from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH

ROOT = Path(__file__).resolve().parents[3]
# getrlimit(2): RLIM_INFINITY is "unlimited"; Python's resource module returns it as -1 on Linux.
UNLIMITED = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
# Linux's default (MLOCK_LIMIT, 8 MiB since 5.16): what a container gets from a containerd that
# sets nothing.
KERNEL_DEFAULT = (8388608, 8388608)
# Every fabric the job builder and the self-test's env name (SELFTEST_FABRIC): the three verbs
# fabrics, and tcp.
VERBS = ["efa", "infiniband", "roce"]


@pytest.mark.parametrize("fabric", VERBS)
def test_unlimited_passes_on_every_verbs_fabric(fabric):
    result = inventory.memlock_check(fabric, UNLIMITED)
    assert (result.status, result.value, result.threshold) == ("PASS", "unlimited", "unlimited")


@pytest.mark.parametrize("fabric", VERBS)
@pytest.mark.parametrize(
    "limits",
    [KERNEL_DEFAULT, (65536, 65536), (65536, resource.RLIM_INFINITY)],
    ids=["kernel-default", "64KiB", "soft-only"],
)
def test_any_limit_fails_on_a_verbs_fabric_and_names_it(fabric, limits):
    """A soft limit under an unlimited hard one fails too: NCCL and libfabric do not raise it."""
    result = inventory.memlock_check(fabric, limits)
    assert result.status == "FAIL"
    # `ulimit -l` units: KiB.
    assert (result.value, result.unit) == (limits[0] // 1024, "KiB")
    hard = "unlimited" if limits[1] == resource.RLIM_INFINITY else limits[1] // 1024
    assert result.reason.startswith(
        f"RLIMIT_MEMLOCK soft {limits[0] // 1024}, hard {hard} (KiB) on a {fabric} pool"
    )
    assert "LimitMEMLOCK=infinity" in result.reason


def test_without_a_fabric_the_limit_is_reported_and_not_judged():
    result = inventory.memlock_check("tcp", KERNEL_DEFAULT)
    assert (result.status, result.value, result.unit) == ("SKIP", 8192, "KiB")
    assert result.reason == "no verbs fabric here (tcp): nothing registers memory"


def ctx(tmp_path: Path, fabric: str) -> SelfTestContext:
    return SelfTestContext(run_id="t", rank=0, world_size=1, local_rank=0, device="cpu",
                           out_dir=tmp_path, shared_data=tmp_path, nvme_cache=tmp_path,
                           fabric=fabric)  # fmt: skip


def test_the_inventory_group_reads_this_process_limit(tmp_path, monkeypatch):
    """inventory.run judges what getrlimit returns for the fabric the Job names."""
    monkeypatch.setattr(resource, "getrlimit", lambda kind: UNLIMITED)
    (result,) = [r for r in inventory.run(ctx(tmp_path, "efa")) if r.name == "inventory.memlock"]
    assert result.status == "PASS"
    monkeypatch.setattr(resource, "getrlimit", lambda kind: KERNEL_DEFAULT)
    (result,) = [r for r in inventory.run(ctx(tmp_path, "roce")) if r.name == "inventory.memlock"]
    assert (result.status, result.value) == ("FAIL", 8192)


def test_a_real_process_under_a_lowered_limit_fails_on_efa(tmp_path):
    """The whole self-test in a child whose RLIMIT_MEMLOCK is lowered to 64 KiB (lowering needs
    no privilege), told its pool is EFA through SELFTEST_FABRIC as the Job tells it."""

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (65536, 65536))

    env = {**os.environ, "PYTHONPATH": IMAGE_PYTHONPATH, "SELFTEST_FABRIC": "efa",
           "SELFTEST_EXPECTED_FABRIC_DEVICES": "0"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "selftest", "--out", str(tmp_path), "--checks", "inventory",
         "--shared-data", str(tmp_path), "--nvme-cache", str(tmp_path)],
        env=env, preexec_fn=lower, capture_output=True, text=True, timeout=HANG_S, cwd=tmp_path,
    )  # fmt: skip
    checks = {c["name"]: c for c in json.loads((tmp_path / "report.json").read_text())["checks"]}
    memlock = checks["inventory.memlock"]
    assert (memlock["status"], memlock["value"]) == ("FAIL", 64), done.stdout + done.stderr
    assert done.returncode == 1


def test_the_limit_is_pushed_as_a_figure_and_its_status():
    """What the Pushgateway gets: the check's status (SelfTestFailed reads it) and, when finite,
    the limit in KiB; no floor, since "unlimited" is not a number to join on."""
    body = push.exposition("node-a", [(0, [inventory.memlock_check("efa", KERNEL_DEFAULT)])], 1.0)
    assert (
        'gpu_platform_selftest_check_status{check="inventory.memlock",node="node-a",'
        'status="FAIL"} 1'
    ) in body
    assert (
        'gpu_platform_selftest_figure{check="inventory.memlock",node="node-a",gpu="",'
        'unit="KiB"} 8192'
    ) in body
    assert "figure_floor{" not in body
    unlimited = push.exposition("node-a", [(0, [inventory.memlock_check("efa", UNLIMITED)])], 1.0)
    assert 'check="inventory.memlock",node="node-a",status="PASS"} 1' in unlimited
    assert "gpu_platform_selftest_figure{" not in unlimited


def test_a_memlock_fail_leaves_the_node_schedulable():
    """The limit is the node's containerd setting, the same on every node of a pool: cordoning
    would take the whole pool away for a fix that needs no new hardware."""
    assert quarantine.is_hardware("inventory.memlock") is False
