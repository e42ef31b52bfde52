"""`make gpu-check` (bootstrap/gpu_check) end to end on this CPU: the CPU fallbacks at small
sizes, what comes back (the lent machine returns at most 8 files, at most two folders deep:
/work/.library/device/README.md "Limits"), a module missing from the interpreter installed from
a folder of wheels with nothing fetched, and every figure reported or marked skipped with why.

One run of the whole check, shared by the tests that read it (about 20 s on an idle core)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from gpu_check import steps, summary, wheels

from recipes import overlap
from tests.helpers.hang import HANG_S

ROOT = Path(__file__).resolve().parents[3]
FAKE = "gpu_check_fake"
# The lent machine's limits on what comes back (device README, "Limits").
MAX_FILES, MAX_DEPTH = 8, 2
# Every figure issue 24 asks the summary for, by the label it carries.
FIGURES = [
    "GEMM bf16 (compute.gemm_bf16)",
    "HBM copy (compute.memory_bandwidth)",
    "all-reduce busbw in the node (collectives.allreduce_busbw_intra_node)",
    "all-reduce 8 B latency in the node (collectives.allreduce_latency_intra_node)",
    "training: SIGTERM to checkpoint (training.sigterm_checkpoint)",
    "training: resume bitwise (training.resume)",
    "training: samples/s (training.throughput)",
    "self-test wall time (report duration_s)",
    "sd-finetune step",
    "sd-finetune peak memory",
    "esrgan step",
    "esrgan peak memory",
    "overlap: loader step / max(GPU step, data)",
    "overlap: serial step / max(GPU step, data)",
]


def build_wheel(folder: Path, dist: str, version: str, module: str, requires=()) -> Path:
    """A pure-Python wheel as PEP 427 lays it out: the module, METADATA (with a Requires-Dist
    line per requirement), WHEEL, and a RECORD of every other file's sha256 (urlsafe base64,
    unpadded) and size."""
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    needs = "".join(f"Requires-Dist: {name}\n" for name in requires)
    files = {
        f"{module}/__init__.py": f'__version__ = "{version}"\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n{needs}",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def gpu_check(out: Path, *args: str, timeout: float = HANG_S, first: Path | None = None):
    """`python -m gpu_check` as `make gpu-check` runs it; `first`: a folder ahead of the
    interpreter's own packages."""
    path = [str(ROOT / "bootstrap"), str(ROOT), *([str(first)] if first else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, "-m", "gpu_check", "--out", str(out), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def table(page: str, heading: str) -> dict[str, list[str]]:
    """The rows of the markdown table under `## heading`, by their first cell."""
    section = page.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    cells = [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]
    return {row[0]: row[1:] for row in cells}


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """The whole check on this CPU: two gloo ranks, the self-test's quick groups, the overlap
    benchmark's stand-in; a fake module missing from this Python, its wheel in the folder with
    a wheel of numpy, which this Python has and so must not be installed over."""
    base = tmp_path_factory.mktemp("gpu-check")
    folder = base / "wheels"
    folder.mkdir()
    build_wheel(folder, "gpu-check-fake", "1.0", FAKE)
    build_wheel(folder, "numpy", "0.0.1", "numpy")
    out = base / "out"
    done = gpu_check(
        out, "--wheels", str(folder), "--require", f"{FAKE}=gpu-check-fake",
        "--selftest-args", "--checks inventory,compute,collectives --sizes 1024 --iters 2 "
        "--floor intra_node_busbw_gbps=0",
        "--bench-args", "--only overlap --overlap-steps 2 --overlap-workers 1",
    )  # fmt: skip
    return done, out, base / "out.work"


def test_the_cpu_run_passes_every_step(cpu_run):
    done, out, _ = cpu_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = table((out / "summary.md").read_text(), "Steps")
    assert list(rows) == ["environment", "wheels", "selftest", "bench-recipes"]
    assert {name: row[0] for name, row in rows.items()} == dict.fromkeys(rows, "ok")
    page = (out / "summary.md").read_text()
    assert "- device: CPU (no GPU visible): the CPU fallbacks" in page
    assert f"- torch {torch.__version__}, CUDA none" in page


def test_what_comes_back_fits_the_device_machines_limits(cpu_run):
    _, out, _ = cpu_run
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= MAX_FILES
    assert all(len(p.relative_to(out).parts) <= MAX_DEPTH + 1 for p in out.rglob("*"))
    assert {p.name for p in files} == {
        "summary.md", "gpu-check.log", "selftest-report.json", "selftest-report.html",
        "bench-recipes.json",
    }  # fmt: skip
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", p.name) for p in files)
    listed = (out / "summary.md").read_text().split("## Files\n", 1)[1].split()
    assert sorted(name for name in listed if name != "-") == sorted(p.name for p in files)


def test_every_figure_is_reported_or_skipped_with_a_reason(cpu_run):
    _, out, _ = cpu_run
    figures = table((out / "summary.md").read_text(), "Figures")
    assert list(figures) == FIGURES
    for name, (value, _reference, _ratio, note) in figures.items():
        assert value or re.fullmatch(r"skipped: .{8,}", note), (name, value, note)
    # No GPU: the GPU figures say so rather than pass off the CPU's.
    assert figures["GEMM bf16 (compute.gemm_bf16)"][3].startswith("skipped: SKIP: no GPU")
    assert figures["training: resume bitwise (training.resume)"][3] == (
        "skipped: not in the self-test's report (--checks)"
    )
    assert figures["sd-finetune step"][3] == "skipped: not run (recipes.bench --only)"
    loader = figures["overlap: loader step / max(GPU step, data)"]
    assert float(loader[0]) > 0 and loader[1] == "1 (data hidden)"
    assert "(stand-in sleep)" in loader[3]


def test_only_the_missing_distribution_is_installed_from_the_wheels(cpu_run):
    _, out, work = cpu_run
    page = (out / "summary.md").read_text()
    assert "| wheels | ok |" in page
    assert "installed gpu_check_fake-1.0-py3-none-any.whl |" in page
    assert f"- {FAKE} 1.0 from the wheels" in page
    # numpy is this Python's own (requirements-selftest.txt pins 2.4.6), not the wheel's 0.0.1.
    assert "- numpy 2.4.6 (pinned 2.4.6)\n" in page
    assert (work / "site" / FAKE / "__init__.py").is_file()
    assert not (work / "site" / "numpy").exists()


def test_the_combined_log_holds_every_step(cpu_run):
    _, out, _ = cpu_run
    log = (out / "gpu-check.log").read_text()
    for step in ("environment ok", "wheels ok", "selftest: ok", "bench-recipes: ok"):
        assert f"===== {step}" in log
    report = json.loads((out / "selftest-report.json").read_text())
    assert report["nodes"] == 1 and report["status"] == "PASS"


def test_a_missing_module_without_its_wheel_is_a_clear_failure_and_the_run_goes_on(tmp_path):
    """An empty wheel folder: the wheels step fails naming the module and the fix; the steps
    after it still run (here the 1 s budget is spent, so they are skipped, saying why)."""
    empty = tmp_path / "wheels"
    empty.mkdir()
    done = gpu_check(tmp_path / "out", "--wheels", str(empty), "--require",
                     "absent_module_for_gpu_check", "--budget-s", "1")  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    rows = table((tmp_path / "out" / "summary.md").read_text(), "Steps")
    status, note = rows["wheels"][0], rows["wheels"][3]
    assert status == "failed"
    assert note.startswith("missing absent_module_for_gpu_check; ")
    assert note.endswith(f"{empty} holds no wheel of absent-module-for-gpu-check")
    assert rows["selftest"][0] == rows["bench-recipes"][0] == "skipped"
    assert rows["selftest"][3] == "no time left in the budget"
    figures = table((tmp_path / "out" / "summary.md").read_text(), "Figures")
    assert figures["sd-finetune step"][3] == "skipped: bench-recipes skipped, see gpu-check.log"


def test_a_torch_older_than_the_image_side_was_checked_against_is_refused(tmp_path):
    """A Python whose torch reports 2.10 (a stand-in module ahead of the real one): exit 2, the
    version and the minimum named, no step run, only the summary and the log written."""
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        '__version__ = "2.10.0+cu128"\n'
        "class version:\n    cuda = '12.8'\n"
        "class cuda:\n    is_available = staticmethod(lambda: False)\n"
    )
    done = gpu_check(tmp_path / "out", first=tmp_path / "site")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    rows = table((tmp_path / "out" / "summary.md").read_text(), "Steps")
    assert list(rows) == ["environment"]
    assert rows["environment"][0] == "refused"
    assert rows["environment"][3] == (
        "torch 2.10.0+cu128 is older than 2.11, the oldest the image side was checked against "
        "(docs/selftest.md)"
    )
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"summary.md", "gpu-check.log"}


@pytest.mark.parametrize(
    ("version", "refused"),
    [("2.10.1+cu128", True), ("1.13.1", True), ("2.11.0+cu130", False), ("2.13.0+cpu", False)],
)
def test_torch_older_than_2_11_is_refused(version, refused):
    """2.11: the lent H200's torch (2.11.0+cu130), the oldest the image side was compared
    against (docs/selftest.md)."""
    assert wheels.torch_too_old(version) is refused


def test_a_wheels_distribution_is_read_from_its_file_name():
    """PEP 427 names, PEP 503 normalised, as pip saved them for the lent machine."""
    assert wheels.wheel_distribution(Path("huggingface_hub-2.4.0-py3-none-any.whl")) == (
        "huggingface-hub"
    )
    name = "charset_normalizer-3.5.3-cp312-cp312-manylinux1_x86_64.manylinux_2_28_x86_64.whl"
    assert wheels.wheel_distribution(Path(name)) == "charset-normalizer"


def test_the_gpu_figures_are_read_against_the_h200_datasheet():
    """A GPU report's rows as the self-test writes them on an H200: the ratio is to NVIDIA's
    H200 datasheet peaks, 989 TFLOP/s dense BF16 and 4.8 TB/s HBM3e."""
    gemm = {"name": "compute.gemm_bf16", "status": "PASS", "value": 780.5, "unit": "TFLOP/s",
            "threshold": ">= 75% of 989.0", "source": "FACTS.md", "reason": ""}  # fmt: skip
    figure = summary.check_figure("GEMM", gemm, "", summary.peak_from_threshold(gemm))
    assert (figure.value, figure.reference, figure.ratio) == (
        "780.5 TFLOP/s",
        "989 TFLOP/s datasheet peak",
        "0.7892",
    )
    hbm = {**gemm, "value": 4.31, "unit": "TB/s", "threshold": ">= 80% of 4.8"}
    figure = summary.check_figure("HBM", hbm, "", summary.peak_from_threshold(hbm))
    assert (figure.reference, figure.ratio) == ("4.8 TB/s datasheet peak", "0.8979")


def test_a_step_past_its_limit_is_stopped_and_recorded(tmp_path):
    with (tmp_path / "log").open("w") as log:
        outcome = steps.run("sleeper", ["sleep", "30"], dict(os.environ), log, 1.0, tmp_path)
    assert outcome.status == "timed out after 1 s"
    assert outcome.wall_s < steps.GRACE_S


def test_the_overlap_benchmark_runs_a_real_step_on_each_batch(tmp_path):
    """With a step (sd-finetune's on a GPU), every batch it is timed on reaches that step, of
    sd-finetune's shapes: 4 crops of 512² on the device."""
    seen = []
    figures = overlap.measure(None, 1, 2, tmp_path, seen.append, torch.device("cpu"))
    assert figures["gpu_step"] == "real (cpu)"
    assert {tuple(batch.images.shape) for batch in seen} == {(4, 3, 512, 512)}
    assert {batch.images.device.type for batch in seen} == {"cpu"}
    # warm-up 1, X 2, serial 2, the loader's prefetch is not stepped, loader 2
    assert len(seen) == 7


def test_a_bench_stopped_at_its_limit_keeps_the_parts_it_wrote():
    """recipes.bench writes its JSON after each part: sd-finetune's figures survive a timeout in
    the overlap benchmark, and the parts after it say the step timed out, not --only. SD 1.5 at
    4 x 512² is read against the review's 45-85 ms estimate (recipes/overlap.py) and the GPU's
    memory (an H200: 139.8 GiB as torch reports it on the lent machine)."""
    sd = {"image_size": 512, "batch_per_gpu": 4, "dtype": "bfloat16", "step_s": 0.17,
          "peak_memory_gib": 41.95}  # fmt: skip
    why = "bench-recipes timed out after 200 s, see gpu-check.log"
    figures = {f.name: f for f in summary.recipe_figures({"sd-finetune": sd}, why, 139.8)}
    step = figures["sd-finetune step"]
    assert (step.value, step.reference, step.ratio) == (
        "0.17 s",
        "0.085 s, high end of the review's 0.045-0.085 s estimate",
        "2",
    )
    memory = figures["sd-finetune peak memory"]
    assert (memory.value, memory.reference, memory.ratio) == (
        "41.95 GiB",
        "139.8 GiB on the GPU",
        "0.3001",
    )
    assert figures["esrgan step"].note == f"skipped: {why}"
    assert figures["overlap: loader step / max(GPU step, data)"].note == f"skipped: {why}"


def test_a_missing_distribution_brings_the_wheels_of_what_it_needs_and_lacks(tmp_path):
    """As diffusers on the lent H200: its wheel, and through Requires-Dist (extras left out)
    the wheels of what the interpreter lacks (importlib-metadata there), never one of what it
    has (numpy), nor a wheel nothing asks for; a lacking requirement with no wheel is named."""
    build_wheel(tmp_path, "fake-diffusers", "1.0", "fake_diffusers",
                ["numpy", "fake-metadata>=1", "fake-docs; extra == 'docs'"])  # fmt: skip
    build_wheel(tmp_path, "fake-metadata", "1.0", "fake_metadata", ["fake-zipp", "fake-absent"])
    build_wheel(tmp_path, "numpy", "0.0.1", "numpy")
    build_wheel(tmp_path, "fake-docs", "1.0", "fake_docs")
    build_wheel(tmp_path, "fake-unrelated", "1.0", "fake_unrelated")
    installed = {"numpy": "2.4.6", "fake-zipp": "3.0", "fake-diffusers": None}
    chosen, lacking = wheels.missing_wheels(tmp_path, ["fake_diffusers"], installed)
    assert [w.name for w in chosen] == [
        "fake_diffusers-1.0-py3-none-any.whl",
        "fake_metadata-1.0-py3-none-any.whl",
    ]
    assert lacking == ["fake-absent"]
