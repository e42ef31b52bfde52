"""The one-page summary: the machine, every step's status and wall time, and every figure with its
reference and ratio, or why it is missing. Figures come from the self-test's report.json and
recipes.bench's JSON as they were written; nothing is recomputed but the ratios."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from gpu_check.steps import Outcome

# The review's estimate of an SD 1.5 training step, 4 x 512² per GPU (recipes/overlap.py); the
# ratio is to its high end.
SD_STEP_ESTIMATE_S = (0.045, 0.085)


@dataclass
class Figure:
    name: str
    value: str = ""
    reference: str = ""
    ratio: str = ""
    note: str = ""


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def check_figure(label: str, check: dict | None, why_absent: str, peak: float | None = None,
                 floor_is_reference: bool = False) -> Figure:  # fmt: skip
    """A self-test check as a figure: its value and status, against the datasheet peak (a
    ratio) or its floor; a check that measured nothing is skipped with the check's reason."""
    if check is None:
        return Figure(label, note=f"skipped: {why_absent}")
    value = check.get("value")
    status, reason = check["status"], check.get("reason") or ""
    if not isinstance(value, int | float) or check.get("unit", "").endswith("(CPU fp32)"):
        shown = f"{value} {check.get('unit', '')}".strip() if value is not None else ""
        return Figure(label, shown, note=f"skipped: {status}: {reason}".rstrip(": "))
    unit = check.get("unit", "")
    figure = Figure(label, f"{_fmt(value)} {unit}", note=f"{status} {reason}".strip())
    if peak is not None:
        figure.reference, figure.ratio = f"{peak:g} {unit} datasheet peak", _fmt(value / peak)
    elif floor_is_reference and isinstance(check.get("threshold"), int | float):
        floor = check["threshold"]
        figure.reference = f"{floor:g} {unit} floor ({check.get('source', '')})"
        figure.ratio = _fmt(value / floor) if floor else ""
    elif check.get("threshold") not in (None, ""):
        figure.reference = f"{check['threshold']} ({check.get('source', '')})"
    return figure


def peak_from_threshold(check: dict | None) -> float | None:
    """The datasheet peak a fraction check was judged against (selftest.compute.PEAKS, from
    FACTS.md "Self-test numbers"), from the report's threshold: '>= 75% of 989.0'."""
    threshold = str((check or {}).get("threshold") or "")
    _, sep, peak = threshold.partition(" of ")
    try:
        return float(peak) if sep else None
    except ValueError:
        return None


def selftest_figures(report: dict | None, why: str) -> list[Figure]:
    """`why`: the step's status when it did not pass ("" when it did)."""
    checks = {c["name"]: c for c in (report or {}).get("checks", [])}
    absent = why or "not in the self-test's report (--checks)"
    if report is None:
        absent = why or "no report written"

    def get(name: str) -> dict | None:
        return checks.get(name)

    gemm, hbm = get("compute.gemm_bf16"), get("compute.memory_bandwidth")
    figures = [
        check_figure("GEMM bf16 (compute.gemm_bf16)", gemm, absent, peak_from_threshold(gemm)),
        check_figure("HBM copy (compute.memory_bandwidth)", hbm, absent, peak_from_threshold(hbm)),
        check_figure(
            "all-reduce busbw in the node (collectives.allreduce_busbw_intra_node)",
            get("collectives.allreduce_busbw_intra_node"),
            absent,
            floor_is_reference=True,
        ),
        check_figure(
            "all-reduce 8 B latency in the node (collectives.allreduce_latency_intra_node)",
            get("collectives.allreduce_latency_intra_node"),
            absent,
        ),
        check_figure(
            "training: SIGTERM to checkpoint (training.sigterm_checkpoint)",
            get("training.sigterm_checkpoint"),
            absent,
        ),
        check_figure("training: resume bitwise (training.resume)", get("training.resume"), absent),
        check_figure(
            "training: samples/s (training.throughput)", get("training.throughput"), absent
        ),
    ]
    if report is None:
        figures.append(Figure("self-test wall time (report duration_s)", note=f"skipped: {absent}"))
    else:
        status = f"self-test {report['status']}"
        figures.append(Figure("self-test wall time (report duration_s)",
                              f"{report['duration_s']:g} s", note=status))  # fmt: skip
    return figures


def recipe_figures(bench: dict | None, why: str, gpu_memory_gib: float | None) -> list[Figure]:
    """Step time and peak memory of each recipe, and the overlap benchmark's ratios. A part
    missing from a run that passed was left out by --only; else the step's status says why
    (recipes.bench writes its JSON after each part)."""
    figures = []
    absent = why or ("not run (recipes.bench --only)" if bench else "no figures written")
    for recipe in ("sd-finetune", "esrgan"):
        f = (bench or {}).get(recipe)
        label = f"{recipe} step"
        if f is None:
            figures += [Figure(label, note=f"skipped: {absent}"),
                        Figure(f"{recipe} peak memory", note=f"skipped: {absent}")]  # fmt: skip
            continue
        shape = f"{f['image_size']}² x {f['batch_per_gpu']}, {f['dtype']}"
        step = Figure(label, f"{_fmt(f['step_s'])} s", note=shape)
        if recipe == "sd-finetune" and (f["image_size"], f["batch_per_gpu"]) == (512, 4):
            low, high = SD_STEP_ESTIMATE_S
            step.reference = f"{high:g} s, high end of the review's {low:g}-{high:g} s estimate"
            step.ratio = _fmt(f["step_s"] / high)
        memory = Figure(f"{recipe} peak memory", f"{_fmt(f['peak_memory_gib'])} GiB", note=shape)
        if gpu_memory_gib:
            memory.reference = f"{gpu_memory_gib:g} GiB on the GPU"
            memory.ratio = _fmt(f["peak_memory_gib"] / gpu_memory_gib)
        figures += [step, memory]
    o = (bench or {}).get("overlap")
    for kind in ("loader", "serial"):
        figure = Figure(f"overlap: {kind} step / max(GPU step, data)")
        if o is None:
            figure.note = f"skipped: {absent}"
        else:
            figure.value = figure.ratio = _fmt(o[f"{kind}_ratio"])
            figure.reference = "1 (data hidden)"
            figure.note = (f"{_fmt(o[f'{kind}_step_ms'])} ms; X {_fmt(o['step_ms'])} ms "
                           f"({o.get('gpu_step', 'stand-in sleep')}), Y {_fmt(o['data_ms'])} ms, "
                           f"{o['workers']} workers")  # fmt: skip
        figures.append(figure)
    return figures


def markdown(facts: dict, outcomes: list[Outcome], figures: list[Figure], versions: list[str],
             files: list[str], budget_s: float, used_s: float) -> str:  # fmt: skip
    device = "unknown: torch does not import"
    if facts.get("gpus"):
        device = f"{facts['device']} x {facts['gpus']} ({facts.get('gpu_memory_gib')} GiB each)"
    elif "torch" in facts:
        device = "CPU (no GPU visible): the CPU fallbacks"
    lines = [
        "# gpu-check summary",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- device: {device}",
        f"- torch {facts.get('torch', 'not importable')}, CUDA {facts.get('cuda') or 'none'}, "
        f"Python {facts.get('python', '?')} ({facts.get('executable', '?')})",
        f"- budget {budget_s:g} s, used {used_s:.0f} s",
        "",
        "## Steps",
        "",
        "| step | status | wall s | limit s | note |",
        "|---|---|---|---|---|",
        *(
            f"| {o.name} | {o.status} | {o.wall_s:.1f} | {o.limit_s:.0f} | {o.note} |"
            for o in outcomes
        ),
        "",
        "## Figures",
        "",
        "| figure | value | reference | ratio | note |",
        "|---|---|---|---|---|",
        *(
            f"| {f.name} | {f.value} | {f.reference} | {f.ratio} | {_cell(f.note)} |"
            for f in figures
        ),
        "",
        "## Packages",
        "",
        *(f"- {line}" for line in versions),
        "",
        "## Files",
        "",
        *(f"- {name}" for name in files),
    ]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")[:200]
