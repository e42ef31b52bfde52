"""docs/trainkit.md's promises that need no run (its scripts, commands and Dockerfile are run in
tests/cluster/test_trainkit_wheel.py): trainkit takes five lines of a plain DDP script, and the
team image it installs into is built on the bootstrap image's base."""

from __future__ import annotations

import difflib

from model.stacks import ROOT
from tests.helpers.image_layout import instructions
from tests.helpers.trainkit_page import dockerfile, scripts


def test_trainkit_takes_five_lines_of_the_plain_ddp_script():
    before, after = scripts()
    diff = difflib.ndiff(before.splitlines(), after.splitlines())
    added = [line[2:].strip() for line in diff if line.startswith("+ ")]
    assert added == [
        "import trainkit",
        'session = trainkit.Session(model, optimizer, name="linear", save_every=50)',
        "for step in session.steps(args.steps):",
        "session.log(loss, samples=args.batch * dist.get_world_size())",
        "session.exit()",
    ]


def test_the_pages_image_starts_from_the_bootstrap_images_base():
    """The base trainkit runs on in the bootstrap image (bootstrap/Dockerfile: FROM
    nvcr.io/nvidia/pytorch:${PYTORCH_TAG}@..., ARG PYTORCH_TAG=25.12-py3)."""
    (tag,) = [
        args.partition("=")[2]
        for keyword, args in instructions((ROOT / "bootstrap/Dockerfile").read_text())
        if keyword == "ARG" and args.startswith("PYTORCH_TAG=")
    ]
    assert tag == "25.12-py3"
    assert instructions(dockerfile())[0] == ("FROM", f"nvcr.io/nvidia/pytorch:{tag}")
