"""docs/gpu-nodes.md, "NVIDIA's images into ECR": its command block run as a reader copies it,
in a folder holding the out/<stack>/ the plan writes (plan.cli.write_copy_script, which
`python -m plan` calls), with stand-ins for skopeo and aws that record their arguments. The
logins go to NGC as `$oauthtoken` with the API key (NGC User Guide, "Accessing the NGC Container
Registry") and to the stack's ECR registry as AWS with `aws ecr get-login-password` (ECR User
Guide, registry_auth.html); the script copies every NVIDIA image once, and a second run, the
images there, copies none."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from model.stacks import ROOT
from plan.cli import write_copy_script
from tests.helpers.cache_stacks import ACCOUNT, COPY_LINES, cache_plan, config_of

RECORDER = """#!/bin/sh
printf '%s\\n' "$(basename "$0") $*" >> "$RECORD"
case "$(basename "$0") $1" in
  "skopeo login") cat >> "$RECORD.stdin" ;;
  "skopeo inspect") exit "$INSPECT_EXIT" ;;
  "aws ecr") echo ecr-password ;;
esac
"""


def block() -> str:
    page = (ROOT / "docs" / "gpu-nodes.md").read_text(encoding="utf-8")
    (section,) = re.findall(r"^### NVIDIA's images into ECR\n(.*?)(?=^##)", page, re.S | re.M)
    (commands,) = re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)
    for placeholder, value in {
        "<stack>": "ptc",
        "<region>": "us-east-1",
        "<account>": ACCOUNT,
    }.items():
        commands = commands.replace(placeholder, value)
    return commands


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """out/ptc/ as `python -m plan ptc` writes it, and the stand-ins on PATH."""
    root = tmp_path_factory.mktemp("copy")
    plan, rendering = cache_plan("ptc")
    (root / "out" / "ptc").mkdir(parents=True)
    write_copy_script("ptc", config_of("ptc"), plan, rendering, root / "out" / "ptc")
    (root / "bin").mkdir()
    for tool in ("skopeo", "aws"):
        (root / "bin" / tool).write_text(RECORDER)
        (root / "bin" / tool).chmod(0o755)
    return root


def run(folder: Path, inspect_exit: int, name: str) -> tuple[list[str], str]:
    record = folder / name
    env = {
        **os.environ,
        "PATH": f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "RECORD": str(record),
        "INSPECT_EXIT": str(inspect_exit),
        "NGC_API_KEY": "ngc-api-key",
    }
    done = subprocess.run(
        ["sh", "-eu", "-c", block()], cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return record.read_text().splitlines(), Path(f"{record}.stdin").read_text()


def test_the_documented_commands_sign_in_and_copy_each_nvidia_image_once(folder):
    calls, passwords = run(folder, inspect_exit=1, name="first")
    ecr = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
    # The two sides of a pipe start together: either may write its record first.
    assert calls[0] == "skopeo login --username $oauthtoken --password-stdin nvcr.io"
    assert sorted(calls[1:3]) == [
        "aws ecr get-login-password --region us-east-1",
        f"skopeo login --username AWS --password-stdin {ecr}",
    ]
    assert passwords == "ngc-api-key\necr-password\n"
    # Each script line: a look in ECR, and the copy where the image is not there.
    expected = [part for line in COPY_LINES for part in line.split(" >/dev/null 2>&1 || ")]
    assert calls[3:] == expected


def test_a_second_run_copies_nothing_already_there(folder):
    calls, _ = run(folder, inspect_exit=0, name="second")
    assert not [c for c in calls if c.startswith("skopeo copy")]
    assert len([c for c in calls if c.startswith("skopeo inspect")]) == len(COPY_LINES)
