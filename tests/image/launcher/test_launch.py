"""The platform's launcher (contract/launch.py), as the pod runs it: laid out as the
`training-launcher` ConfigMap the plan writes is mounted by a rendered job's volume (launch.py,
contract/__init__.py, contract/exits.py in one folder: components/scheduling/launcher.py) and
started with no PYTHONPATH, so nothing of trainkit or the rest of the tree is importable;
torchrun's own agent starts each worker. Each case's exit code is the one contract/exits.py
documents for the container."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contract.exits import BAD_ARGUMENTS, HUNG, PREEMPTED, SETUP_FAILED
from contract.launch import make_flight_record_folder, root_cause
from tests.helpers.hang import HANG_S
from tests.helpers.image_layout import ContainerRoot
from tests.helpers.program_cli import configmaps, submit, trainer_pod

SCRIPTS = {
    "ok.py": "import sys\nprint('argv', sys.argv[1:])\n",
    "crash.py": "raise RuntimeError('a plain crash')\n",
    "import_error.py": "import a_module_the_image_lacks\n",
    # This test's image has no `contract` (no PYTHONPATH): `python script.py` would fail so; the
    # launcher's own two files beside it must not stand in for it.
    "imports_contract.py": "import contract.exits\n",
    "syntax_error.py": "def broken(:\n",
    "bad_argument.py": (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--steps', type=int)\n"
        "p.parse_args()\n"
    ),
    # What trainkit's watchdog does once it has written its dumps.
    "hung.py": "import os\nos._exit(124)\n",
    # Rank 1 cannot be set up while rank 0 crashes: with a 3 s monitor interval both exits
    # usually reach the agent in one poll (test_root_cause covers the order exactly).
    "mixed.py": (
        "import os, pathlib, time\nrank = int(os.environ['RANK'])\n"
        "pathlib.Path(f'ready-{rank}').touch()\n"
        "while not all(pathlib.Path(f'ready-{r}').exists() for r in (0, 1)): time.sleep(0.01)\n"
        "if rank == 1: import a_module_the_image_lacks\nraise RuntimeError('rank 0 crashed')\n"
    ),
    # Needs 2 s after SIGTERM to save its checkpoint, then stops as trainkit does.
    "saves.py": (
        "import os, signal, time\n"
        "def stop(*_):\n"
        "    print('saving', flush=True); time.sleep(2)\n"
        "    print('saved', flush=True); os._exit(143)\n"
        "signal.signal(signal.SIGTERM, stop)\nprint('ready', flush=True)\ntime.sleep(3600)\n"
    ),
    # Stops on SIGTERM as trainkit does (a checkpoint, then 128 + 15).
    "stops.py": (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('stopping', flush=True), os._exit(143)))\n"
        "print('ready', flush=True)\ntime.sleep(3600)\n"
    ),
}
TORCHRUN = ["--standalone", "--nproc-per-node=1"]
CASES = {
    "finished": ([*TORCHRUN, "ok.py", "--steps=3"], 0),
    "bad torchrun flag": (["--no-such-flag", *TORCHRUN, "ok.py"], BAD_ARGUMENTS),
    "bad script argument": ([*TORCHRUN, "bad_argument.py", "--steps=ten"], BAD_ARGUMENTS),
    "no such script": ([*TORCHRUN, "missing.py"], BAD_ARGUMENTS),
    "import error": ([*TORCHRUN, "import_error.py"], SETUP_FAILED),
    "syntax error": ([*TORCHRUN, "syntax_error.py"], SETUP_FAILED),
    "no such module": ([*TORCHRUN, "-m", "no_such_module"], SETUP_FAILED),
    "the launcher's own modules": ([*TORCHRUN, "imports_contract.py"], SETUP_FAILED),
    "plain crash": ([*TORCHRUN, "crash.py"], 1),
    "hung": ([*TORCHRUN, "hung.py"], HUNG),
    "unfixable on any rank": (
        ["--standalone", "--nproc-per-node=2", "--monitor-interval=3", "mixed.py"], SETUP_FAILED
    ),
}  # fmt: skip


@functools.cache
def launcher_volume() -> tuple[dict, str, dict]:
    """The launcher's volume and mountPath in a team job `python -m jobs submit` renders, and the
    ConfigMaps `python -m plan` writes in its namespace."""
    job = submit(["--stack", "onprem", "--nodes", "1"], ["train.py"], "launcher").job
    pod, container = trainer_pod(job)
    (mount,) = (m for m in container["volumeMounts"] if m["name"] == "training-launcher")
    (volume,) = (v for v in pod["volumes"] if v["name"] == "training-launcher")
    return volume, mount["mountPath"], configmaps("onprem", job["metadata"]["namespace"])


def launcher_folder(base: Path) -> Path:
    """The ConfigMap's items with their modes, in the folder it is mounted as."""
    volume, mount_path, mounted = launcher_volume()
    return ContainerRoot(base / "root").mount(volume, mount_path, mounted)


def launch(launcher: Path, cwd: Path, args: list[str]) -> subprocess.Popen:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "TORCHELASTIC_USE_AGENT_STORE")
    }
    return subprocess.Popen(
        [sys.executable, str(launcher / "launch.py"), *args], cwd=cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """Every case at once, each in a folder of its own: (exit code, output)."""
    base = tmp_path_factory.mktemp("launch")
    launcher = launcher_folder(base)
    started = {}
    for name, (args, _) in CASES.items():
        cwd = base / name.replace(" ", "-")
        cwd.mkdir()
        for script, text in SCRIPTS.items():
            (cwd / script).write_text(text)
        started[name] = launch(launcher, cwd, args)
    done = {}
    for name, process in started.items():
        output, _ = process.communicate(timeout=HANG_S)
        done[name] = (process.returncode, output)
    return done


@pytest.mark.parametrize("case", list(CASES))
def test_the_launcher_exits_with_the_documented_code(launched, case):
    code, output = launched[case]
    assert code == CASES[case][1], output[-3000:]


def test_the_worker_gets_its_arguments_and_imports_nothing_of_the_tree(launched):
    _code, output = launched["finished"]
    assert "argv ['--steps=3']" in output


def terminate_when_ready(process: subprocess.Popen) -> tuple[int, str]:
    """SIGTERM to the launcher, as the kubelet sends it to the container's PID 1, once the
    worker says it is ready; its exit code and whole output once it has exited."""
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.strip() == "ready":
            time.sleep(0.5)
            process.send_signal(signal.SIGTERM)
            break
    rest, _ = process.communicate(timeout=HANG_S)
    return process.returncode, "".join(lines) + rest


def test_sigterm_stops_the_workers_and_the_launcher_exits_preempted(tmp_path):
    """The kubelet's SIGTERM reaches the container's PID 1, the launcher: torchrun's agent
    passes it on, the worker stops as trainkit does, and the pod's code is PREEMPTED."""
    launcher = launcher_folder(tmp_path)
    (tmp_path / "stops.py").write_text(SCRIPTS["stops.py"])
    code, output = terminate_when_ready(launch(launcher, tmp_path, [*TORCHRUN, "stops.py"]))
    assert code == PREEMPTED, output
    assert "stopping" in output


@pytest.mark.parametrize(("shutdown_timeout", "saved"), [(8, True), (1, False)])
def test_the_worker_gets_the_shutdown_timeout_after_sigterm(tmp_path, shutdown_timeout, saved):
    """torchrun's agent SIGKILLs a worker still running `--shutdown-timeout` seconds after it
    passed SIGTERM on (torch 2.13 torch/distributed/elastic/multiprocessing/api.py `_close`:
    `end = time.monotonic() + timeout`, then `_get_kill_signal()`), 30 s when not given: the
    job builder renders the pod's grace period less the launcher's margin. A worker that needs
    2 s saves within 8 s, and is killed mid-save within 1 s."""
    launcher = launcher_folder(tmp_path)
    (tmp_path / "saves.py").write_text(SCRIPTS["saves.py"])
    args = [*TORCHRUN, f"--shutdown-timeout={shutdown_timeout}", "saves.py"]
    code, output = terminate_when_ready(launch(launcher, tmp_path, args))
    assert "saving" in output
    assert ("saved" in output) == saved, output
    assert code == PREEMPTED, output


def failure(exitcode: int, timestamp: int):
    from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

    found = ProcessFailure(local_rank=0, pid=1, exitcode=exitcode, error_file="")
    found.timestamp = timestamp
    return found


def test_root_cause():
    """torch's ChildFailedError.failures, global rank -> ProcessFailure: an unfixable code on any
    rank wins, else the first failure's HUNG or PREEMPTED, else 1; a signal is 128 + N."""
    assert root_cause({0: failure(1, 10), 1: failure(SETUP_FAILED, 11)}) == SETUP_FAILED
    assert root_cause({0: failure(HUNG, 10), 1: failure(1, 11)}) == HUNG
    assert root_cause({0: failure(1, 10), 1: failure(HUNG, 11)}) == 1
    assert root_cause({3: failure(-signal.SIGTERM, 10)}) == PREEMPTED
    assert root_cause({0: failure(-signal.SIGKILL, 10)}) == 1


def test_the_flight_record_folder_is_made_and_one_that_cannot_be_costs_only_the_record(
    tmp_path, capsys
):
    """torch writes the dump to `<prefix><rank>` and makes no folder for a prefix it is given;
    the launcher makes it, and goes on without it where it cannot (a read-only volume)."""
    prefix = tmp_path / "shared" / "flight-records" / "team" / "job" / "nccl-trace-rank-"
    make_flight_record_folder({"TORCH_FR_DUMP_TEMP_FILE": str(prefix)})
    assert prefix.parent.is_dir()
    # The older name, read when the first is unset (FlightRecorder.cpp getCvarString).
    older = tmp_path / "older" / "nccl-trace-rank-"
    make_flight_record_folder({"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(older)})
    assert older.parent.is_dir()
    (tmp_path / "a-file").write_text("")
    make_flight_record_folder({"TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "a-file" / "x" / "p-")})
    assert "launch.py: no flight records this run:" in capsys.readouterr().err
