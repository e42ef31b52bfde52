"""The self-test's `inventory.cpu_pinning`: the pod's QoS class, judged from the requests and
limits the Job passes through the downward API (components/scheduling/training_job.py
RESOURCE_ENV, named in contract/env.py), and the CPUs it may run on (cgroup cpuset,
sched_getaffinity). PASS when Guaranteed on exactly its integer CPUs
of its own, WARN when Burstable / BestEffort or not pinned, SKIP outside a Job's pod."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from selftest import inventory

from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH

ROOT = Path(__file__).resolve().parents[3]


def env(cpu_req: int, cpu_lim: int, mem_req: int, mem_lim: int) -> dict[str, str]:
    return {"CPU_REQUEST_MILLICORES": str(cpu_req), "CPU_LIMIT_MILLICORES": str(cpu_lim),
            "MEMORY_REQUEST_MIB": str(mem_req), "MEMORY_LIMIT_MIB": str(mem_lim)}  # fmt: skip


# A p5.48xlarge pod as the builder renders it: 184 CPUs (23 a GPU), 128 GiB, on a 192-vCPU node.
GUARANTEED = env(184_000, 184_000, 131072, 131072)
PINNED = set(range(4, 96)) | set(range(100, 192))
NODE = 192


def test_guaranteed_on_its_own_cpus_passes():
    result = inventory.cpu_pinning_check(GUARANTEED, PINNED, PINNED, NODE)
    assert (result.status, result.value) == ("PASS", "Guaranteed, 184 CPUs")
    assert result.threshold == "Guaranteed, 184 exclusive CPUs"
    assert result.details["qos_class"] == "Guaranteed"


def test_guaranteed_on_every_cpu_of_the_node_warns_that_the_kubelet_does_not_pin():
    """cpuManagerPolicy none: a Guaranteed container runs on the whole shared pool."""
    everything = set(range(NODE))
    result = inventory.cpu_pinning_check(GUARANTEED, everything, everything, NODE)
    assert result.status == "WARN"
    assert result.reason.startswith("Guaranteed with 184 CPUs, but it may run on 192 of the")


def test_a_cpuset_of_the_wrong_size_warns():
    few = set(range(8))
    assert inventory.cpu_pinning_check(GUARANTEED, few, few, NODE).status == "WARN"


def test_a_fractional_cpu_guaranteed_pod_passes_on_the_shared_cpus():
    """A pod on time-sliced GPUs asks 250m: Guaranteed, never exclusive (static policy)."""
    shared = set(range(4))
    result = inventory.cpu_pinning_check(env(250, 250, 16384, 16384), shared, shared, 4)
    assert (result.status, result.value) == ("PASS", "Guaranteed, 4 CPUs")


def test_burstable_and_best_effort_warn_naming_the_class():
    """What today's builder rendered: no CPU request (0), CPU limit = node allocatable."""
    shared = set(range(NODE))
    burstable = env(0, 191_000, 131072, 131072)
    result = inventory.cpu_pinning_check(burstable, shared, shared, NODE)
    assert (result.status, result.details["qos_class"]) == ("WARN", "Burstable")
    assert "cpus_per_gpu" in result.reason
    best_effort = env(0, 191_000, 0, 2_000_000)
    assert inventory.qos_class(best_effort) == "BestEffort"
    assert inventory.cpu_pinning_check(best_effort, shared, shared, NODE).status == "WARN"
    # A CPU limit above the request is Burstable too.
    assert inventory.qos_class(env(1000, 2000, 1024, 1024)) == "Burstable"


def test_outside_a_pod_it_skips():
    result = inventory.cpu_pinning_check({}, None, {0, 1}, 2)
    assert (result.status, result.reason) == ("SKIP", "not in a Job's pod: no requests passed")


def test_the_cgroup_v2_cpuset_is_read_before_v1(tmp_path):
    v2, v1 = tmp_path / "cpuset.cpus.effective", tmp_path / "cpuset.cpus"
    v1.write_text("0-63\n")
    assert inventory.read_cpuset((v2, v1)) == set(range(64))
    v2.write_text("4-7,100\n")
    assert inventory.read_cpuset((v2, v1)) == {4, 5, 6, 7, 100}
    assert inventory.read_cpuset((tmp_path / "none",)) is None


def test_the_inventory_group_reports_it_for_real(tmp_path):
    """The whole inventory group in a child told it is a Guaranteed pod with one CPU and pinned
    (sched_setaffinity) to one: the check reads this process's affinity."""
    env_ = {**os.environ, "PYTHONPATH": IMAGE_PYTHONPATH, "SELFTEST_FABRIC": "tcp",
            "SELFTEST_EXPECTED_FABRIC_DEVICES": "0", **env(1000, 1000, 1024, 1024)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "selftest", "--out", str(tmp_path), "--checks", "inventory",
         "--shared-data", str(tmp_path), "--nvme-cache", str(tmp_path)],
        env=env_, preexec_fn=lambda: os.sched_setaffinity(0, {0}), capture_output=True,
        text=True, timeout=HANG_S, cwd=tmp_path,
    )  # fmt: skip
    checks = {c["name"]: c for c in json.loads((tmp_path / "report.json").read_text())["checks"]}
    pinning = checks["inventory.cpu_pinning"]
    assert pinning["threshold"] == "Guaranteed, 1 exclusive CPUs", done.stderr
    # This machine's cgroup cpuset spans every CPU unless a kubelet pinned it: a WARN then.
    expected = "PASS" if inventory.read_cpuset() in ({0}, None) else "WARN"
    assert pinning["status"] == expected, done.stdout + done.stderr
