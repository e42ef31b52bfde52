"""The container's command for every training pod (components/scheduling/
training_job.py renders it): `python launch.py <torchrun's flags> <script.py | -m module> <args>`.

It runs torchrun's own agent (torch 2.13 torch/distributed/run.py: `parse_args`, then `run`,
which builds the LaunchConfig and calls `elastic_launch`) with every worker wrapped in
`launch.py --worker <script.py | -m module> <args>`, and exits with the group's root cause, so
that the Job's podFailurePolicy can match the code (contract/exits):

- an UNFIXABLE code (bad arguments, a script that cannot be set up) when any local rank had one:
  the JobSet fails at once instead of restarting into the same failure;
- HUNG when the first failure was trainkit's watchdog;
- PREEMPTED when the launcher itself got SIGTERM (the kubelet signals the container's PID 1; the
  agent passes the signal to its workers, which stop at a step boundary with a checkpoint), or
  when the first failure was a worker that stopped so;
- 1 for anything else (a crash, a NCCL or store error after a peer died): the group restarts.

Only the standard library at import time: the platform ships this file (with contract/exits.py)
as a ConfigMap into images that have torch but not trainkit. torch is imported inside functions.
A worker forgets the modules the launcher brought (`forget_own_modules`), so that the script
imports what `python script.py` would in the image, the image's own `contract` among them."""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import traceback

from contract.exits import BAD_ARGUMENTS, HUNG, PREEMPTED, SETUP_FAILED, UNFIXABLE

WORKER = "--worker"
# Flight-recorder and NCCL error-handling defaults, set before any process group starts (the
# launcher's environment reaches every worker; trainkit.join sets them too for scripts started
# without the launcher). Names from PyTorch 2.13: torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp
# and docs/source/torch_nccl_environment_variables.md (TORCH_NCCL_TRACE_BUFFER_SIZE: ring buffer
# entries, >0 turns the flight recorder on; TORCH_NCCL_DUMP_ON_TIMEOUT: dump it when NCCL's own
# watchdog times out, needs the buffer; TORCH_NCCL_ASYNC_ERROR_HANDLING 1: abort the
# communicator and tear the process down on an async error, so the rank exits instead of
# hanging). torch/distributed/distributed_c10d.py reads TORCH_FR_BUFFER_SIZE first and falls
# back to TORCH_NCCL_TRACE_BUFFER_SIZE; the same ring buffer records gloo's collectives.
FLIGHT_RECORDER_DEFAULTS = {
    "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
}


# Where a rank writes its flight record when NCCL's watchdog times out: the file name's prefix,
# the rank appended. torch 2.13 torch/csrc/distributed/c10d/FlightRecorder.cpp,
# DebugInfoWriter::getWriter: getCvarString({"TORCH_FR_DUMP_TEMP_FILE",
# "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}, $XDG_CACHE_HOME or $HOME/.cache + "/torch/
# comm_lib_trace_rank_"), the first name winning (Utils.hpp getCvarString). It only creates its
# default folder: a prefix in a folder that does not exist loses the dump
# ("Error opening file for writing Flight Recorder debug info").
FLIGHT_RECORD_PREFIX = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")


def set_flight_recorder_defaults(environ=os.environ) -> None:
    for name, value in FLIGHT_RECORDER_DEFAULTS.items():
        environ.setdefault(name, value)


def make_flight_record_folder(environ=os.environ) -> None:
    """The folder of the flight record's prefix the job sets (the job builder points it at
    shared-data, so that the record outlives the pod), made before any rank may dump into it.
    A folder that cannot be made costs the record, not the job: said, then the job goes on."""
    prefix = next((environ[name] for name in FLIGHT_RECORD_PREFIX if environ.get(name)), None)
    if prefix is None:
        return
    try:
        os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    except OSError as error:
        print(f"launch.py: no flight records this run: {error}", file=sys.stderr, flush=True)


def forget_own_modules() -> None:
    """Drop every module loaded from the launcher's own folder (contract/__init__.py and
    contract/exits.py beside it in the ConfigMap) and that folder from sys.path, before the
    script runs in this process.

    Why not a package name of the launcher's own instead: the image side imports `contract`
    too (trainkit, the self-test, the recipes: bootstrap/Dockerfile copies the whole package
    to /opt/platform), and no name is one that no image uses. Left in sys.modules, the
    ConfigMap's two-file `contract` would shadow the image's, and `from contract.env import`
    would fail (SETUP_FAILED) in every job. Forgotten, the script finds on sys.path exactly
    what `python script.py` would: its own folder, then the image's PYTHONPATH.

    Compared with links resolved: the kubelet mounts a ConfigMap's files as links into a
    timestamped folder (`launch.py` -> `..data/launch.py`, `..data` -> `..<timestamp>`), and
    Python puts the script's resolved folder first on sys.path, not the mountPath."""
    here = os.path.dirname(os.path.realpath(__file__))
    for name, module in list(sys.modules.items()):
        found = getattr(module, "__file__", None)
        if name != "__main__" and found and os.path.realpath(found).startswith(here + os.sep):
            del sys.modules[name]
    sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or ".") != here]


def worker(argv: list[str]) -> int:
    """Run the script (or `-m module`) as `python` would, in this process; an import or syntax
    error is SETUP_FAILED, a script that is not there BAD_ARGUMENTS. SystemExit passes through
    (argparse's 2 on a bad argument, the script's own code)."""
    module = bool(argv) and argv[0] == "-m"
    if module:
        argv = argv[1:]
    if not argv:
        print(f"launch.py {WORKER}: no script or -m module given", file=sys.stderr)
        return BAD_ARGUMENTS
    target, rest = argv[0], argv[1:]
    if not module and not os.path.isfile(target):
        # CPython's own answer to `python missing.py`: "can't open file", exit 2.
        print(f"launch.py: can't open file {target!r}: no such file", file=sys.stderr)
        return BAD_ARGUMENTS
    sys.argv = [target, *rest]
    forget_own_modules()
    # What `python script.py` / `python -m module` put first on sys.path.
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(target)))
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except (ImportError, SyntaxError):  # ModuleNotFoundError is an ImportError
        traceback.print_exc()
        print(f"launch.py: {target} could not be set up: exit {SETUP_FAILED}", file=sys.stderr)
        sys.stderr.flush()
        return SETUP_FAILED
    return 0


def exit_code(code: int) -> int:
    """A worker's exit as a container would report it: a signal N as 128 + N."""
    return 128 - code if code < 0 else code


def root_cause(failures: dict) -> int:
    """The launcher's exit code from torch's ChildFailedError.failures (global rank ->
    ProcessFailure with `exitcode`, negative for a signal, and `timestamp`)."""
    ordered = sorted(failures.items(), key=lambda item: (item[1].timestamp, item[0]))
    codes = [exit_code(failure.exitcode) for _, failure in ordered]
    unfixable = [code for code in codes if code in UNFIXABLE]
    if unfixable:
        return unfixable[0]
    first = codes[0] if codes else 1
    return first if first in (HUNG, PREEMPTED) else 1


def parse(argv: list[str]) -> argparse.Namespace:
    """torchrun's own parse of its flags (torch.distributed.run.parse_args), then what the
    launcher refuses of them; either exits BAD_ARGUMENTS with the reason."""
    from torch.distributed.run import get_use_env, parse_args

    args = parse_args(argv)  # argparse: exits 2 (BAD_ARGUMENTS) on a bad torchrun flag
    if args.no_python or args.run_path or not get_use_env(args):
        print(
            "launch.py: --no-python, --run-path and --no-use-env are not supported: every "
            "worker runs in python under the launcher's wrapper",
            file=sys.stderr,
        )
        sys.exit(BAD_ARGUMENTS)
    return args


def agent(argv: list[str]) -> int:
    """torchrun's agent with every worker wrapped; the group's root cause as the exit code."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import run

    args = parse(argv)
    wrapped = [WORKER, *(["-m"] if args.module else []), args.training_script]
    args.training_script, args.module = os.path.abspath(__file__), False
    args.training_script_args = [*wrapped, *args.training_script_args]
    set_flight_recorder_defaults()
    make_flight_record_folder()
    try:
        run(args)
    except ChildFailedError as error:
        code = root_cause(error.failures)
    except SignalException as error:
        code = PREEMPTED if error.sigval == signal.SIGTERM else 128 + int(error.sigval)
    except Exception:  # the agent's own failure (a rendezvous that never completed, a store)
        traceback.print_exc()
        code = 1
    else:
        return 0
    print(f"launch.py: the group's root cause: exit {code}", file=sys.stderr, flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [WORKER]:
        return worker(argv[1:])
    return agent(argv)


if __name__ == "__main__":
    sys.exit(main())
