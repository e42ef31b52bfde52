"""What the image side imports, found or not in the given Python, and the missing part installed
from a folder of wheels with `pip install --no-index --no-deps --target`: nothing is fetched, and
nothing the interpreter already holds is shadowed (a wheel whose distribution is installed is
left out, so a CUDA torch is never replaced by a wheel in the folder)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The image side's top-level imports (bootstrap/, recipes/) and their distributions: the
# self-test needs torch, numpy, Pillow and matplotlib (its report's plots); the recipes
# transformers and diffusers. webdataset is not among them: shards are read with tarfile.
MODULES = {
    "torch": "torch",
    "numpy": "numpy",
    "PIL": "pillow",
    "matplotlib": "matplotlib",
    "transformers": "transformers",
    "diffusers": "diffusers",
}
# The wheels `make gpu-wheels` leaves out: a GPU machine's Python brings its own CUDA torch, and
# with it numpy, Pillow and transformers (the lent H200's image does; KINDS notes in the docs).
BROUGHT = ("torch", "transformers", "numpy", "pillow")
# The oldest torch the image side was compared against (docs/selftest.md, "torch 2.11 and
# 2.13"): an older one is refused before any step runs.
MIN_TORCH = (2, 11)

PROBE = r"""
import importlib, importlib.metadata as md, json, platform, sys
modules, dists = json.loads(sys.argv[1]), json.loads(sys.argv[2])
found = {}
for module, dist in modules.items():
    try:
        imported = importlib.import_module(module)
    except Exception as error:
        found[module] = {"error": f"{type(error).__name__}: {error}"[:300]}
        continue
    try:
        version = md.version(dist)
    except md.PackageNotFoundError:
        version = getattr(imported, "__version__", "?")
    found[module] = {"version": version, "path": str(getattr(imported, "__file__", ""))}
installed = {}
for dist in dists:
    try:
        installed[dist] = md.version(dist)
    except md.PackageNotFoundError:
        installed[dist] = None
facts = {"python": platform.python_version(), "executable": sys.executable}
if "version" in found.get("torch", {}):
    import torch
    facts["torch"] = torch.__version__
    facts["cuda"] = torch.version.cuda
    facts["gpus"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if facts["gpus"]:
        props = torch.cuda.get_device_properties(0)
        facts["device"] = props.name
        facts["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
print(json.dumps({"modules": found, "installed": installed, "facts": facts}))
"""


def pins() -> dict[str, str]:
    """Distribution -> pinned version, from requirements-recipes.txt and the files it includes."""
    found: dict[str, str] = {}

    def read(path: Path) -> None:
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("-r "):
                read(path.parent / line[3:].strip())
            elif "==" in line:
                name, version = line.split("==")
                found[normalise(name)] = version.strip()

    read(ROOT / "requirements-recipes.txt")
    return found


def normalise(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def wheel_distribution(path: Path) -> str:
    """The distribution a wheel file holds: the first field of its name (PEP 427)."""
    return normalise(path.name.split("-")[0])


def probe(python: str, env: dict[str, str], modules: dict[str, str], dists: list[str],
          timeout_s: float) -> dict:  # fmt: skip
    """Each of `modules` (import name -> distribution) imported (its version, or the error),
    each of `dists` installed (its version or None), and the interpreter's facts: Python,
    torch, CUDA, GPUs."""
    done = subprocess.run(
        [python, "-c", PROBE, json.dumps(modules), json.dumps(dists)],
        env=env, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{python} could not run the probe: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def requirements(wheel: Path) -> list[str]:
    """The distributions a wheel requires (its METADATA's Requires-Dist, core metadata spec),
    less those only an extra asks for; other markers are kept, to install too much rather than
    too little."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode(errors="replace")
    needed = []
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            needed.append(normalise(re.match(r"[A-Za-z0-9._-]+", line[14:].strip())[0]))
    return needed


def missing_wheels(folder: Path, wanted: list[str], installed: dict[str, str | None]):
    """The wheels to install for the distributions `wanted`: each one's wheel and, through
    their requirements, those of every distribution the interpreter lacks; and the lacking
    ones the folder has no wheel of."""
    by_dist = {wheel_distribution(w): w for w in sorted(folder.glob("*.whl"))}
    chosen: dict[str, Path] = {}
    absent: list[str] = []
    pending = [normalise(name) for name in wanted]
    while pending:
        dist = pending.pop()
        if dist in chosen or dist in absent or installed.get(dist) is not None:
            continue
        if dist not in by_dist:
            absent.append(dist)
            continue
        chosen[dist] = by_dist[dist]
        pending += requirements(chosen[dist])
    return sorted(chosen.values()), sorted(absent)


def install(python: str, wheels: list[Path], site: Path, timeout_s: float):
    """`pip install` of exactly these wheels into `site`, offline, without their dependencies
    (those come from the interpreter or are among the wheels)."""
    site.mkdir(parents=True, exist_ok=True)
    command = [python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
               "--no-compile", "--no-cache-dir", "--upgrade", "--target", str(site),
               *map(str, wheels)]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)


def torch_too_old(version: str) -> bool:
    numbers = re.match(r"(\d+)\.(\d+)", version)
    return numbers is None or (int(numbers[1]), int(numbers[2])) < MIN_TORCH


# What `make gpu-wheels` fetches, with their dependencies, pinned by the requirements files:
# the image side's distributions a GPU machine's Python may lack.
FETCHED = ("diffusers", "matplotlib")
# x86-64 Linux wheels as pip matches them (exact manylinux tags; the lent machine is x86-64).
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")  # fmt: skip
# The device machine takes 64 MiB with the working tree (a few MiB): the wheels must leave room.
LIMIT_MIB = 48


def download(dest: Path, python_version: str, limit_mib: float = LIMIT_MIB) -> list[Path]:
    """FETCHED and their dependencies as binary wheels for CPython `python_version` on x86-64
    Linux into `dest`, less BROUGHT; an error when they would not travel."""
    dest.mkdir(parents=True, exist_ok=True)
    pinned = pins()
    abi = "cp" + python_version.replace(".", "")
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
               "--python-version", python_version, "--implementation", "cp", "--abi", abi,
               *(f"--platform={tag}" for tag in PLATFORMS), "--dest", str(dest),
               *(f"{name}=={pinned[name]}" for name in FETCHED)]  # fmt: skip
    subprocess.run(command, check=True)
    for wheel in dest.glob("*.whl"):
        if wheel_distribution(wheel) in BROUGHT:
            wheel.unlink()
    kept = sorted(dest.glob("*.whl"))
    total = sum(w.stat().st_size for w in kept) / 2**20
    for wheel in kept:
        print(f"{wheel.stat().st_size / 2**20:7.2f} MiB  {wheel.name}")
    print(f"{total:7.2f} MiB in {dest} (limit {limit_mib:g} MiB)")
    if total > limit_mib:
        raise SystemExit(f"error: {dest} holds {total:.1f} MiB, over {limit_mib:g} MiB")
    return kept


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        prog="python -m gpu_check.wheels", description="the wheels `make gpu-check` may need"
    )
    parser.add_argument("dest", type=Path)
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python")
    arguments = parser.parse_args()
    download(arguments.dest, arguments.python_version)
