"""The image's layout, read from bootstrap/Dockerfile and laid out under a folder: the files its
COPY instructions put in it (at their destinations), its ENV, WORKDIR and USER, and the base
image's interpreter. A test cannot write /opt, so every absolute path of the image lives under a
box root, and a `PathMap` turns a path as the cluster sees it (a command's word, an env value,
PYTHONPATH) into the box's. tests/helpers/box_kubelet.py runs containers in it.

Only the instructions whose effect a process sees are read (Dockerfile reference: ENV, WORKDIR,
USER, COPY, ARG); RUN steps install system packages (fio, EFA) that the CPU run does without,
and FROM's base (NGC PyTorch) is stood in for by this interpreter, the only thing of it the
image's processes run (`python`, `torchrun`). The Dockerfile is read by
tests/helpers/image_layout.py, the launcher tests' reader."""

from __future__ import annotations

import functools
import re
import shlex
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.image_layout import ImageLayout, image_layout

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "bootstrap" / "Dockerfile"
# The base image's PATH as far as the box needs it: its `python` and `torchrun` in /usr/local/bin,
# the system's tools after it; ENV PATH=...:${PATH} extends it.
BASE_BIN = "/usr/local/bin"
BASE_PATH = f"{BASE_BIN}:/usr/bin:/bin"
# What of the base image the image's processes run, as this interpreter runs it.
BASE_COMMANDS = {"python": [], "python3": [], "torchrun": ["-m", "torch.distributed.run"]}


@dataclass(frozen=True)
class Image:
    """What the Dockerfile gives a container: files, environment, working folder, user."""

    env: dict[str, str]
    workdir: str
    user: str
    # (source in the build context, destination in the image), in the file's order.
    copies: tuple[tuple[str, str], ...]


@functools.cache
def read_image(dockerfile: Path = DOCKERFILE) -> Image:
    """The image as tests/helpers/image_layout.py reads its Dockerfile, on a base that gives
    only its PATH and runs as root."""
    layout = image_layout(dockerfile, ROOT, ImageLayout(env={"PATH": BASE_PATH}, user="root"))
    copies = tuple((copy.source, copy.destination) for copy in layout.copies)
    return Image(dict(layout.env), layout.workdir, layout.user or "root", copies)


@dataclass
class PathMap:
    """Absolute paths of the image and of a pod's mounts -> where they are in the box. The
    longest prefix wins (a mount under a copied folder shadows it, as a mount does)."""

    prefixes: dict[str, Path] = field(default_factory=dict)

    def add(self, cluster_path: str, box: Path) -> None:
        self.prefixes[cluster_path.rstrip("/") or "/"] = box

    def copy(self) -> PathMap:
        return PathMap(dict(self.prefixes))

    def path(self, cluster_path: str) -> Path:
        for prefix in sorted(self.prefixes, key=len, reverse=True):
            # The root ("/") is a prefix of every absolute path.
            if cluster_path == prefix or cluster_path.startswith(prefix.rstrip("/") + "/"):
                return self.prefixes[prefix] / cluster_path[len(prefix) :].lstrip("/")
        raise KeyError(cluster_path)

    def apply(self, text: str) -> str:
        """Every absolute path in `text` that starts at a word, `=`, `:` or `,` boundary and
        lies under a mapped prefix, rewritten; other text unchanged."""
        prefixes = sorted((p for p in self.prefixes if p != "/"), key=len, reverse=True)
        if not prefixes:
            return text
        pattern = re.compile(
            r"(?:^|(?<=[\s=:,'\"]))("
            + "|".join(re.escape(p) for p in prefixes)
            + r")(?=/|$|[\s:,'\"])"
        )
        return pattern.sub(lambda m: str(self.prefixes[m.group(1)]), text)


def lay_out(root: Path, image: Image | None = None) -> PathMap:
    """The image's files under `root` (each COPY's source from the checkout, read-only as
    `--chown=root:root` leaves them to the image's user), and the base image's `python` and
    `torchrun` as this interpreter's; the map of every path the image holds."""
    image = image or read_image()
    # The image's root: where a folder no COPY or mount names is (a WORKDIR of its own). Only
    # a folder's lookup falls back to it; text keeps every path no prefix maps.
    paths = PathMap({"/": root})
    for source, dest in image.copies:
        if dest.startswith("/tmp/"):  # a build step's input, removed in the same RUN
            continue
        target = root / dest.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        # The checkout's folder itself, linked: the files are the image's bytes, and nothing
        # the tests write lands in the checkout (the root file system is read-only in a pod).
        target.symlink_to(ROOT / source)
        # The folder each lands in (/opt), so that a path above a copy (PYTHONPATH's
        # /opt/bootstrap) maps too; a pod's mounts are longer prefixes and win.
        top = "/" + dest.strip("/").split("/")[0]
        paths.add(top, root / top.lstrip("/"))
    bin_dir = root / BASE_BIN.lstrip("/")
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, argv in BASE_COMMANDS.items():
        script = bin_dir / name
        script.write_text("#!/bin/sh\nexec " + shlex.join([sys.executable, *argv]) + ' "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    paths.add(BASE_BIN, bin_dir)
    return paths
