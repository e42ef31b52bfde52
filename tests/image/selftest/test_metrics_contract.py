"""The metrics contract between the image and the program: what bootstrap/selftest pushes is what
the program's alerts and dashboard read. A real run pushes to the Pushgateway stand-in, and the
program's own self-test alert rules (its reviewed golden file, which
tests/components/observability/test_alerts.py holds equal to what components/observability/alerts.py
renders) run on the pushed series under promtool: a rename on either side fails here.

The image side's tests import nothing of the program (tests/repo/test_import_boundary.py), so the
rules come in as the YAML file the program's test keeps, not as an import."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml
from selftest import collectives, compute, inventory, metrics, nvme, push, storage
from selftest.context import SelfTestContext

from tests.helpers.pushgateway import Gateway
from tests.helpers.selftest_process import TORCHRUN, run
from tests.helpers.tools import promtool

# The onprem stack runs the self-test on a schedule: its rules hold both self-test alerts.
RULES = Path(__file__).parents[2] / "golden" / "alerts" / "onprem.yaml"
SELFTEST_GROUP = "gpu-platform.selftest"
JOB = "gpu-platform-selftest"
FLOOR, FIGURE = "gpu_platform_selftest_figure_floor", "gpu_platform_selftest_figure"


def gpu_ctx(tmp_path: Path, **overrides) -> SelfTestContext:
    values = dict(run_id="t", rank=0, world_size=16, local_rank=0, device="cuda",
                  out_dir=tmp_path, shared_data=tmp_path, nvme_cache=tmp_path, fabric="efa",
                  instance_type="p5.48xlarge", expected_gpus=8,
                  floors={"shared-data.read_mb_s": 4688.0,
                          "nvme-cache.small_file_p99_us": 200.0})  # fmt: skip
    values.update(overrides)
    return SelfTestContext(**values)


def every_judged_figure(tmp_path: Path):
    """One result of each check that holds a figure to a threshold, built by the image's own
    check functions as a GPU node's run builds them."""
    c = gpu_ctx(tmp_path)
    rows = [{"bytes": 2**31, "seconds": 0.01, "algbw": 200.0, "busbw": 400.0}]
    latency = [{"bytes": 8, "seconds": 21e-6}]
    results = [
        inventory.gpu_count_check(8, c),
        compute.fraction_check("compute.gemm_bf16", 700.0, "TFLOP/s", 989.0, 0.75,
                               "gemm_fraction", "NVIDIA H100 80GB HBM3"),
        compute.fraction_check("compute.memory_bandwidth", 2.5, "TB/s", 3.35, 0.8,
                               "memory_bandwidth_fraction", "NVIDIA H100 80GB HBM3"),
        collectives.bandwidth_check(c, "intra", rows, 1.0),
        collectives.bandwidth_check(c, "inter", rows, 1.0),
        collectives.latency_check(c, "intra", latency, 1.0),
        nvme.judge(c, "randread", "randread_iops", 150_000.0, "IOPS", "fio-3.36"),
        nvme.judge(c, "seq_read", "seq_read_mb_s", 3_500.0, "MB/s", "fio-3.36"),
        storage._against_floor(c, "storage.shared-data.read", "shared-data.read_mb_s", 5000.0,
                               "MB/s"),
        storage._against_floor(c, "storage.nvme-cache.small_file_p99",
                               "nvme-cache.small_file_p99_us", 150.0, "us", at_most=True),
    ]  # fmt: skip
    for result in results[1:3]:  # per-GPU figures, as compute.run marks them
        result.details["gpu"] = 3
    return results


def series(body: str, name: str) -> set[tuple[tuple[str, str], ...]]:
    return {
        tuple(sorted(labels.items()))
        for metric, labels, _ in metrics.parse_prometheus_text(body)
        if metric == name
    }


def test_a_floor_is_pushed_only_for_a_minimum_and_with_its_figures_labels(tmp_path):
    body = push.exposition("node-a", [(0, every_judged_figure(tmp_path))], 1.0)
    floors, figures = series(body, FLOOR), series(body, FIGURE)
    assert floors and floors <= figures
    # The minimums: busbw (FACTS.md floors), a share of the datasheet peak (never the TFLOP/s or
    # TB/s figure itself), fio's IOPS and MB/s, a volume's throughput. A latency's threshold is
    # a ceiling and a GPU count an expected number: neither is a floor.
    assert {(dict(s)["check"], dict(s)["gpu"], dict(s)["unit"]) for s in floors} == {
        ("compute.gemm_bf16", "3", "fraction of peak"),
        ("compute.memory_bandwidth", "3", "fraction of peak"),
        ("collectives.allreduce_busbw_intra_node", "", "GB/s"),
        ("collectives.allreduce_busbw_inter_node", "", "GB/s"),
        ("nvme.randread", "", "IOPS"),
        ("nvme.seq_read", "", "MB/s"),
        ("storage.shared-data.read", "", "MB/s"),
    }
    values = {dict(s)["check"]: v for m, s, v in metrics.parse_prometheus_text(body) if m == FLOOR}
    # FACTS.md: 2 x p5 all-reduce 444 GB/s, one p5 460; the seed 200K IOPS; the 75 % GEMM floor.
    assert values["collectives.allreduce_busbw_inter_node"] == 444.0
    assert values["collectives.allreduce_busbw_intra_node"] == 460.0
    assert values["nvme.randread"] == 200_000.0
    assert values["compute.gemm_bf16"] == 0.75
    # The ambiguous threshold metric (a floor, a ceiling or a count) is gone.
    assert "gpu_platform_selftest_threshold" not in body


def selftest_rules() -> dict:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {"groups": [g for g in groups if g["name"] == SELFTEST_GROUP]}


def input_series(bodies: list[str]) -> list[dict]:
    """What Prometheus holds after scraping the Pushgateway with honorLabels: the pushed
    samples with the group's `job`; an empty label is no label at all."""
    found = []
    for body in bodies:
        for name, labels, value in metrics.parse_prometheus_text(body):
            kept = {"job": JOB, **{k: v for k, v in labels.items() if v}}
            text = ", ".join(f'{k}="{v}"' for k, v in sorted(kept.items()))
            found.append({"series": f"{name}{{{text}}}", "values": f"{value!r}x3"})
    return found


def test_the_programs_alerts_fire_on_what_a_real_run_pushes(tmp_path):
    """A real 2-rank run whose intra-node busbw floor is out of reach (1,000,000 GB/s) and whose
    shared-data read and pipeline floors are trivially met: the program's SelfTestBelowFloor
    fires for the busbw figure alone, SelfTestFailed for its check alone."""
    if not TORCHRUN.exists():
        raise AssertionError(f"{TORCHRUN} missing: install torch from requirements-selftest.txt")
    for volume in ("shared-data", "nvme-cache"):
        (tmp_path / volume).mkdir()
    floors = {"intra_node_busbw_gbps": 1e6, "shared-data.read_mb_s": 0.001,
              "pipeline.samples_per_s": 0.001, "nvme-cache.small_file_p99_us": 1e9}  # fmt: skip
    with Gateway() as gateway:
        done = run([str(TORCHRUN), "--standalone", "--nproc_per_node=2", "-m", "selftest",
                    "--out", str(tmp_path / "out"), "--checks", "collectives,storage",
                    "--shared-data", str(tmp_path / "shared-data"),
                    "--nvme-cache", str(tmp_path / "nvme-cache"), "--sizes", "1024,65536"],
                   SELFTEST_PUSHGATEWAY_URL=gateway.url, NODE_NAME="node-a",
                   SELFTEST_FLOORS=json.dumps(floors))  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    bodies = [body for _, _, _, body in gateway.received]
    pushed = {dict(s)["check"] for body in bodies for s in series(body, FLOOR)}
    assert pushed == {"collectives.allreduce_busbw_intra_node", "storage.shared-data.read",
                      "storage.pipeline"}  # fmt: skip
    busbw_check = "collectives.allreduce_busbw_intra_node"
    busbw = next(v for body in bodies for m, lab, v in metrics.parse_prometheus_text(body)
                 if m == FIGURE and lab["check"] == busbw_check)  # fmt: skip
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [*input_series(bodies),
                                 {"series": 'kube_node_labels{node="node-a"}', "values": "1x3"}],
                "alert_rule_test": [
                    {"eval_time": "1m", "alertname": "SelfTestBelowFloor", "exp_alerts": [{
                        "exp_labels": {"severity": "warning", "job": JOB, "node": "node-a",
                                       "Hostname": "node-a", "check": busbw_check,
                                       "unit": "GB/s"},
                        "exp_annotations": {
                            "summary": "A self-test figure fell below its floor",
                            "description": f"node-a: {busbw_check} measured {busbw:g} GB/s "
                                           "in its last self-test run, below its floor.",
                            "runbook_url": "docs/monitoring.md#selftestbelowfloor",
                        },
                    }]},
                    {"eval_time": "1m", "alertname": "SelfTestFailed", "exp_alerts": [{
                        "exp_labels": {"severity": "critical", "node": "node-a",
                                       "Hostname": "node-a", "check": busbw_check},
                        "exp_annotations": {
                            "summary": "A node failed a check in its last self-test run",
                            "description": f"node-a: check {busbw_check} FAILed in the node's "
                                           "last self-test run; its report names the cause.",
                            "runbook_url": "docs/monitoring.md#selftestfailed",
                        },
                    }]},
                ],
            }
        ],
    }  # fmt: skip
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(selftest_rules()))
    (tmp_path / "contract_test.yaml").write_text(yaml.safe_dump(tests))
    checked = subprocess.run([promtool(), "test", "rules", "contract_test.yaml"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
