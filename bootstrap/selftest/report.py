"""The report: JSON exactly as the issue gives it, a table on stdout, and a one-page HTML page
with matplotlib plots (bus bandwidth per size against the floor, the loss curve across the
interruption, the storage latency distribution).

Plots read `CheckResult.details`: `sweep` (rows with bytes and busbw) and `floor` from the
collectives; `loss` (one value per step) with `interrupted_at` (the step of the SIGTERM) from
training; `latencies_us` (a list of samples) from storage."""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display in a container
import matplotlib.pyplot as plt

from selftest.result import CheckResult, worst

COLUMNS = ["name", "status", "value", "unit", "threshold", "reason"]


def report_doc(results, run_id: str, image: str, nodes: int, duration_s: float) -> dict:
    """The JSON report: {"status","run_id","image","nodes","checks":[…],"duration_s"}."""
    return {
        "status": worst(r.status for r in results),
        "run_id": run_id,
        "image": image,
        "nodes": nodes,
        "checks": [r.as_json() for r in results],
        "duration_s": round(duration_s, 3),
    }


# Headline order: what needs attention first, what was not judged last.
COUNTED = {"FAIL": "failed", "WARN": "warned", "PASS": "passed", "INFO": "info", "SKIP": "skipped"}


def headline(status: str, results: list[CheckResult], device: str) -> str:
    """'PASS — 16 passed, 4 info, 11 skipped: no GPU on this machine'. The counts say how much a
    PASS judged; the skipped checks' cause is the missing GPU on a CPU run, their names else."""
    counts = Counter(r.status for r in results)
    line = ", ".join(f"{counts[s]} {word}" for s, word in COUNTED.items() if counts[s])
    skipped = [r.name for r in results if r.status == "SKIP"]
    if skipped and device != "cuda":
        line += ": no GPU on this machine"
    elif skipped:
        line += ": " + ", ".join(skipped[:3]) + (", …" if len(skipped) > 3 else "")
    return f"{status} — {line}"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def table(results: list[CheckResult]) -> str:
    """A fixed-width table, one row per check; long reasons wrap past the last column."""
    rows = [COLUMNS] + [[_cell(getattr(r, c)) for c in COLUMNS] for r in results]
    widths = [min(max(len(row[i]) for row in rows), 48) for i in range(len(COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [row[i][:48].ljust(widths[i]) for i in range(len(widths))]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def plot_busbw(result: CheckResult) -> str:
    rows, floor = result.details["sweep"], result.details.get("floor")
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.plot([r["bytes"] for r in rows], [r["busbw"] for r in rows], "o-", label="busbw")
    if floor is not None:
        ax.axhline(floor, color="red", linestyle="--", label=f"floor {floor} GB/s")
    ax.set(xscale="log", xlabel="message size (bytes per rank)", ylabel="busbw (GB/s)",
           title=result.name)  # fmt: skip
    ax.legend()
    return _png(fig)


def plot_loss(result: CheckResult) -> str:
    loss = result.details["loss"]
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    reference = result.details.get("reference")
    if reference is not None:
        ax.plot(range(len(reference)), reference, "--", color="grey", label="uninterrupted")
    ax.plot(range(len(loss)), loss, ".-", label="loss")
    if result.details.get("interrupted_at") is not None:
        ax.axvline(result.details["interrupted_at"], color="red", linestyle=":",
                   label="SIGTERM, then resume")  # fmt: skip
    ax.set(xlabel="step", ylabel="loss", title=result.name)
    ax.legend()
    return _png(fig)


def plot_latency(result: CheckResult) -> str:
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.hist(result.details["latencies_us"], bins=40)
    ax.set(xlabel="latency (µs)", ylabel="operations", title=result.name)
    return _png(fig)


PLOTS = {"sweep": plot_busbw, "loss": plot_loss, "latencies_us": plot_latency}


def figures(results: list[CheckResult]) -> list[str]:
    """One base64 PNG per check that carries a series to plot."""
    return [
        plot(r) for r in results for key, plot in PLOTS.items() if r.details.get(key) is not None
    ]


def html_page(doc: dict, results: list[CheckResult]) -> str:
    colours = {"PASS": "#2e7d32", "WARN": "#ef6c00", "FAIL": "#c62828", "SKIP": "#757575",
               "INFO": "#1565c0"}  # fmt: skip
    head = "".join(f"<th>{c}</th>" for c in [*COLUMNS, "source", "duration_s"])
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="color:{colours[c["status"]]}"><b>{c["status"]}</b></td>'
            if key == "status"
            else f"<td>{html.escape(_cell(c[key]))}</td>"
            for key in [*COLUMNS, "source", "duration_s"]
        )
        + "</tr>"
        for c in doc["checks"]
    )
    images = "".join(f'<img src="data:image/png;base64,{png}">' for png in figures(results))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>GPU platform self-test</title>"
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;"
        "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
        "img{margin:4px}</style></head><body>"
        f"<h1 style='color:{colours[doc['status']]}'>Self-test {doc['status']}</h1>"
        f"<p>run {html.escape(doc['run_id'])} · image {html.escape(doc['image'])} · "
        f"{doc['nodes']} node(s) · {doc['duration_s']} s</p>"
        f"<div>{images}</div><table><tr>{head}</tr>{body}</table></body></html>"
    )


def write(out_dir: Path, doc: dict, results: list[CheckResult]) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out_dir / "report.json", out_dir / "report.html"
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    html_path.write_text(html_page(doc, results))
    return json_path, html_path
