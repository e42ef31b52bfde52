"""The self-test's runner, report, inventory, compute, collectives and metrics: pure functions
against documented figures and literal log / exposition text, then the real 2-rank CPU run
(torchrun + gloo) and a run with the faults the issue names injected."""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
import types
from pathlib import Path

import pytest
from selftest import collectives, compute, inventory, metrics, report, runner, training
from selftest.context import SelfTestContext
from selftest.result import CheckResult

from tests.helpers.loopback import LoopbackServer, QuietHandler, free_port
from tests.helpers.selftest_process import run

REPORT_KEYS = ["status", "run_id", "image", "nodes", "checks", "duration_s"]
CHECK_KEYS = ["name", "status", "value", "unit", "threshold", "source", "reason", "duration_s"]


def ctx(tmp_path: Path, **overrides) -> SelfTestContext:
    values = dict(run_id="t", rank=0, world_size=1, local_rank=0, device="cpu",
                  out_dir=tmp_path, shared_data=tmp_path, nvme_cache=tmp_path)  # fmt: skip
    values.update(overrides)
    return SelfTestContext(**values)


# --- collectives -------------------------------------------------------------------------------


def test_bus_bandwidth_follows_nccl_tests_performance_md():
    # nccl-tests PERFORMANCE.md: all-reduce busbw = algbw × 2(n−1)/n. 1e9 bytes in 10 ms on
    # 8 ranks: algbw 100 GB/s, busbw 100 × 14/8 = 175 GB/s.
    algbw, busbw = collectives.bus_bandwidth(1_000_000_000, 0.01, 8)
    assert algbw == pytest.approx(100.0)
    assert busbw == pytest.approx(175.0)
    # Two ranks: 2(2−1)/2 = 1, busbw equals algbw.
    assert collectives.bus_bandwidth(2_000_000, 0.001, 2) == pytest.approx((2.0, 2.0))


# NCCL_DEBUG=INFO lines as NCCL prints them (host:pid:tid [cuda dev] NCCL INFO …), from
# NVIDIA/nccl issue #1597 (P5en with aws-ofi-nccl) and aws/aws-ofi-nccl issue #24 (channels).
EFA_LOG = """\
8h200-3:6310:6318 [0] NCCL INFO NET/OFI Selected Provider is efa (found 16 nics)
8h200-2:6831:6840 [0] NCCL INFO Using network Libfabric
ip-172-32-38-1:21471:22316 [7] NCCL INFO Ring 00 : 7 -> 8 [send] via NET/AWS Libfabric/0
ip-172-32-36-209:8716:9558 [2] NCCL INFO Ring 00 : 26[2] -> 30[6] via P2P/IPC
"""
SOCKET_LOG = """\
ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0>
ip-10-36-29-253:79:79 [0] NCCL INFO NET/Socket : Using [0]eth0:10.36.29.253<0>
ip-10-36-29-253:79:79 [0] NCCL INFO Using network Socket
ip-10-36-29-253:79:90 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0
"""
IB_LOG = """\
node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>
node1:1234:1234 [0] NCCL INFO Using network IB
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0
"""


def test_nccl_networks_read_from_the_info_log():
    assert collectives.nccl_networks(EFA_LOG) == {"Libfabric", "AWS Libfabric"}
    assert collectives.nccl_networks(SOCKET_LOG) == {"Socket"}
    assert collectives.nccl_networks(IB_LOG) == {"IB"}


def test_socket_fallback_on_an_rdma_fabric_is_a_fail_with_its_reason(tmp_path):
    assert collectives.socket_fallback_reason(EFA_LOG, "efa") is None
    assert collectives.socket_fallback_reason(IB_LOG, "infiniband") is None
    # On a plain TCP fabric sockets are what is expected.
    assert collectives.socket_fallback_reason(SOCKET_LOG, "tcp") is None
    reason = collectives.socket_fallback_reason(SOCKET_LOG, "efa")
    assert reason is not None and "NET/Socket on a efa fabric" in reason

    log = tmp_path / "nccl.log"
    log.write_text(SOCKET_LOG)
    result = collectives.fallback_check(ctx(tmp_path, device="cuda", fabric="efa"), log)
    assert (result.name, result.status, result.value) == ("collectives.nccl_transport", "FAIL",
                                                          "Socket")  # fmt: skip
    log.write_text(EFA_LOG)
    assert collectives.fallback_check(ctx(tmp_path, device="cuda", fabric="efa"), log).status \
        == "PASS"  # fmt: skip


# Channel lines in the format of NVIDIA/nccl src/transport/net.cc (sendSetup / recvSetup):
# "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s" with "/GDRDMA" when the NIC
# reaches GPU memory directly, "(proxy rank)" after the device for a PXN send, "/Shared" last.
# RoCE runs through the same IB plugin (NET/IB : Using [0]mlx5_0:1/RoCE).
GDR_LOG = """\
node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>
node1:1234:1234 [0] NCCL INFO Using network IB
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
node1:1234:1300 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1(1)/GDRDMA/Shared
node1:1234:1300 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/CUMEM
"""  # noqa: E501
MIXED_GDR_LOG = (
    GDR_LOG + "node1:1234:1300 [0] NCCL INFO Channel 03/0 : 0[0] -> 8[0] [send] via NET/IB/1\n"
)
SINGLE_NODE_LOG = """\
node1:1234:1234 [0] NCCL INFO Using network IB
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
"""


@pytest.mark.parametrize("fabric", ["infiniband", "roce"])
def test_an_rdma_pool_without_gpudirect_rdma_fails(tmp_path, fabric):
    """IB_LOG's connections run over NET/IB without /GDRDMA: what NCCL logs on a node whose
    driver came without nvidia-peermem. Data then goes GPU → host memory → NIC."""
    log = tmp_path / "nccl.log"
    c = ctx(tmp_path, device="cuda", fabric=fabric)
    outcomes = {}
    for name, text in [("staged", IB_LOG), ("direct", GDR_LOG), ("mixed", MIXED_GDR_LOG),
                       ("single node", SINGLE_NODE_LOG)]:  # fmt: skip
        log.write_text(text)
        result = collectives.gpudirect_check(c, log)
        outcomes[name] = (result.status, result.value, result.reason)
    assert outcomes["staged"] == ("FAIL", 0, (
        "none of NCCL's 1 NET/IB connections uses GPUDirect RDMA (no /GDRDMA): data is staged "
        "through host memory; load nvidia-peermem on the host"))  # fmt: skip
    assert outcomes["direct"] == ("PASS", 3, "")
    assert outcomes["mixed"] == ("WARN", 3, "1 of 4 NET/IB connections lack /GDRDMA")
    assert outcomes["single node"][0] == "SKIP"


def test_gpudirect_rdma_is_judged_on_infiniband_and_roce_only(tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text(IB_LOG)
    for fabric in ("efa", "tcp"):
        result = collectives.gpudirect_check(ctx(tmp_path, device="cuda", fabric=fabric), log)
        assert result.status == "SKIP", fabric
    assert collectives.gpudirect_check(ctx(tmp_path, fabric="roce"), log).status == "SKIP"


def test_busbw_floors_per_instance_type_are_facts_md_figures(tmp_path):
    # FACTS.md "Self-test numbers": one 8-GPU node A100 ≈ 228, H100 ≈ 460, H200 ≈ 431 GB/s;
    # two nodes: p4de ≈ 78, p5 ≈ 444 GB/s at 2 GiB.
    def floor(instance, scope):
        return collectives.floor_for(ctx(tmp_path, device="cuda", instance_type=instance), scope)[0]

    assert floor("p4de.24xlarge", "intra") == 228
    assert floor("p5.48xlarge", "intra") == 460
    assert floor("p5en.48xlarge", "intra") == 431
    assert floor("p4de.24xlarge", "inter") == 78
    assert floor("p5.48xlarge", "inter") == 444
    assert floor("g5.48xlarge", "inter") is None
    configured = ctx(tmp_path, floors={"intra_node_busbw_gbps": 2.5})
    assert collectives.floor_for(configured, "intra")[0] == 2.5


def test_bandwidth_under_the_floor_fails_naming_size_and_floor(tmp_path):
    rows = [{"bytes": 1024, "busbw": 0.5}, {"bytes": 2**31, "busbw": 300.0}]
    c = ctx(tmp_path, device="cuda", instance_type="p5.48xlarge")
    result = collectives.bandwidth_check(c, "intra", rows, 1.0)
    assert result.status == "FAIL"
    assert "2147483648 B" in result.reason and "460.0 GB/s floor" in result.reason


def test_the_sweep_times_nccl_tests_iterations_after_its_warm_up(tmp_path, monkeypatch):
    # nccl-tests README, "Performance": -w (warm-up iterations, not timed) default 5, -n
    # (iterations) default 20.
    calls = []
    monkeypatch.setattr(collectives.dist, "all_reduce", lambda *a, **k: calls.append("op"))
    monkeypatch.setattr(collectives.dist, "barrier", lambda *a, **k: calls.append("timer"))
    args = runner.parse_args([], {})
    assert args.iters == 20
    collectives.sweep(ctx(tmp_path), [1024], None, 2, args.iters)
    assert calls == ["op"] * 5 + ["timer"] + ["op"] * 20


def test_every_process_writes_its_own_nccl_log(tmp_path, monkeypatch):
    """NCCL opens NCCL_DEBUG_FILE with "w" after expanding %p to the writing process's pid
    (NVIDIA/nccl src/debug.cc): the rank and the training workers it starts, which inherit the
    variable, must expand it to different files, and the transport checks read the rank's own."""
    c = ctx(tmp_path, device="cuda", rank=3)
    env = runner.nccl_environment(c, {})
    assert env["NCCL_DEBUG"] == "INFO"
    inherited = training.worker_env(env)["NCCL_DEBUG_FILE"]

    def written_by(pid: int) -> Path:
        return Path(inherited.replace("%p", str(pid)))

    assert written_by(4242) != written_by(4243)
    read = []
    monkeypatch.setattr(runner.collectives, "run", lambda *args: read.append(args[-1]))
    runner.group_runner("collectives", c, runner.parse_args([], {}))()
    assert read == [written_by(os.getpid())]


def test_node_groups_follow_torchrun_rank_numbering():
    assert collectives.node_groups(4, 2) == [[0, 1], [2, 3]]
    assert collectives.node_groups(2, 2) == [[0, 1]]


# --- inventory ---------------------------------------------------------------------------------


def test_cpulist_and_numa_locality():
    # Kernel cpulist format (Documentation/admin-guide/cputopology.rst): ranges and singles.
    assert inventory.parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    node_cpus = {0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}}
    assert inventory.numa_local_gpus({0: 0, 1: 0, 2: 1, 3: 1}, node_cpus, {4, 5}) == [2, 3]


def test_gpu_numa_from_nvidia_smi_bus_ids_and_sysfs(tmp_path):
    device = tmp_path / "bus" / "pci" / "devices" / "0000:18:00.0"
    device.mkdir(parents=True)
    (device / "numa_node").write_text("1\n")
    # nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader prints an 8-digit domain.
    assert inventory.pci_numa("0, 00000000:18:00.0\n1, 00000000:2A:00.0\n", tmp_path) == {0: 1}


def test_wrong_expected_gpu_count_is_a_fail(tmp_path):
    result = inventory.gpu_count_check(0, ctx(tmp_path, expected_gpus=8))
    assert (result.status, result.reason) == ("FAIL", "8 GPUs requested, 0 visible")
    catalog = ctx(tmp_path, expected_gpus=4, catalog_gpus=8, instance_type="p5.48xlarge")
    assert "the catalog's p5.48xlarge has 8" in inventory.gpu_count_check(4, catalog).reason
    assert inventory.gpu_count_check(0, ctx(tmp_path)).status == "PASS"


def test_fabric_devices_counted_from_sys_class_infiniband(tmp_path):
    ib = tmp_path / "class" / "infiniband"
    for name in ("rdmap79s0", "rdmap80s0"):
        (ib / name).mkdir(parents=True)
    assert inventory.fabric_devices(tmp_path) == ["rdmap79s0", "rdmap80s0"]
    c = ctx(tmp_path, fabric="efa", expected_fabric_devices=4)
    result = inventory.fabric_check(c, tmp_path)
    assert (result.status, result.reason) == ("FAIL", "4 efa devices advertised, 2 present")


# --- compute -----------------------------------------------------------------------------------


def test_peaks_are_the_datasheet_figures_for_the_exact_sku():
    # FACTS.md: dense BF16 A100 312, H100 / H200 989 TFLOP/s; HBM A100-80G 2.0, H100 3.35, H200 4.8
    # (the SXM parts of p4d, p4de, p5, p5e and p5en), by the device name torch reports.
    assert compute.peaks_for("NVIDIA H200") == (989.0, 4.8)
    assert compute.peaks_for("NVIDIA H100 80GB HBM3") == (989.0, 3.35)
    assert compute.peaks_for("NVIDIA A100-SXM4-80GB") == (312.0, 2.0)
    assert compute.peaks_for("NVIDIA A100-SXM4-40GB") == (312.0, None)
    assert compute.peaks_for("NVIDIA A10G") == (None, None)


@pytest.mark.parametrize(
    "name",
    # Other SKUs of the same chips, whose names contain an SXM part's: other clocks, power and
    # memory (H100 PCIe: HBM2e; GH200: the H200's name inside), so no SXM peak applies to them.
    ["NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA GH200 480GB", "NVIDIA GH200 144G HBM3e",
     "NVIDIA H200 NVL", "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-40GB"],
)  # fmt: skip
def test_a_sku_sharing_a_name_part_gets_no_sxm_peak(name):
    assert compute.peaks_for(name) == (None, None)
    result = compute.fraction_check("compute.gemm_bf16", 700.0, "TFLOP/s", None, 0.75, "g", name)
    assert (result.status, result.reason) == (
        "WARN",
        f"no datasheet peak for {name!r} (selftest.compute.PEAKS)",
    )


def test_gemm_and_copy_arithmetic():
    # 2n³ flops: 8192³ × 2 = 1,099,511,627,776 in one second is 1.0995 TFLOP/s.
    assert compute.gemm_tflops(8192, 1.0) == pytest.approx(1.099511627776)
    # A copy moves 2 × 4 GiB = 8,589,934,592 bytes; in 1 ms that is 8.59 TB/s.
    assert compute.copy_tbps(2**32, 0.001) == pytest.approx(8.589934592)


def test_gemm_under_75_percent_of_peak_fails():
    result = compute.fraction_check("compute.gemm_bf16", 700.0, "TFLOP/s", 989.0, 0.75, "g")
    assert result.status == "FAIL" and "71% of the 989.0 TFLOP/s peak" in result.reason
    assert compute.fraction_check("m", 4.0, "TB/s", 4.8, 0.80, "m").status == "PASS"


def test_compute_on_cpu_skips_with_a_measured_reference(tmp_path):
    gemm, membw = compute.run(ctx(tmp_path))
    assert (gemm.status, membw.status) == ("SKIP", "SKIP")
    assert gemm.value > 0 and "no floor" in gemm.reason


# --- metrics -----------------------------------------------------------------------------------

# dcgm-exporter's /metrics as its README shows it (labels gpu, UUID, device, modelName, Hostname).
DCGM_TEXT = """\
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",device="nvidia0",modelName="NVIDIA H200",Hostname="node-a"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-8d4a0f50-2f24-4a13-b1b3-1cbb3b8e2b4f",device="nvidia1",modelName="NVIDIA H200",Hostname="node-a"} 91
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aa",device="nvidia0",modelName="NVIDIA H200",Hostname="node-b"} 5
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-604ac76c",modelName="say \\"hi\\"",Hostname="node-a"} 1024 1700000000000
"""  # noqa: E501


def test_prometheus_text_parser():
    samples = metrics.parse_prometheus_text(DCGM_TEXT)
    assert len(samples) == 4
    assert samples[0][0] == "DCGM_FI_DEV_GPU_UTIL" and samples[0][2] == 87.0
    assert samples[3][1]["modelName"] == 'say "hi"' and samples[3][2] == 1024.0
    assert metrics.exported_gpus(DCGM_TEXT, "node-a") == {"0", "1"}
    with pytest.raises(ValueError, match="not a Prometheus sample"):
        metrics.parse_prometheus_text("garbage{")


class _Serve(LoopbackServer):
    """An HTTP server on 127.0.0.1 answering every GET with one body."""

    def __init__(self, body: str):
        class Handler(QuietHandler):
            def do_GET(self):
                self.server.paths.append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body.encode())

        super().__init__(Handler)
        self.server.paths = []


def test_dcgm_exporter_exports_this_nodes_gpus(tmp_path):
    with _Serve(DCGM_TEXT) as server:
        c = ctx(tmp_path, expected_gpus=2, dcgm_exporter_url=f"{server.url}/metrics")
        assert metrics.dcgm_check(c, "node-a").status == "PASS"
        wrong = metrics.dcgm_check(
            ctx(tmp_path, expected_gpus=8, dcgm_exporter_url=c.dcgm_exporter_url), "node-a"
        )
        expected = "2 GPUs exported for host 'node-a', 8 expected"
        assert (wrong.status, wrong.reason) == ("FAIL", expected)


def test_unreachable_dcgm_exporter_is_a_fail_with_reason(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/metrics"
    result = metrics.dcgm_check(ctx(tmp_path, expected_gpus=1, dcgm_exporter_url=url), "n")
    assert result.status == "FAIL" and result.reason.startswith(
        f"DCGM exporter unreachable at {url}"
    )


def test_a_prometheus_url_alone_asks_no_autoscaler_metric(tmp_path):
    """A canary reads its pool's baseline from Prometheus on a stack whose GPUs no autoscaler
    scales: the URL must not turn on a check of a metric nothing serves for its pod (it would
    FAIL the canary and stop every GPU-stack roll)."""
    c = ctx(tmp_path, prometheus_url="http://127.0.0.1:9")
    result = metrics.autoscaler_check(c, "selftest", "canary-a100-x")
    assert (result.status, result.reason) == ("SKIP", "no GPU autoscaler configured")
    asked = ctx(tmp_path, autoscaler_metric=True)
    assert metrics.autoscaler_check(asked, "ns", "p").status == "FAIL"
    env = {"SELFTEST_AUTOSCALER_METRIC": "true", "SELFTEST_PROMETHEUS_URL": "http://p:9090"}
    assert runner.parse_args([], env).autoscaler_metric is True
    assert (
        runner.parse_args([], {"SELFTEST_PROMETHEUS_URL": "http://p:9090"}).autoscaler_metric
        is False
    )


def test_autoscaler_metric_served_for_the_selftests_pod(tmp_path):
    # Prometheus HTTP API, instant query: {"status":"success","data":{"resultType":"vector",…}}.
    answer = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"exported_pod": "selftest-0"}, "value": [1700000000, "87"]}]}}  # fmt: skip
    with _Serve(json.dumps(answer)) as server:
        c = ctx(tmp_path, prometheus_url=server.url, autoscaler_metric=True)
        assert metrics.autoscaler_check(c, "selftest", "selftest-0").status == "PASS"
        assert server.server.paths[0].startswith("/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL")
    empty = {"status": "success", "data": {"resultType": "vector", "result": []}}
    with _Serve(json.dumps(empty)) as server:
        c = ctx(tmp_path, prometheus_url=server.url, autoscaler_metric=True)
        result = metrics.autoscaler_check(c, "ns", "p")
        assert (result.status, result.reason) == (
            "FAIL",
            "no DCGM_FI_DEV_GPU_UTIL series for pod ns/p",
        )
    assert metrics.autoscaler_query("ns", "p") == \
        'DCGM_FI_DEV_GPU_UTIL{exported_namespace="ns",exported_pod="p"}'  # fmt: skip


# --- runner and report -------------------------------------------------------------------------


def test_merge_keeps_the_worst_rank_and_names_it():
    rank0 = [CheckResult("compute.gemm_bf16", "PASS", 800.0), CheckResult("a", "SKIP")]
    rank1 = [
        CheckResult("compute.gemm_bf16", "FAIL", 500.0, reason="slow"),
        CheckResult("a", "SKIP"),
    ]
    merged = runner.merge([rank0, rank1])
    assert [(r.name, r.status, r.value, r.reason) for r in merged] == [
        ("compute.gemm_bf16", "FAIL", 500.0, "rank 1: slow"), ("a", "SKIP", None, "")]  # fmt: skip


def test_report_document_and_page(tmp_path):
    sweep = [{"bytes": 1024, "busbw": 0.1}, {"bytes": 2**20, "busbw": 1.2}]
    loss = {"loss": [3.0, 2.5, 2.0, 1.9], "interrupted_at": 2}
    results = [
        CheckResult("collectives.allreduce_busbw_intra_node", "PASS", 1.2, "GB/s", 0.05,
                    details={"sweep": sweep, "floor": 0.05}),
        CheckResult("training.loss", "PASS", details=loss),
        CheckResult("storage.small_file_latency", "WARN", details={"latencies_us": [80, 90, 120]}),
    ]  # fmt: skip
    doc = report.report_doc(results, "r1", "img@sha256:ab", 2, 12.34567)
    assert list(doc) == REPORT_KEYS
    assert (doc["status"], doc["nodes"], doc["duration_s"]) == ("WARN", 2, 12.346)
    assert list(doc["checks"][0]) == CHECK_KEYS
    json_path, html_path = report.write(tmp_path, doc, results)
    assert json.loads(json_path.read_text()) == doc
    page = html_path.read_text()
    assert page.count('<img src="data:image/png;base64,') == 3
    assert "training.loss" in report.table(results)


def test_the_headline_counts_what_was_judged_and_what_was_skipped():
    results = [
        CheckResult("distributed.rendezvous", "PASS", 2, threshold=2),
        CheckResult("collectives.allreduce_correct", "PASS", 0, threshold=0),
        CheckResult("storage.nvme-cache.write", "INFO", 812.0, "MB/s"),
        CheckResult("inventory.gpu_model", "SKIP", reason="no GPU visible"),
        CheckResult("compute.memory_bandwidth", "SKIP", reason="no GPU"),
        CheckResult("metrics.dcgm_exporter", "SKIP", reason="no DCGM exporter URL configured"),
    ]
    assert report.headline("PASS", results, "cpu") == (
        "PASS — 2 passed, 1 info, 3 skipped: no GPU on this machine"
    )
    on_gpu = [*results[:3], CheckResult("collectives.allreduce_busbw_inter_node", "SKIP"),
              CheckResult("collectives.gpudirect_rdma", "FAIL", 0)]  # fmt: skip
    assert report.headline("FAIL", on_gpu, "cuda") == (
        "FAIL — 1 failed, 2 passed, 1 info, 1 skipped: collectives.allreduce_busbw_inter_node"
    )


def test_cpu_selftest_writes_the_issues_report(cpu_selftest):
    done, out, _ = cpu_selftest
    doc = json.loads((out / "report.json").read_text())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert list(doc) == REPORT_KEYS and doc["status"] in {"PASS", "WARN"}
    assert all(list(check) == CHECK_KEYS for check in doc["checks"])
    names = [c["name"] for c in doc["checks"]]
    # The issue's order: inventory, compute, collectives, storage, metrics, training.
    firsts = [
        next(i for i, n in enumerate(names) if n.startswith(g))
        for g in ("inventory", "compute", "collectives", "storage", "metrics", "training")
    ]
    assert firsts == sorted(firsts)
    by_name = {c["name"]: c for c in doc["checks"]}
    assert by_name["distributed.rendezvous"]["value"] == 2
    assert by_name["collectives.allreduce_correct"]["status"] == "PASS"
    assert by_name["collectives.allreduce_busbw_intra_node"]["value"] > 0
    assert by_name["collectives.gpudirect_rdma"]["status"] == "SKIP"
    assert "<img" in (out / "report.html").read_text()
    assert "collectives.allreduce_correct" in done.stdout
    # The headline counts what was skipped, so a PASS on a CPU does not read as a full pass.
    counts = {s: sum(c["status"] == s for c in doc["checks"]) for s in ("PASS", "INFO", "SKIP")}
    assert counts["SKIP"] > 0
    assert (
        f"self-test {doc['status']} — {counts['PASS']} passed, {counts['INFO']} info, "
        f"{counts['SKIP']} skipped: no GPU on this machine"
    ) in done.stdout


def test_a_pass_was_held_to_a_threshold_and_a_bare_figure_is_info(cpu_selftest):
    """Every check of the real run: PASS only where a threshold judged it; a figure measured
    with none (storage without a floor, training throughput, peak memory) is INFO."""
    _, out, _ = cpu_selftest
    checks = json.loads((out / "report.json").read_text())["checks"]
    assert [c["name"] for c in checks if c["status"] == "PASS" and c["threshold"] is None] == []
    info = {c["name"] for c in checks if c["status"] == "INFO"}
    assert {"storage.shared-data.write", "storage.nvme-cache.small_file_p99", "storage.pipeline",
            "training.throughput", "training.peak_memory"} <= info  # fmt: skip
    assert all(c["threshold"] is None for c in checks if c["status"] == "INFO")


def test_injected_faults_each_fail_with_reason_and_the_report_stays_whole(tmp_path):
    """A 2-rank world with one process (a rank that never joins), 8 GPUs expected on a CPU, and
    a DCGM exporter on a closed port: three FAILs, every other group still reported."""
    url = f"http://127.0.0.1:{free_port()}/metrics"
    done = run([sys.executable, "-m", "selftest", "--out", str(tmp_path), "--join-timeout", "2",
                "--expected-gpus", "8", "--dcgm-url", url, "--shared-data", str(tmp_path),
                "--nvme-cache", str(tmp_path)],
               RANK="0", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", LOCAL_RANK="0",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    doc = json.loads((tmp_path / "report.json").read_text())
    fails = {c["name"]: c["reason"] for c in doc["checks"] if c["status"] == "FAIL"}
    assert set(fails) == {"distributed.rendezvous", "inventory.gpu_count", "metrics.dcgm_exporter"}
    assert fails["distributed.rendezvous"].startswith("not every rank joined within 2 s")
    assert "1/2 clients joined" in fails["distributed.rendezvous"]
    assert fails["inventory.gpu_count"] == "8 GPUs requested, 0 visible"
    assert fails["metrics.dcgm_exporter"].startswith(f"DCGM exporter unreachable at {url}")
    names = {c["name"] for c in doc["checks"]}
    assert {"compute.gemm_bf16", "metrics.autoscaler_metric", "collectives"} <= names
    assert doc["status"] == "FAIL" and (tmp_path / "report.html").exists()
    # A failing run leaves its support bundle beside the report, and the report names it.
    row = next(c for c in doc["checks"] if c["name"] == "report.support_bundle")
    assert (row["status"], row["value"]) == ("INFO", str(tmp_path / "support-bundle"))
    assert row["reason"].startswith("written because 3 checks failed: distributed.rendezvous")
    (node,) = (tmp_path / "support-bundle").iterdir()
    assert {"MANIFEST.txt", "environment.txt"} <= {p.name for p in node.iterdir()}
    assert f"support bundle: {tmp_path / 'support-bundle'}" in done.stdout


def test_the_run_pushes_every_check_status_and_figure_of_its_node(cpu_selftest):
    """The real run's PUT: one group for its node, the status of each check of the report and
    the figures it measured, with the metric names bootstrap/README.md promises."""
    _, out, received = cpu_selftest
    ((method, path, _, body),) = received
    assert (method, path) == ("PUT", "/metrics/job/gpu-platform-selftest/node/node-a")
    samples = metrics.parse_prometheus_text(body)
    statuses = {(lab["check"], lab["status"]) for name, lab, value in samples
                if name == "gpu_platform_selftest_check_status" and value == 1}  # fmt: skip
    doc = json.loads((out / "report.json").read_text())
    pushed = {c["name"]: c["status"] for c in doc["checks"] if c["name"] != "metrics.pushgateway"}
    assert statuses == set(pushed.items())
    busbw = [v for name, lab, v in samples if name == "gpu_platform_selftest_figure"
             and lab["check"] == "collectives.allreduce_busbw_intra_node"]  # fmt: skip
    assert len(busbw) == 1 and busbw[0] > 0
    assert {c["name"]: c["status"] for c in doc["checks"]}["metrics.pushgateway"] == "PASS"


def test_the_short_check_set_runs_the_nodes_health_without_storage_or_training(tmp_path):
    """SELFTEST_CHECKS=short, the periodic run: the hardware, latency and NVMe checks are in
    the report (SKIPping here with their reasons), shared storage and training are not."""
    done = run([sys.executable, "-m", "selftest", "--out", str(tmp_path),
                "--shared-data", str(tmp_path), "--nvme-cache", str(tmp_path)],
               SELFTEST_CHECKS="short", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads((tmp_path / "report.json").read_text())["checks"]}
    assert not [n for n in checks if n.startswith(("storage", "training"))]
    assert {"hardware.pcie_link", "hardware.xid", "hardware.dcgm_diag", "nvme.randread",
            "collectives.allreduce_latency_intra_node"} <= set(checks)  # fmt: skip
    assert all(checks[n]["reason"] for n in checks if checks[n]["status"] == "SKIP")


def test_a_group_that_raises_is_a_fail_and_the_next_group_still_runs(tmp_path, monkeypatch):
    broken = types.ModuleType("selftest.storage")
    broken.__spec__ = importlib.machinery.ModuleSpec("selftest.storage", None)

    def run(ctx):
        raise FileNotFoundError("/mnt/shared-data is not mounted")

    broken.run = run
    monkeypatch.setitem(sys.modules, "selftest.storage", broken)
    args = runner.parse_args(["--checks", "storage,metrics"], {})
    results = runner.run_groups(ctx(tmp_path), args, grouped=True)
    assert [(r.name, r.status) for r in results] == [
        ("storage", "FAIL"),
        ("metrics.dcgm_exporter", "SKIP"),
        ("metrics.autoscaler_metric", "SKIP"),
    ]
    assert results[0].reason == "FileNotFoundError: /mnt/shared-data is not mounted"
