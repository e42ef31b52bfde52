"""The self-test's hardware checks (bootstrap/selftest/hardware.py, xid.py, dcgm.py) on the tools'
real output: every check through PASS, FAIL and SKIP. The outputs are nvidia-smi's, dmesg's and
dcgmi's formats as those tools print them, each with where it was published; the faults are the
same documents with the one value a fault changes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from selftest import dcgm, hardware, links, xid
from selftest.context import SelfTestContext
from selftest.tools import ToolRun

from tests.helpers.loopback import free_port


def ctx(tmp_path: Path, **overrides) -> SelfTestContext:
    values = dict(run_id="t", rank=0, world_size=1, local_rank=0, device="cpu",
                  out_dir=tmp_path, shared_data=tmp_path, nvme_cache=tmp_path)  # fmt: skip
    values.update(overrides)
    return SelfTestContext(**values)


# --- PCIe link ------------------------------------------------------------------------------

# `nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,
# pcie.link.width.current,pcie.link.width.max --format=csv`: nvidia-smi's CSV, ", "-separated
# with a header line (an L40S node printed "0, 1, 4, 16, 16" for index and the four link fields
# at idle: Gen1 current against Gen4 max, the downclock the check reads under load to avoid).
PCIE_HEALTHY = """\
index, pci.bus_id, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max
0, 00000000:18:00.0, 5, 5, 16, 16
1, 00000000:2A:00.0, 5, 5, 16, 16
"""  # noqa: E501
# GPU 1's link trained at Gen4 x8 in a Gen5 x16 slot: half the lanes, the previous generation.
PCIE_DOWNTRAINED = PCIE_HEALTHY.replace("1, 00000000:2A:00.0, 5, 5, 16, 16",
                                        "1, 00000000:2A:00.0, 4, 5, 8, 16")  # fmt: skip
PCIE_IDLE_L40S = "0, 00000000:01:00.0, 1, 4, 16, 16\n"


def test_a_full_link_passes_and_a_downtrained_one_fails_naming_gpu_and_bus_id():
    healthy = hardware.pcie_check(hardware.parse_pcie(PCIE_HEALTHY))
    assert (healthy.status, healthy.value, healthy.threshold) == ("PASS", 2, 2)
    assert {"gpu": 1, "value": 16, "unit": "PCIe lanes"} in healthy.details["figures"]
    down = hardware.pcie_check(hardware.parse_pcie(PCIE_DOWNTRAINED))
    assert (down.status, down.value) == ("FAIL", 1)
    assert down.reason == (
        "downtrained PCIe link: GPU 1 (00000000:2A:00.0): Gen4 x8, capable of Gen5 x16"
    )
    # Read at idle, a healthy link looks downtrained: hence the load while reading.
    assert hardware.pcie_check(hardware.parse_pcie(PCIE_IDLE_L40S)).status == "FAIL"


def test_pcie_without_gpus_or_readings_skips_or_warns():
    assert hardware.pcie_check(hardware.parse_pcie("")).status == "SKIP"
    unreadable = hardware.pcie_check(
        hardware.parse_pcie("0, 00000000:18:00.0, [N/A], [N/A], [N/A], [N/A]\n")
    )
    assert (unreadable.status, unreadable.reason) == (
        "WARN",
        "link not readable (N/A) for GPU 0 (00000000:18:00.0)",
    )


def test_on_cpu_every_hardware_check_skips_with_its_reason(tmp_path):
    results = hardware.run(ctx(tmp_path))
    assert [(r.name, r.status, r.reason) for r in results] == [
        (f"hardware.{name}", "SKIP", "no GPU visible")
        for name in ("pcie_link", "ecc_uncorrectable", "row_remap", "nvlink", "p2p", "xid",
                     "dcgm_diag")
    ]  # fmt: skip


# --- memory errors --------------------------------------------------------------------------

# `nvidia-smi -q` of an A100-SXM4-80GB after Xid 63, as stas00/ml-engineering
# compute/accelerator/nvidia/debug.md prints it (driver 510.73.08): 177 corrected DRAM errors, no
# uncorrectable one, a row remap pending (one of 640 spare rows in use).
A100_AFTER_XID_63 = """\
==============NVSMI LOG==============

Timestamp                                 : Wed Jun  7 19:32:16 2023
Driver Version                            : 510.73.08
CUDA Version                              : 11.6

Attached GPUs                             : 8
GPU 00000000:10:1C.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 177
            DRAM Uncorrectable            : 0
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 177
            DRAM Uncorrectable            : 0
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 1
        Uncorrectable Error               : 0
        Pending                           : Yes
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 639 bank(s)
            High                          : 1 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)
"""
CLEAN = A100_AFTER_XID_63.replace("Pending                           : Yes",
                                  "Pending                           : No")  # fmt: skip
# An uncorrectable DRAM error since the driver loaded, and a remap that failed: NVIDIA's RMA
# criterion.
BROKEN = A100_AFTER_XID_63.replace(
    "            DRAM Uncorrectable            : 0\n        Aggregate",
    "            DRAM Uncorrectable            : 2\n        Aggregate",
).replace("Remapping Failure Occurred        : No", "Remapping Failure Occurred        : Yes")
# A Volta-era (V100) driver's layout: Single Bit / Double Bit sections with a Total, and page
# retirement instead of row remapping (nvidia-smi's man page, "ECC Errors", "Retired Pages").
V100_PENDING_RETIREMENT = """\
GPU 00000000:00:1E.0
    Product Name                          : Tesla V100-SXM2-16GB
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 2
                Total                     : 2
            Double Bit
                Device Memory             : 1
                Total                     : 1
        Aggregate
            Single Bit
                Total                     : 2
            Double Bit
                Total                     : 1
    Retired Pages
        Single Bit ECC                    : 0
        Double Bit ECC                    : 1
        Pending Page Blacklist            : Yes
"""
# A GPU without ECC (or with it off) reports every counter N/A.
NO_ECC = """\
GPU 00000000:01:00.0
    ECC Errors
        Volatile
            SRAM Correctable              : N/A
            SRAM Uncorrectable            : N/A
            DRAM Correctable              : N/A
            DRAM Uncorrectable            : N/A
        Aggregate
            DRAM Uncorrectable            : N/A
    Retired Pages
        Pending Page Blacklist            : N/A
    Remapped Rows                         : N/A
"""


def test_the_query_tree_follows_nvidia_smis_indentation():
    tree = hardware.parse_query(A100_AFTER_XID_63)["00000000:10:1C.0"]
    assert tree["ECC Errors"]["Volatile"]["DRAM Correctable"] == "177"
    assert tree["Remapped Rows"]["Bank Remap Availability Histogram"]["Max"] == "639 bank(s)"
    assert tree["Remapped Rows"]["Remapping Failure Occurred"] == "No"


def test_a_pending_remap_needs_a_reset_and_a_failed_one_a_new_gpu():
    pending = hardware.row_remap_check(hardware.parse_query(A100_AFTER_XID_63))
    assert (pending.status, pending.value) == ("FAIL", 1)
    assert pending.reason == (
        "GPU 00000000:10:1C.0: row remap pending: reset the GPU (reboot the node)"
    )
    assert hardware.row_remap_check(hardware.parse_query(CLEAN)).status == "PASS"
    broken = hardware.row_remap_check(hardware.parse_query(BROKEN))
    assert broken.reason.startswith("GPU 00000000:10:1C.0: row remapping failed: replace the GPU")
    volta = hardware.row_remap_check(hardware.parse_query(V100_PENDING_RETIREMENT))
    assert volta.reason == "GPU 00000000:00:1E.0: page retirement pending: reboot the node"
    assert hardware.row_remap_check(hardware.parse_query(NO_ECC)).status == "SKIP"


def test_uncorrectable_ecc_since_the_driver_loaded_fails():
    assert hardware.ecc_check(hardware.parse_query(A100_AFTER_XID_63)).status == "PASS"
    broken = hardware.ecc_check(hardware.parse_query(BROKEN))
    assert (broken.status, broken.value) == ("FAIL", 2)
    assert broken.reason.startswith(
        "GPU 00000000:10:1C.0: 2 uncorrectable ECC errors since the driver loaded"
    )
    volta = hardware.ecc_check(hardware.parse_query(V100_PENDING_RETIREMENT))
    assert (volta.status, volta.value) == ("FAIL", 1)
    # Lifetime errors only (the driver reloaded since): a warning, the GPU served since.
    history = BROKEN.replace(
        "            DRAM Uncorrectable            : 2\n        Aggregate",
        "            DRAM Uncorrectable            : 0\n        Aggregate",
    ).replace(
        "            DRAM Uncorrectable            : 0\n    Retired",
        "            DRAM Uncorrectable            : 3\n    Retired",
    )
    lifetime = hardware.ecc_check(hardware.parse_query(history))
    assert (lifetime.status, lifetime.reason) == (
        "WARN",
        "GPU 00000000:10:1C.0: 3 uncorrectable in its lifetime (Aggregate)",
    )
    assert hardware.ecc_check(hardware.parse_query(NO_ECC)).status == "SKIP"


# --- NVLink and P2P -------------------------------------------------------------------------

# `nvidia-smi nvlink --status` on an H100 SXM: eighteen NVLink 4 links at 26.562 GB/s each, and
# "<inactive>" for a link that is down (the format NVIDIA's tool prints per GPU).
H100_NVLINK = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52)\n"
H100_NVLINK += "".join(f"\t Link {n}: 26.562 GB/s\n" for n in range(18))
H100_LINK_DOWN = H100_NVLINK.replace("Link 7: 26.562 GB/s", "Link 7: <inactive>")
A10G_NVLINK = "GPU 0: NVIDIA A10G (UUID: GPU-8d4a0f50-2f24-4a13-b1b3-1cbb3b8e2b4f)\n"


def test_nvlink_links_up_down_or_absent():
    up = links.nvlink_check(links.parse_nvlink(H100_NVLINK))
    assert (up.status, up.value, up.threshold) == ("PASS", 18, 18)
    down = links.nvlink_check(links.parse_nvlink(H100_LINK_DOWN))
    assert (down.status, down.value, down.reason) == ("FAIL", 17, "GPU 0: link 7 inactive")
    assert down.details["figures"] == [{"gpu": 0, "value": 17, "unit": "NVLink links up"}]
    assert links.nvlink_check(links.parse_nvlink(A10G_NVLINK)).status == "SKIP"


# `nvidia-smi topo -p2p r` on an 8-GPU node (every pair OK), and `nvidia-smi topo -m` on a DGX
# H100 (every pair NV18: 18 NVLink 4 links through the NVSwitches).
P2P_ALL_OK = "      GPU0 GPU1 GPU2 GPU3\n" + "".join(
    f"GPU{r}  " + " ".join("X   " if c == r else "OK  " for c in range(4)) + "\n" for r in range(4)
) + """
Legend:

  X    = Self
  OK   = Status Ok
  CNS  = Chipset not supported
  GNS  = GPU not supported
  TNS  = Topology not supported
  NS   = Not supported
  U    = Unknown
"""  # fmt: skip
TOPO_NV18 = "\x1b[4m\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
TOPO_NV18 += "".join(
    f"GPU{r}\t" + "\t".join(" X " if c == r else "NV18" for c in range(4)) + "\t0-47\t0\t\tN/A\n"
    for r in range(4)
)
# A PCIe-only pair of L40 cards: the chipset refuses peer access.
P2P_CNS = "      GPU0 GPU1\nGPU0  X    CNS\nGPU1  CNS  X\n"


def test_every_p2p_capable_pair_is_probed_and_a_broken_one_fails():
    p2p, topo = links.parse_matrix(P2P_ALL_OK), links.parse_matrix(TOPO_NV18)
    assert len(p2p) == 12 and topo[(0, 3)] == "NV18"
    probed = []
    ok = links.p2p_check(p2p, topo, lambda a, b: probed.append((a, b)))
    assert (ok.status, ok.value, ok.threshold) == ("PASS", 12, 12)
    assert len(probed) == 12 and (2, 1) in probed
    bad = links.p2p_check(p2p, topo, lambda a, b: "the copy arrived corrupted" if b == 3 else None)
    assert (bad.status, bad.value) == ("FAIL", 9)
    assert "GPU0->GPU3: the copy arrived corrupted" in bad.reason
    # NVLink between two GPUs the driver will not let talk: a link is broken.
    dead = {**p2p, (1, 2): "NS"}
    broken = links.p2p_check(dead, topo, lambda a, b: None)
    assert broken.status == "FAIL" and "GPU1->GPU2: NVLink (NV18) but P2P NS" in broken.reason
    none = links.p2p_check(links.parse_matrix(P2P_CNS), {}, lambda a, b: None)
    assert none.status == "SKIP"


# --- XID ------------------------------------------------------------------------------------

# Kernel log lines as NVRM writes them: Xid 79 (NVIDIA/open-gpu-kernel-modules issue 1151), Xid
# 63 (stas00/ml-engineering, debug.md), Xid 31 (a user's log), the older bus format without
# "PCI:" (Xid 13), and the lines around them.
XID_LOG = """\
[  179.437927] NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae
[  179.437933] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.
[  179.437940] NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.
[  201.100000] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.
[  966.503025] NVRM: Xid (0000:01:00): 13, 0005 00000000 0000502d 00000104 00000000 00000100
"""  # noqa: E501
APP_FAULT = (
    "[ 18296.507578] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000009, engmask 00000101, intr 10000000\n"
)


def test_xids_are_reported_with_their_documented_meaning():
    events = xid.parse_xids(XID_LOG)
    assert [(bus, code) for bus, code, _ in events] == [
        ("0000:2b:00", 79), ("0000:10:1c", 63), ("0000:01:00", 13)]  # fmt: skip
    result = xid.xid_check(events)
    assert (result.status, result.value, result.threshold) == ("FAIL", 3, 0)
    # NVIDIA's Xid listing: 79 "GPU has fallen off the bus", 63 "ECC page retirement or row
    # remapping recording event", 13 "Graphics Engine Exception".
    assert (
        "Xid 79 on PCI:0000:2b:00 (x1): GPU has fallen off the bus: reboot the node"
        in result.reason
    )
    assert (
        "Xid 63 on PCI:0000:10:1c (x1): ECC page retirement or row remapping recording event"
        in result.reason
    )
    assert "Xid 13 on PCI:0000:01:00 (x1): Graphics Engine Exception" in result.reason


def test_an_applications_fault_warns_and_a_clean_log_passes():
    app = xid.xid_check(xid.parse_xids(APP_FAULT * 2))
    assert (app.status, app.value) == ("WARN", 2)
    assert app.reason.startswith("Xid 31 on PCI:0000:01:00 (x2): GPU memory page fault")
    unknown = xid.xid_check([("0000:01:00", 999, "")])
    assert (
        unknown.status == "WARN" and "https://docs.nvidia.com/deploy/xid-errors/" in unknown.reason
    )
    clean = xid.xid_check(xid.parse_xids("[    1.0] nvidia: loading out-of-tree module\n"))
    assert (clean.status, clean.value) == ("PASS", 0)


def test_an_unreadable_kernel_log_skips_saying_why(tmp_path, monkeypatch):
    # What dmesg prints without CAP_SYSLOG under kernel.dmesg_restrict=1.
    refused = ToolRun(
        "", "`dmesg` exited 1: dmesg: read kernel buffer failed: Operation not permitted"
    )
    monkeypatch.setattr(xid, "kernel_log", lambda: refused)
    result = xid.run(ctx(tmp_path, device="cuda"))
    assert result.status == "SKIP"
    assert result.reason == f"kernel log not readable: {refused.problem}"


# --- DCGM -----------------------------------------------------------------------------------

# `dcgmi diag -r 2` on a p4d.24xlarge (DCGM 3.3.3, eight A100s: device id 20b2), published in a
# Korean walkthrough of EKS GPU node checks.
DIAG_PASS = """\
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.3                                          |
| Driver Version Detected   | 535.104.12                                     |
| GPU Device IDs Detected   | 20b2,20b2,20b2,20b2,20b2,20b2,20b2,20b2        |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
| NVML Library              | Pass                                           |
| CUDA Main Library         | Pass                                           |
| Permissions and OS Blocks | Pass                                           |
| Persistence Mode          | Pass                                           |
| Environment Variables     | Pass                                           |
| Page Retirement/Row Remap | Pass                                           |
| Graphics Processes        | Pass                                           |
| Inforom                   | Pass                                           |
+-----  Integration  -------+------------------------------------------------+
| PCIe                      | Pass - All                                     |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - All                                     |
+-----  Stress  ------------+------------------------------------------------+
+---------------------------+------------------------------------------------+
"""
# `dcgmi diag -r 1` (DCGM 3.1.8, H100s: 2335) with persistence mode off: the test fails and its
# Error row wraps over the following rows, as dcgmi prints it.
DIAG_FAIL = """\
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
| Persistence Mode          | Fail                                           |
| Error                     | Persistence mode for GPU 0 is currently disab  |
|                           | led. The DCGM diagnostic requires peristence   |
| Environment Variables     | Pass                                           |
+---------------------------+------------------------------------------------+
"""


def test_dcgm_diag_passes_or_fails_naming_the_test_and_its_error():
    passed = dcgm.diag_check(dcgm.parse_diag(DIAG_PASS), 2)
    assert (passed.status, passed.value, passed.source) == ("PASS", 0, "dcgmi diag -r 2")
    assert [t["test"] for t in passed.details["tests"]][-2:] == ["PCIe", "GPU Memory"]
    failed = dcgm.diag_check(dcgm.parse_diag(DIAG_FAIL), 1)
    assert (failed.status, failed.value) == ("FAIL", 1)
    assert failed.reason.startswith(
        "Persistence Mode: Fail (Persistence mode for GPU 0 is currently disabled."
    )
    assert dcgm.diag_check([], 1).status == "WARN"


def test_dcgm_skips_without_a_host_engine_or_when_it_does_not_answer(tmp_path, monkeypatch):
    none = dcgm.run(ctx(tmp_path, device="cuda"))
    assert (none.status, none.reason) == (
        "SKIP", "no DCGM host engine configured (--dcgm-hostengine)")  # fmt: skip
    monkeypatch.setattr(dcgm, "ENGINE_WAIT_S", 0.0)
    port = free_port()
    closed = dcgm.run(ctx(tmp_path, device="cuda", dcgm_hostengine=f"127.0.0.1:{port}"))
    assert closed.status == "SKIP"
    assert closed.reason.startswith(f"DCGM host engine at 127.0.0.1:{port} unreachable")


class Clock:
    """A clock that moves only when the code under test sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_an_engine_that_starts_answering_within_the_wait_is_asked(monkeypatch):
    """A node that has just joined: its engine's pod is ready a little after the check starts.
    The check retries until the engine answers, within ENGINE_WAIT_S, instead of SKIPping."""
    clock, attempts = Clock(), []

    def connect(address, timeout):
        attempts.append(clock.now)
        if len(attempts) < 4:
            raise ConnectionRefusedError(111, "Connection refused")
        return socket.socket()

    monkeypatch.setattr(dcgm.socket, "create_connection", connect)
    assert dcgm.reachable("nvidia-dcgm.gpu-operator.svc:5555", 120, clock, clock.sleep) is None
    assert attempts == [0.0, 5.0, 10.0, 15.0]

    def refused(address, timeout):
        attempts.append(clock.now)
        raise ConnectionRefusedError(111, "Connection refused")

    attempts.clear()
    clock.now = 0.0
    monkeypatch.setattr(dcgm.socket, "create_connection", refused)
    problem = dcgm.reachable("nvidia-dcgm.gpu-operator.svc:5555", 12, clock, clock.sleep)
    assert problem == ("DCGM host engine at nvidia-dcgm.gpu-operator.svc:5555 unreachable after "
                       "12 s: [Errno 111] Connection refused")  # fmt: skip
    assert attempts == [0.0, 5.0, 10.0, 15.0]


# `dcgmi diag` reference (docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference
# /dcgmi/dcgmi-diag.html): level 1 "normally lasting seconds", 2 "approximately two minutes", 3
# "approximately 15 minutes". The tool may take twice that, never under the 600 s every level had.
@pytest.mark.parametrize(
    ("check_set", "level", "timeout"), [("short", "1", 600), ("full", "2", 600)]
)
def test_the_short_set_runs_diag_level_1_and_the_full_set_level_2(
    tmp_path, monkeypatch, check_set, level, timeout
):
    ran = []
    monkeypatch.setattr(dcgm, "reachable", lambda address, wait_s: None)
    monkeypatch.setattr(
        dcgm, "run_tool", lambda argv, timeout: ran.append((argv, timeout)) or ToolRun(DIAG_PASS)
    )
    c = ctx(tmp_path, device="cuda", dcgm_hostengine="node-a:5555", check_set=check_set)
    assert dcgm.run(c).status == "PASS"
    assert ran == [(["dcgmi", "diag", "--host", "node-a:5555", "-r", level], timeout)]


@pytest.mark.parametrize("check_set", ["short", "full"])
def test_selftest_dcgm_level_3_runs_the_long_diagnostic_for_up_to_30_minutes(
    tmp_path, monkeypatch, check_set
):
    """The node-join check sets its pool's level (SELFTEST_DCGM_LEVEL, as its DaemonSet renders
    it) over the check set's; level 3 is about 15 minutes, so the tool gets twice that."""
    from selftest import runner

    ran = []
    monkeypatch.setattr(dcgm, "reachable", lambda address, wait_s: None)
    monkeypatch.setattr(
        dcgm, "run_tool", lambda argv, timeout: ran.append((argv, timeout)) or ToolRun(DIAG_PASS)
    )
    host = "nvidia-dcgm.gpu-operator.svc:5555"
    env = {"SELFTEST_DCGM_LEVEL": "3", "SELFTEST_DCGM_HOSTENGINE": host,
           "SELFTEST_CHECKS": check_set, "SELFTEST_OUT": str(tmp_path)}  # fmt: skip
    c = runner.build_context(runner.parse_args([], env), env)
    assert dcgm.run(c).status == "PASS"
    assert ran == [(["dcgmi", "diag", "--host", host, "-r", "3"], 1800)]


@pytest.mark.parametrize("level", ["4", "0"])
def test_a_dcgm_level_outside_1_to_3_stops_the_run_naming_it(level):
    from selftest import runner

    with pytest.raises(SystemExit, match=f"SELFTEST_DCGM_LEVEL {level}: valid: 1, 2, 3"):
        runner.parse_args([], {"SELFTEST_DCGM_LEVEL": level})
