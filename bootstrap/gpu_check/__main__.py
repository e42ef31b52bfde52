"""`python -m gpu_check` (PYTHONPATH=bootstrap:., `make gpu-check`): with this Python, within a
time budget (8 minutes by default), in order:

1. environment: what the image side imports, Python, torch, CUDA and the GPUs; a torch older
   than the image side was checked against (wheels.MIN_TORCH) stops the run here;
2. wheels: whatever of it is missing, installed from `--wheels` (offline, into `<work>/site`);
3. selftest: `torchrun -m selftest --bench`, one rank per visible GPU (two gloo ranks on a CPU,
   as `make selftest`), every check group, the training check's SIGTERM and resume included;
4. bench-recipes: `python -m recipes.bench`: sd-finetune (SD 1.5 at 512², the recipe's 4 per
   GPU) and esrgan steps, then the overlap benchmark on sd-finetune's real step; on a CPU the
   small sizes of the recipes' README.

Each step is time-boxed and a failed one does not stop the next. Under `--out` come back at
most 8 files, none in a folder: summary.md (one page), gpu-check.log (every step's output, the
self-test's NCCL and training-worker logs appended), selftest-report.json and .html,
bench-recipes.json, and selftest-support-bundle.tar.gz when a check failed. Scratch (the
self-test's volumes, the installed wheels) goes to `--work`, beside it. Exit 0 when every step
passed, 1 when one did not, 2 when the interpreter was refused."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tarfile
from pathlib import Path

from gpu_check import steps, summary, wheels
from gpu_check.steps import Budget, Outcome

# The files that come back (the lent machine returns at most 8, at most two folders deep).
SUMMARY, LOG = "summary.md", "gpu-check.log"
REPORT_JSON, REPORT_HTML = "selftest-report.json", "selftest-report.html"
BENCH_JSON, BUNDLE = "bench-recipes.json", "selftest-support-bundle.tar.gz"
# `make bench-selftest`'s sweep on a CPU; a GPU sweeps the self-test's own sizes, to 2 GiB.
CPU_SIZES = "1024,16384,262144,4194304,16777216,67108864"
# The recipes' README's CPU sizes: the path and the shapes, not SD's 512² (13.8 GB of state).
CPU_BENCH_ARGS = ["--sd-resolution", "64", "--sd-batch", "1", "--esrgan-batch", "2"]
# On a GPU the overlap benchmark runs SD 1.5's real step three times per timed step (alone,
# serial, fed by the loader): 20 of each keeps it well inside bench-recipes' share.
GPU_BENCH_ARGS = ["--overlap-steps", "20"]
# Seconds held back for the steps after one: bench-recipes' SD 1.5 step, and the summary.
BENCH_RESERVE_S, SUMMARY_RESERVE_S = 150.0, 5.0
PROBE_TIMEOUT_S, INSTALL_TIMEOUT_S = 180.0, 120.0
LOG_TAIL_LINES = 200


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m gpu_check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("out/gpu-check"))
    p.add_argument("--work", type=Path, help="scratch (default: <out>.work)")
    p.add_argument("--wheels", type=Path, help="folder of wheels for what is missing")
    p.add_argument("--budget-s", type=float, default=480.0, help="the whole run's seconds")
    p.add_argument("--ranks", type=int, help="self-test ranks (default: GPUs, or 2 on a CPU)")
    p.add_argument("--selftest-args", default="", help="more flags for python -m selftest")
    p.add_argument("--bench-args", default="", help="more flags for python -m recipes.bench")
    p.add_argument("--require", action="append", default=[], metavar="MODULE=DIST",
                   help="one more module the run needs, and its distribution")  # fmt: skip
    return p.parse_args(argv)


def step_env(site: Path) -> dict[str, str]:
    """The steps' environment: the installed wheels first, then the image side's packages."""
    root = wheels.ROOT
    path = [str(site), str(root / "bootstrap"), str(root)]
    if os.environ.get("PYTHONPATH"):
        path.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONUNBUFFERED": "1",
            "HF_HUB_OFFLINE": "1"}  # fmt: skip


def missing(found: dict) -> dict[str, str]:
    return {module: got["error"] for module, got in found["modules"].items() if "error" in got}


def environment(python: str, env: dict, modules: dict[str, str]) -> tuple[Outcome, dict | None]:
    try:
        found = wheels.probe(python, env, modules, [], PROBE_TIMEOUT_S)
    except Exception as error:  # the interpreter itself is unusable: nothing else can run
        return Outcome("environment", "failed", note=str(error)[:300]), None
    facts = found["facts"]
    if "torch" not in facts:
        note = f"torch does not import: {found['modules']['torch']['error']}"
        return Outcome("environment", "refused", note=note), found
    if wheels.torch_too_old(facts["torch"]):
        minimum = ".".join(map(str, wheels.MIN_TORCH))
        note = (f"torch {facts['torch']} is older than {minimum}, the oldest the image side "
                "was checked against (docs/selftest.md)")  # fmt: skip
        return Outcome("environment", "refused", note=note), found
    return Outcome("environment", "ok", note=f"torch {facts['torch']}"), found


def install_missing(python: str, env: dict, modules: dict[str, str], found: dict,
                    folder: Path | None, site: Path):  # fmt: skip
    """Outcome of installing what does not import, and the probe after it."""
    absent = missing(found)
    if not absent:
        return Outcome("wheels", "ok", note="nothing missing"), found
    names = ", ".join(absent)
    if folder is None or not folder.is_dir():
        where = "no --wheels / WHEELS given" if folder is None else f"{folder} is not a folder"
        note = f"missing {names}; {where}: bring them with make gpu-wheels"
        return Outcome("wheels", "failed", note=note), found
    # Whether each distribution that could be wanted is installed: the missing modules', each
    # wheel's and each wheel's requirements.
    wanted = [modules[module] for module in absent]
    dists = {wheels.normalise(name) for name in wanted}
    for wheel in folder.glob("*.whl"):
        dists |= {wheels.wheel_distribution(wheel), *wheels.requirements(wheel)}
    installed = wheels.probe(python, env, {}, sorted(dists), PROBE_TIMEOUT_S)["installed"]
    chosen, lacking = wheels.missing_wheels(folder, wanted, installed)
    if not chosen:
        note = f"missing {names}; {folder} holds no wheel of {', '.join(lacking)}"
        return Outcome("wheels", "failed", note=note), found
    done = wheels.install(python, chosen, site, INSTALL_TIMEOUT_S)
    if done.returncode != 0:
        note = f"pip install --no-index from {folder} failed: {done.stderr.strip()[-300:]}"
        return Outcome("wheels", "failed", note=note), found
    after = wheels.probe(python, env, modules, [], PROBE_TIMEOUT_S)
    still = missing(after)
    installed_names = ", ".join(w.name for w in chosen)
    if lacking:
        installed_names += f" (no wheel of {', '.join(lacking)})"
    if still:
        note = f"installed {installed_names}; still missing: " + "; ".join(
            f"{m} ({e})" for m, e in still.items())  # fmt: skip
        return Outcome("wheels", "failed", note=note), after
    return Outcome("wheels", "ok", note=f"installed {installed_names}"), after


def selftest_command(python: str, facts: dict, ranks: int | None, work: Path, extra: str):
    gpus = facts.get("gpus", 0)
    for volume in ("shared-data", "nvme-cache"):  # local folders stand in, as in make selftest
        (work / volume).mkdir(parents=True, exist_ok=True)
    command = [python, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={ranks or gpus or 2}", "-m", "selftest",
               "--out", str(work / "selftest"), "--shared-data", str(work / "shared-data"),
               "--nvme-cache", str(work / "nvme-cache"), "--bench"]  # fmt: skip
    command += ["--expected-gpus", str(gpus)] if gpus else ["--sizes", CPU_SIZES]
    return command + shlex.split(extra)


def collect_selftest(work: Path, out: Path, log) -> None:
    """The report, the support bundle as one archive, every log appended to the combined one."""
    folder = work / "selftest"
    for name, target in (("report.json", REPORT_JSON), ("report.html", REPORT_HTML)):
        if (folder / name).is_file():
            shutil.copyfile(folder / name, out / target)
    if (folder / "support-bundle").is_dir():
        with tarfile.open(out / BUNDLE, "w:gz") as archive:
            archive.add(folder / "support-bundle", arcname="support-bundle")
    for path in sorted(folder.rglob("*.log")) if folder.is_dir() else []:
        lines = path.read_text(errors="replace").splitlines()
        log.write(f"\n===== {path.relative_to(work)} (last {LOG_TAIL_LINES} of {len(lines)})\n")
        log.write("\n".join(lines[-LOG_TAIL_LINES:]) + "\n")
    log.flush()


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def versions(found: dict | None, modules: dict[str, str], site: Path) -> list[str]:
    if found is None:
        return ["the interpreter could not be probed"]
    pinned = wheels.pins()
    lines = []
    for module, got in found["modules"].items():
        dist = wheels.normalise(modules[module])
        if "error" in got:
            lines.append(f"{module}: missing ({got['error']})")
            continue
        pin = pinned.get(dist)
        if pin is None:
            against = ""
        elif got["version"].split("+")[0] == pin:
            against = f" (pinned {pin})"
        else:
            against = f" (pinned {pin}: differs)"
        origin = " from the wheels" if got.get("path", "").startswith(str(site)) else ""
        lines.append(f"{module} {got['version']}{against}{origin}")
    return lines


def why_absent(outcomes: list[Outcome], name: str) -> str:
    """Why a step's figures may be missing: its status, or the step that stopped the run; ""
    for a step that passed."""
    for outcome in outcomes:
        if outcome.name == name:
            return "" if outcome.ok else f"{name} {outcome.status}, see {LOG}"
    return f"{name} not run: {outcomes[-1].name} {outcomes[-1].status}"


def run_steps(args, python: str, modules: dict, out: Path, work: Path, budget: Budget):
    """Every step in order, each recorded; the probe's result and the outcomes."""
    env, outcomes = step_env(work / "site"), []

    def record(outcome: Outcome, started: float, limit_s: float) -> None:
        outcome.wall_s, outcome.limit_s = budget.used() - started, limit_s
        outcomes.append(outcome)
        line = f"{outcome.name} {outcome.status}: {outcome.note}"
        with (out / LOG).open("a") as log:
            log.write(f"===== {line}\n{json.dumps(found, indent=1)}\n")
        print(f"gpu-check: {line}", flush=True)

    started = budget.used()
    outcome, found = environment(python, env, modules)
    record(outcome, started, PROBE_TIMEOUT_S)
    if not outcome.ok:
        return found, outcomes
    started = budget.used()
    try:
        outcome, found = install_missing(python, env, modules, found, args.wheels, work / "site")
    except Exception as error:  # a probe or pip past its timeout: the steps still run
        outcome = Outcome("wheels", "failed", note=f"{type(error).__name__}: {error}"[:300])
    record(outcome, started, INSTALL_TIMEOUT_S)
    facts = found["facts"]
    sizes = GPU_BENCH_ARGS if facts.get("gpus") else CPU_BENCH_ARGS
    bench = [python, "-m", "recipes.bench", "--out", str(out / BENCH_JSON), *sizes,
             *shlex.split(args.bench_args)]  # fmt: skip
    with (out / LOG).open("a") as log:
        for name, command, reserve in (
            ("selftest", selftest_command(python, facts, args.ranks, work, args.selftest_args),
             BENCH_RESERVE_S + SUMMARY_RESERVE_S),
            ("bench-recipes", bench, SUMMARY_RESERVE_S),
        ):  # fmt: skip
            outcome = steps.run(name, command, env, log, budget.limit(reserve), wheels.ROOT)
            outcomes.append(outcome)
            print(f"gpu-check: {name} {outcome.status} ({outcome.wall_s:.0f} s)", flush=True)
            if name == "selftest":
                collect_selftest(work, out, log)
    return found, outcomes


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out, python = args.out.resolve(), sys.executable
    work = (args.work or out.with_name(out.name + ".work")).resolve()
    for folder in (out, work):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    (out / LOG).touch()
    required = (item.partition("=") for item in args.require)
    modules = {**wheels.MODULES, **{m: dist or m for m, _, dist in required}}
    budget = Budget(args.budget_s)
    found, outcomes = run_steps(args, python, modules, out, work, budget)
    facts = (found or {}).get("facts", {})
    figures = [
        *summary.selftest_figures(load(out / REPORT_JSON), why_absent(outcomes, "selftest")),
        *summary.recipe_figures(
            load(out / BENCH_JSON),
            why_absent(outcomes, "bench-recipes"),
            facts.get("gpu_memory_gib"),
        ),
    ]
    files = sorted({*(p.name for p in out.iterdir()), SUMMARY})
    page = summary.markdown(facts, outcomes, figures, versions(found, modules, work / "site"),
                            files, args.budget_s, budget.used())  # fmt: skip
    (out / SUMMARY).write_text(page)
    print(page)
    if outcomes[0].status == "refused":
        return 2
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
