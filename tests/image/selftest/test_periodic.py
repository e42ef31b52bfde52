"""The self-test's periodic side: the NVMe cache through fio, small-message all-reduce latency,
the short check set, the support bundle a failing run leaves, and the metrics each run pushes
to a Pushgateway (a local HTTP server on 127.0.0.1 here, the format checked by promtool)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from selftest import bundle, collectives, metrics, nvme, push, runner
from selftest.context import SelfTestContext
from selftest.result import CheckResult, Floor

from tests.helpers.pushgateway import Gateway
from tests.helpers.tools import promtool


def ctx(tmp_path: Path, **overrides) -> SelfTestContext:
    values = dict(
        run_id="t",
        rank=0,
        world_size=1,
        local_rank=0,
        device="cpu",
        out_dir=tmp_path,
        shared_data=tmp_path,
        nvme_cache=tmp_path,
    )
    values.update(overrides)
    return SelfTestContext(**values)


# --- fio ------------------------------------------------------------------------------------


def fio_json(rw: str, iops: float, bw_bytes: int) -> str:
    """One group-reported fio run as `--output-format=json` writes it (fio HOWTO, "Interpreting
    the output"; the fields stas00/ml-engineering storage/fio-json-extract.py reads): `jobs[0]`
    with the job's name, its error, and `read` / `write` sides with `iops` and `bw_bytes`
    (bytes/s), `bw` in KiB/s. A warning line may come before the document."""
    side = {
        "io_bytes": bw_bytes * 5,
        "io_kbytes": bw_bytes * 5 // 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": iops,
        "runtime": 5000,
        "total_ios": int(iops * 5),
    }
    idle = {key: 0 for key in side}
    job = {
        "jobname": rw,
        "groupid": 0,
        "error": 0,
        "eta": 0,
        "elapsed": 6,
        "read": side if "read" in rw else idle,
        "write": side if rw == "write" else idle,
    }
    doc = {
        "fio version": "fio-3.36",
        "timestamp": 1764590000,
        "time": "Mon Dec  1 12:00:00 2026",
        "global options": {},
        "jobs": [job],
    }
    return (
        "fio: this platform does not support process shared mutexes, forcing use of threads\n"
        + json.dumps(doc, indent=2)
    )


def test_fio_json_gives_iops_and_mb_per_second():
    assert nvme.parse_fio(fio_json("randread", 812_345.6, 3_327_367_168), "read") == (
        812_345.6,
        3327.367168,
    )
    failed = json.loads(fio_json("write", 0, 0)[fio_json("write", 0, 0).index("{") :])
    failed["jobs"][0]["error"] = 5
    with pytest.raises(ValueError, match="fio job write failed with error 5"):
        nvme.parse_fio(json.dumps(failed), "write")


def test_nvme_floors_default_to_the_source_documents_seed_figures(tmp_path):
    # Issue 20 / the source documents: NVMe RAID0 >= 200K 4 KiB random-read IOPS and >= 3 GB/s.
    gpu = ctx(tmp_path, device="cuda")
    assert (
        nvme.judge(gpu, "randread", "randread_iops", 199_999, "IOPS", "fio-3.36").status == "FAIL"
    )
    passed = nvme.judge(gpu, "randread", "randread_iops", 200_000, "IOPS", "fio-3.36")
    assert (passed.status, passed.threshold) == ("PASS", 200_000)
    slow = nvme.judge(gpu, "seq_read", "seq_read_mb_s", 2_900.0, "MB/s", "fio-3.36")
    assert (slow.status, slow.threshold) == ("FAIL", 3000)
    assert slow.reason == f"2,900 MB/s on {tmp_path}, under the 3,000 floor"
    assert slow.source.endswith("; fio-3.36")
    # A per-type floor from the stack wins (a p5's eight NVMe drives do far better).
    typed = ctx(
        tmp_path,
        device="cuda",
        floors={"nvme-cache.seq_write_mb_s": 12_000.0},
        floor_sources={"nvme-cache.seq_write_mb_s": "catalog: p5.48xlarge"},
    )
    write = nvme.judge(typed, "seq_write", "seq_write_mb_s", 8_000.0, "MB/s", "fio-3.36")
    assert (write.status, write.threshold, write.source) == (
        "FAIL",
        12_000.0,
        "catalog: p5.48xlarge; fio-3.36",
    )


def _fake_fio(bin_dir: Path, answers: dict[str, str]) -> None:
    """An `fio` on PATH that prints fio's version or the canned JSON for the --rw it is given,
    and records its command line."""
    bin_dir.mkdir()
    for rw, text in answers.items():
        (bin_dir / f"{rw}.json").write_text(text)
    script = bin_dir / "fio"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {bin_dir}/calls\n'
        'if [ "$1" = "--version" ]; then echo fio-3.36; exit 0; fi\n'
        'for arg in "$@"; do case "$arg" in --rw=*) rw="${arg#--rw=}";; esac; done\n'
        f'cat {bin_dir}/"$rw".json\n'
    )
    script.chmod(0o755)


def test_the_nvme_checks_run_fio_on_the_cache(tmp_path, monkeypatch):
    _fake_fio(
        tmp_path / "bin",
        {
            "write": fio_json("write", 3100, 3_300_000_000),
            "read": fio_json("read", 3200, 3_400_000_000),
            "randread": fio_json("randread", 150_000.0, 614_400_000),
        },
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    cache = tmp_path / "nvme-cache"
    cache.mkdir()
    results = nvme.run(ctx(tmp_path, device="cuda", nvme_cache=cache, check_set="short"))
    assert [(r.name, r.status, r.value, r.unit) for r in results] == [
        ("nvme.seq_write", "PASS", 3300.0, "MB/s"),
        ("nvme.seq_read", "PASS", 3400.0, "MB/s"),
        ("nvme.randread", "FAIL", 150000.0, "IOPS"),
    ]
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    target = cache / "selftest" / "t" / "fio-rank0.bin"
    assert calls[1].split() == [
        "--output-format=json",
        "--name=write",
        f"--filename={target}",
        "--rw=write",
        "--bs=1M",
        "--iodepth=32",
        "--numjobs=4",
        "--size=1G",
        "--offset_increment=1G",
        "--runtime=5",
        "--time_based",
        "--direct=1",
        "--ioengine=libaio",
        "--group_reporting",
    ]
    assert "--bs=4k" in calls[3] and "--iodepth=64" in calls[3]
    # On a CPU the same figures are measured, for reference only.
    cpu = nvme.run(ctx(tmp_path, nvme_cache=cache))
    assert {r.status for r in cpu} == {"SKIP"} and cpu[2].value == 150000.0


def test_without_fio_the_nvme_checks_skip_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    results = nvme.run(ctx(tmp_path, device="cuda"))
    assert [r.status for r in results] == ["SKIP"] * 3
    assert results[0].reason == (
        "fio not found on PATH: install Debian's fio (the bootstrap image has it)"
    )
    assert nvme.run(ctx(tmp_path, device="cuda", local_rank=1)) == []


# --- latency --------------------------------------------------------------------------------

ROWS = [{"bytes": 8, "seconds": 21e-6}, {"bytes": 65536, "seconds": 40e-6}]


def test_small_message_latency_against_the_50_us_seed_per_fabric(tmp_path):
    # The source documents: network latency <= 50 us, judged on the 8-byte all-reduce.
    efa = ctx(tmp_path, device="cuda", fabric="efa")
    ok = collectives.latency_check(efa, "inter", [dict(r) for r in ROWS], 1.0)
    assert (ok.status, ok.value, ok.unit, ok.threshold) == ("PASS", 21.0, "us", 50.0)
    slow = [{"bytes": 8, "seconds": 80e-6}, {"bytes": 65536, "seconds": 90e-6}]
    failed = collectives.latency_check(efa, "inter", slow, 1.0)
    assert failed.reason == "80.0 us for a 8 B all-reduce, over the 50 us floor"
    for fabric in ("infiniband", "roce"):
        c = ctx(tmp_path, device="cuda", fabric=fabric)
        assert collectives.latency_floor(c, "inter")[0] == 50.0
    tcp = collectives.latency_check(
        ctx(tmp_path, device="cuda"), "inter", [dict(r) for r in ROWS], 1
    )
    assert (tcp.status, tcp.threshold) == ("INFO", None)
    assert collectives.latency_floor(ctx(tmp_path, device="cuda"), "intra")[0] == 50.0
    configured = ctx(tmp_path, device="cuda", floors={"inter_node_allreduce_latency_us": 25.0})
    assert (
        collectives.latency_check(configured, "inter", [dict(r) for r in ROWS], 1).threshold == 25
    )
    cpu = collectives.latency_check(ctx(tmp_path), "intra", [dict(r) for r in ROWS], 1.0)
    assert (cpu.status, cpu.value) == ("SKIP", 21.0)


# --- check sets -----------------------------------------------------------------------------


def test_the_short_set_leaves_out_shared_storage_and_training():
    assert runner.selected_groups("short") == [
        "inventory",
        "hardware",
        "compute",
        "agreement",
        "collectives",
        "latency",
        "nvme",
        "metrics",
    ]
    assert runner.selected_groups("full") == runner.GROUPS
    assert runner.selected_groups("metrics,inventory") == ["inventory", "metrics"]
    with pytest.raises(SystemExit, match=r"'shrot': unknown \['shrot'\]; valid: short, full"):
        runner.selected_groups("shrot")
    args = runner.parse_args(
        [], {"SELFTEST_CHECKS": "short", "SELFTEST_PUSHGATEWAY_URL": "http://pg:9091"}
    )
    assert (args.checks, args.pushgateway_url) == ("short", "http://pg:9091")
    assert runner.build_context(args, {}).check_set == "short"


# --- support bundle -------------------------------------------------------------------------


def test_the_bundle_keeps_nccls_environment_and_leaves_secrets_out(tmp_path):
    (tmp_path / "nccl.rank0.4242.log").write_text("NCCL INFO Using network IB\n")
    (tmp_path / "nccl.rank1.4243.log").write_text("NCCL INFO Using network IB\n")
    (tmp_path / "nccl.rank2.5000.log").write_text("another node's rank\n")
    env = {
        "NCCL_DEBUG": "INFO",
        "FI_PROVIDER": "efa",
        "NCCL_IB_HCA": "mlx5_0",
        "AWS_SECRET_ACCESS_KEY": "abc",
        "HF_TOKEN": "hf_x",
        "NCCL_IB_PASSWORD_FILE": "/x",
        "SELFTEST_PUSHGATEWAY_URL": "http://admin:hunter2@pg:9091",
        "HOME": "/tmp",
    }
    folder = bundle.write(tmp_path, "node-a", range(0, 2), env)
    assert folder == tmp_path / "support-bundle" / "node-a"
    assert (folder / "environment.txt").read_text() == (
        "FI_PROVIDER=efa\nNCCL_DEBUG=INFO\nNCCL_IB_HCA=mlx5_0\n"
        "SELFTEST_PUSHGATEWAY_URL=http://***@pg:9091\n"
    )
    assert sorted(p.name for p in (folder / "nccl").iterdir()) == [
        "nccl.rank0.4242.log",
        "nccl.rank1.4243.log",
    ]
    manifest = (folder / "MANIFEST.txt").read_text()
    # No NVIDIA tools on this machine: each missing file says why.
    assert "nvidia-smi-q.txt: missing: nvidia-smi not found on PATH" in manifest
    assert "nvidia-bug-report.log.gz: missing: nvidia-bug-report.sh not found on PATH" in manifest
    assert "nccl/: 2 NCCL_DEBUG=INFO logs of ranks [0, 1]" in manifest


def test_only_the_kernel_logs_nvidia_lines_go_in():
    xid_79 = "[2.0] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
    assert bundle.nvidia_lines("[1.0] usb 1-1: new device\n" + xid_79) == xid_79


# --- Pushgateway ----------------------------------------------------------------------------


def _node_results(gpu: int, gemm: float) -> list[CheckResult]:
    gemm_row = CheckResult(
        "compute.gemm_bf16",
        "PASS",
        gemm,
        "TFLOP/s",
        ">= 75% of 989.0",
        details={"fraction": gemm / 989.0, "gpu": gpu},
    )
    rows = [
        gemm_row,
        CheckResult(
            "collectives.allreduce_busbw_intra_node",
            "PASS",
            455.5,
            "GB/s",
            431.0,
            floor=Floor(431.0, "GB/s"),
        ),
    ]
    if gpu == 0:
        rows.append(
            CheckResult(
                "hardware.pcie_link",
                "FAIL",
                1,
                "GPUs at full link",
                2,
                reason="downtrained",
                details={"figures": [{"gpu": 1, "value": 4, "unit": "PCIe generation"}]},
            )
        )
    return rows


PER_RANK = [
    ("node-a", 0, _node_results(0, 801.2)),
    ("node-a", 1, _node_results(1, 640.0)),
    ("node-b", 0, _node_results(0, 790.0)),
]


def test_each_node_is_pushed_as_its_own_group_in_the_text_format():
    with Gateway() as gateway:
        result = push.push(gateway.url, PER_RANK, 1764590400.0)
    assert (result.name, result.status) == ("metrics.pushgateway", "PASS")
    # Pushgateway README, "URL" and "PUT method": /metrics/job/<JOB>{/<LABEL>/<VALUE>}, PUT
    # replaces the whole group; the text format 0.0.4.
    assert [(m, p) for m, p, _, _ in gateway.received] == [
        ("PUT", "/metrics/job/gpu-platform-selftest/node/node-a"),
        ("PUT", "/metrics/job/gpu-platform-selftest/node/node-b"),
    ]
    assert gateway.received[0][2] == "text/plain; version=0.0.4; charset=utf-8"
    body = gateway.received[0][3]
    series = {
        (n, tuple(sorted(labels.items()))): v
        for n, labels, v in metrics.parse_prometheus_text(body)
    }

    def value(name, **labels):
        return series[(name, tuple(sorted(labels.items())))]

    assert (
        value(
            "gpu_platform_selftest_check_status",
            check="hardware.pcie_link",
            node="node-a",
            status="FAIL",
        )
        == 1
    )
    assert (
        value(
            "gpu_platform_selftest_check_status",
            check="hardware.pcie_link",
            node="node-a",
            status="PASS",
        )
        == 0
    )
    # The node's status is its worst GPU's: GPU 1's GEMM would not change a PASS here.
    assert (
        value(
            "gpu_platform_selftest_figure",
            check="compute.gemm_bf16",
            node="node-a",
            gpu="1",
            unit="TFLOP/s",
        )
        == 640.0
    )
    assert value(
        "gpu_platform_selftest_figure",
        check="compute.gemm_bf16",
        node="node-a",
        gpu="0",
        unit="fraction of peak",
    ) == pytest.approx(801.2 / 989.0, rel=1e-5)
    assert (
        value(
            "gpu_platform_selftest_figure",
            check="collectives.allreduce_busbw_intra_node",
            node="node-a",
            gpu="",
            unit="GB/s",
        )
        == 455.5
    )
    assert (
        value(
            "gpu_platform_selftest_figure",
            check="hardware.pcie_link",
            node="node-a",
            gpu="1",
            unit="PCIe generation",
        )
        == 4
    )
    # The floor under the figure's own labels, so the alert's `figure < on(...) figure_floor`
    # joins them.
    assert (
        value(
            "gpu_platform_selftest_figure_floor",
            check="collectives.allreduce_busbw_intra_node",
            node="node-a",
            gpu="",
            unit="GB/s",
        )
        == 431.0
    )
    assert value("gpu_platform_selftest_last_run_timestamp_seconds", node="node-a") == 1764590400.0
    # The node figure once, though both of node-a's ranks measured it.
    node_figure = '_figure{check="collectives.allreduce_busbw_intra_node",node="node-a",gpu=""'
    assert body.count(node_figure) == 1
    assert "node-b" not in body
    # promtool's own linter reads what the Pushgateway would store.
    checked = subprocess.run(
        [promtool(), "check", "metrics"], input=body, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_pushgateway_that_refuses_or_is_absent_warns_and_none_configured_skips():
    with Gateway(400, "pushed metrics are invalid or inconsistent with existing metrics") as gw:
        refused = push.push(gw.url, PER_RANK[:1], 1.0)
    assert refused.status == "WARN"
    assert refused.reason == (
        f"{gw.url}/metrics/job/gpu-platform-selftest/node/node-a: HTTP 400: pushed metrics are "
        "invalid or inconsistent with existing metrics"
    )
    gone = push.push(gw.url, PER_RANK[:1], 1.0)
    assert gone.status == "WARN" and "Connection refused" in gone.reason
    assert push.push(None, PER_RANK, 1.0).status == "SKIP"


def test_label_values_are_escaped_and_node_names_quoted_in_the_path():
    text = push.exposition('we"ird\\node', [(0, [CheckResult("a", "PASS", 1, "x", 1)])], 2.0)
    assert 'node="we\\"ird\\\\node"' in text
    assert push.group_url("http://pg:9091/", "a/b") == (
        "http://pg:9091/metrics/job/gpu-platform-selftest/node/a%2Fb"
    )
