"""trainkit as a team installs it (docs/trainkit.md), every command and script of the page run:
the wheel `make trainkit-wheel` builds, installed by the page's Dockerfile into an image that
brings its own torch (a fresh venv that sees this interpreter's torch and numpy, as a team's
image has them, and nothing of the checkout), and the page's two scripts run in that image by
its torchrun command on two gloo ranks: the plain DDP script, and the same script with trainkit,
stopped by SIGTERM as the kubelet stops a pod, resumed, its checkpoints, goodput ledger and
goodput push written."""

from __future__ import annotations

import ast
import glob
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers.hang import HANG_S
from tests.helpers.image_layout import ROOT, ContainerRoot, container_env, instructions, rewrite
from tests.helpers.loopback import free_port
from tests.helpers.program_cli import POD_FIELDS, configmaps, submit, trainer_pod
from tests.helpers.pushgateway import Gateway
from tests.helpers.trainkit_page import commands, dockerfile, scripts

# docs/trainkit.md: torch is the image's, a peer the wheel does not require.
PEERS = {"torch"}
# The interrupted run's steps: more than it takes before SIGTERM stops it; the resumed run then
# finishes MORE steps after the step it stopped at.
MANY, MORE = 1_000_000, 5


@dataclass(frozen=True)
class Image:
    root: ContainerRoot
    python: Path  # the image's interpreter: its venv, torch and numpy from the base
    site: Path  # where pip installs
    workdir: str


def page_command(word: str) -> list[str]:
    """The page's one command that holds `word`, split as the shell splits it."""
    (command,) = [words for words in map(shlex.split, commands()) if word in words]
    return command


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The page's `make trainkit-wheel`, its TRAINKIT_DIST in a folder of the test's own."""
    dist = tmp_path_factory.mktemp("dist")
    words = page_command("trainkit-wheel")
    assert words == ["make", "trainkit-wheel"]
    built = subprocess.run(
        words, cwd=ROOT, env={**os.environ, "TRAINKIT_DIST": str(dist)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (found,) = dist.glob("*.whl")
    return found


def base_image(folder: Path) -> tuple[Path, Path]:
    """A fresh venv that sees this interpreter's site-packages after its own (a .pth file): the
    base image's torch and numpy, not the checkout. (python, its site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    python = folder / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    (site / "base-image.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site


def image_env(python: Path, **extra: str) -> dict[str, str]:
    """The image's environment: its interpreter first on PATH, nothing of the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
    return {**env, "PATH": f"{python.parent}{os.pathsep}{env['PATH']}", **extra}


@pytest.fixture(scope="module")
def image(tmp_path_factory, wheel) -> Image:
    """The page's Dockerfile, laid out: FROM is the base venv, COPY copies from a build context
    holding dist/<the wheel> and train.py (the page's trainkit script), RUN runs its one command
    with the image's pip and the paths mapped into the image's root."""
    base = tmp_path_factory.mktemp("image")
    context = base / "context"
    (context / "dist").mkdir(parents=True)
    shutil.copy(wheel, context / "dist")
    (context / "train.py").write_text(scripts()[1])
    python, site = base_image(base / "venv")
    root, workdir = ContainerRoot(base / "root"), "/"
    for keyword, arguments in instructions(dockerfile()):
        words = shlex.split(arguments)
        if keyword == "COPY":
            *sources, destination = words
            target = root.path(destination)
            (target if destination.endswith("/") else target.parent).mkdir(
                parents=True, exist_ok=True
            )
            for source in sources:
                (match,) = glob.glob(str(context / source))
                shutil.copy(match, target)
        elif keyword == "RUN":
            assert not set(words) & {"&&", "||", ";", "|"}, f"RUN {arguments}: one command"
            assert words[0] == "pip", f"RUN {arguments}"
            mapped = [python, "-m", "pip"]
            for word in words[1:]:
                mapped += sorted(glob.glob(root.value(word))) if "*" in word else [root.value(word)]
            installed = subprocess.run(
                mapped, env=image_env(python), cwd=base, capture_output=True, text=True, timeout=600
            )
            assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
        elif keyword == "WORKDIR":
            workdir = str(PurePosixPath(workdir) / arguments)
        else:
            assert keyword == "FROM", f"{keyword} {arguments}: not laid out by this test"
    return Image(root, python, site, workdir)


def distribution(image: Image) -> importlib.metadata.Distribution:
    (info,) = image.site.glob("gpu_platform_trainkit-*.dist-info")
    return importlib.metadata.Distribution.at(info)


def test_the_wheel_is_versioned_with_the_platform(image):
    platform = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert distribution(image).version == platform


def test_the_image_imports_trainkit_and_contract_from_the_wheel(image, tmp_path):
    shown = subprocess.run(
        [image.python, "-c", "import trainkit, contract.env; print(trainkit.__file__); "
         "print(contract.env.__file__)"],
        env=image_env(image.python), cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert [Path(p).parent for p in shown] == [image.site / "trainkit", image.site / "contract"]


def test_every_import_of_the_installed_wheel_is_its_own_the_standard_librarys_or_declared(image):
    """The class of a wheel that fails in a team's image: a module it imports that is neither
    in the wheel, nor in the standard library, nor a requirement (nor torch, the image's). And
    no requirement it never imports."""
    dist = distribution(image)
    files = [image.site / f for f in dist.files if f.suffix == ".py"]
    own = {f.relative_to(image.site).parts[0] for f in files}
    assert own == {"trainkit", "contract"}
    declared = {canonicalize_name(Requirement(r).name) for r in dist.requires or []}
    providers = importlib.metadata.packages_distributions()
    imported: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names} - own - set(sys.stdlib_module_names):
                dists = {canonicalize_name(d) for d in providers.get(top, [top])}
                imported.setdefault(str(path.relative_to(image.site)), set()).update(dists)
    undeclared = {f: d - declared - PEERS for f, d in imported.items() if d - declared - PEERS}
    assert undeclared == {}
    assert set().union(*imported.values()) == declared | PEERS


def torchrun(image: Image, workdir: Path, *args: str, **env: str) -> subprocess.Popen:
    """The page's command in the image: its variables, torchrun as the image's
    `python -m torch.distributed.run` (torchrun's entry point), train.py in `workdir`."""
    words = page_command("train.py")
    at = words.index("torchrun")
    variables = dict(w.split("=", 1) for w in words[:at])
    command = [image.python, "-m", "torch.distributed.run", *words[at + 1 :], *args]
    return subprocess.Popen(
        command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=image_env(image.python, **variables, MASTER_PORT=str(free_port()), **env),
    )  # fmt: skip


def step_losses(lines: list[str]) -> dict[int, float]:
    """Step to loss from rank 0's JSON lines (trainkit's Session)."""
    return {d["step"]: d["loss"] for d in map(json.loads, filter(re.compile("^{").match, lines))}


@pytest.fixture(scope="module")
def runs(image, tmp_path_factory) -> dict:
    before = tmp_path_factory.mktemp("before")
    (before / "train.py").write_text(scripts()[0])
    plain = torchrun(image, before, "--steps", "20")
    plain_out, plain_err = plain.communicate(timeout=HANG_S)

    workspace = image.root.path(image.workdir)  # where the page's Dockerfile put train.py
    interrupted = torchrun(image, workspace, "--steps", str(MANY))
    seen: list[str] = []
    for line in interrupted.stdout:
        seen.append(line)
        if step_losses(seen) and max(step_losses(seen)) >= 3:
            interrupted.send_signal(signal.SIGTERM)  # as the kubelet signals the container
            break
    rest, interrupted_err = interrupted.communicate(timeout=HANG_S)
    seen += rest.splitlines()
    stopped = max(step_losses(seen))
    checkpoints = sorted((workspace / "out/ck").glob("step-*"))

    with Gateway() as gateway:
        resumed = torchrun(image, workspace, "--steps", str(stopped + MORE),
                           TRAINKIT_PUSHGATEWAY_URL=gateway.url)  # fmt: skip
        resumed_out, resumed_err = resumed.communicate(timeout=HANG_S)
    reference_dir = tmp_path_factory.mktemp("reference")
    shutil.copy(workspace / "train.py", reference_dir)
    reference = torchrun(image, reference_dir, "--steps", str(stopped + MORE))
    reference_out, reference_err = reference.communicate(timeout=HANG_S)
    return {
        "plain_rc": plain.returncode, "plain_out": plain_out, "plain_err": plain_err,
        "interrupted": step_losses(seen), "interrupted_err": interrupted_err,
        "stopped": stopped, "checkpoints": checkpoints,
        "resumed_rc": resumed.returncode, "resumed": step_losses(resumed_out.splitlines()),
        "resumed_out": resumed_out, "resumed_err": resumed_err, "pushes": gateway.received,
        "reference_rc": reference.returncode, "reference_err": reference_err,
        "reference": step_losses(reference_out.splitlines()),
        "ledger": json.loads((workspace / "out/ck/goodput.json").read_text()),
    }  # fmt: skip


def test_the_plain_ddp_script_runs_in_the_image(runs):
    assert runs["plain_rc"] == 0, runs["plain_err"][-3000:]
    printed = re.findall(r"^step (\d+) loss", runs["plain_out"], re.M)
    assert printed == [str(step) for step in range(1, 21)]


def test_the_trainkit_script_saves_at_the_sigterm_and_resumes_from_it(runs):
    stopped = runs["stopped"]
    # Saved at the step boundary it stopped on, with its manifest (trainkit.checkpoint).
    assert runs["checkpoints"][-1].name == f"step-{stopped:08d}", runs["interrupted_err"][-3000:]
    assert (runs["checkpoints"][-1] / "manifest.json").is_file()
    assert runs["resumed_rc"] == 0, runs["resumed_err"][-3000:]
    assert f"resuming from step {stopped}" in runs["resumed_out"]
    assert sorted(runs["resumed"]) == list(range(stopped + 1, stopped + MORE + 1))


def test_the_resumed_run_trains_as_an_uninterrupted_one(runs):
    """The page's claim: batches keyed by (step, rank), so the losses match bit for bit."""
    assert runs["reference_rc"] == 0, runs["reference_err"][-3000:]
    assert {**runs["interrupted"], **runs["resumed"]} == runs["reference"]


def test_the_goodput_ledger_holds_both_attempts_and_is_pushed(runs):
    stopped, ledger = runs["stopped"], runs["ledger"]
    assert [a["end"] for a in ledger["attempts"]] == ["preempted", "completed"]
    assert ledger["attempts"][1]["resumed_from"] == stopped
    assert ledger["figures"]["restarts"] == {"preempted": 1, "hung": 0, "rank_failed": 0}
    assert ledger["figures"]["last_checkpoint_step"] == stopped + MORE
    assert 0 < ledger["figures"]["goodput"] <= 1
    method, path, _, body = runs["pushes"][-1]
    assert method == "PUT" and "/metrics/job/training-goodput/" in path
    assert "/job_name/linear/" in path
    samples = dict(line.rsplit(" ", 1) for line in body.splitlines() if not line.startswith("#"))
    assert float(samples['gpu_platform_job_restarts{cause="preempted"}']) == 1
    assert float(samples["gpu_platform_job_last_checkpoint_step"]) == stopped + MORE


def test_the_trainkit_script_runs_as_a_job_of_the_image_under_the_platforms_launcher(
    image, tmp_path
):
    """The seam a team's job crosses: the pod `python -m jobs submit` renders for the image,
    the launcher from its ConfigMap (with its own two files of `contract`) at its mountPath,
    every other volume at its own, the command and environment as rendered; each rank must
    import trainkit and `contract` from the wheel and checkpoint to the job's folder on the
    shared-data claim."""
    name = "wheel"
    submitted = submit(["--stack", "onprem", "--nodes", "1", "--gpus-per-node", "1"],
                       ["train.py", "--steps", str(MORE)], name)  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    pod, container = trainer_pod(submitted.job)
    mounted = configmaps("onprem", submitted.job["metadata"]["namespace"])
    shutil.copytree(image.root.root, tmp_path / "root")
    box = ContainerRoot(tmp_path / "root")
    box.mount_all(pod, container, mounted)
    env = container_env(container, POD_FIELDS, mounted)
    command = rewrite(
        box.command(container, env, python=str(image.python)),
        {f"{name}-trainer-0-0.{name}": "127.0.0.1", "=29500": f"={free_port()}"},
    )
    # This machine's loopback is shared with other tests: the gauges on a free port, and no
    # push to the stack's Pushgateway, which only the cluster's DNS names.
    local = {"TRAINKIT_METRICS_PORT": "0", "TRAINKIT_PUSHGATEWAY_URL": ""}
    run = subprocess.run(
        command, env=image_env(image.python, **{**box.env(env), **local}),
        cwd=box.path(container.get("workingDir", image.workdir)),
        capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    checkpoints = box.path(env["TRAINKIT_CHECKPOINT_DIR"])
    assert checkpoints.is_relative_to(box.claims["shared-data"])
    assert (checkpoints / f"step-{MORE:08d}" / "manifest.json").is_file()
    ledger = json.loads((checkpoints / "goodput.json").read_text())
    assert [a["end"] for a in ledger["attempts"]] == ["completed"]
