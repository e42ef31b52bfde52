"""Every form of command `python -m jobs submit ... -- COMMAND` takes, and every form it refuses
with why: the program's tests hold the refusals (tests/jobs/test_team.py), the image side's that
what it renders of the others is what the launcher and torchrun accept
(tests/image/launcher/test_rendered_jobs.py).

ACCEPTED: the command -> what torchrun must read of the rendered args: (module?, the script or
module, its arguments). torchrun runs the script in its own Python ("python" stripped), as
`torchrun train.py` does (torch.distributed.run: `training_script`, then
`training_script_args`).
REFUSED: the command -> a part of the reason the refusal names."""

from __future__ import annotations

ACCEPTED: dict[tuple[str, ...], tuple[bool, str, list[str]]] = {
    ("python", "train.py", "--lr", "1e-5"): (False, "train.py", ["--lr", "1e-5"]),
    ("python3", "train.py"): (False, "train.py", []),
    ("train.py", "--lr", "1e-5"): (False, "train.py", ["--lr", "1e-5"]),
    ("python", "/workspace/train", "--steps", "3"): (False, "/workspace/train", ["--steps", "3"]),
    ("python", "-m", "team.train", "--lr", "1e-5"): (True, "team.train", ["--lr", "1e-5"]),
    ("python3", "-m", "team.train"): (True, "team.train", []),
    ("-m", "team.train", "-x"): (True, "team.train", ["-x"]),
    # An argument of the script that is also a torchrun flag stays the script's.
    ("python", "train.py", "--nnodes=4"): (False, "train.py", ["--nnodes=4"]),
}
REFUSED: dict[tuple[str, ...], str] = {
    ("bash", "run.sh"): "bash is not a Python script (.py) or -m module",
    ("./run.sh",): "./run.sh is not a Python script (.py) or -m module",
    ("/usr/bin/python3", "train.py"): "/usr/bin/python3 is not a Python script (.py)",
    ("torchrun", "train.py"): "the platform's launcher runs torchrun itself",
    ("python",): "no script or -m module after python",
    ("python", "-m"): "-m needs a module",
    ("-m",): "-m needs a module",
    ("python", "-c", "print(1)"): "-c is an option of the interpreter or of torchrun",
    ("python", "-u", "train.py"): "-u is an option of the interpreter or of torchrun",
    ("--nproc-per-node=2", "train.py"): "--nproc-per-node=2 is an option of the interpreter",
}
