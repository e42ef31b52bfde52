"""`make test` and `make test-image` between them run every test module exactly once, and CI
and the README run both: a module left out of both would never gate a change, one in both would
cost every change its time twice. Each target's pytest command is read from `make -n` (what
make would run), and which modules it collects from its path arguments and `--ignore` options,
as pytest selects them (pytest docs, "Changing standard (Python) test discovery")."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from tests.conftest import LONGEST_FIRST, ROOT

TARGETS = ("test", "test-image")
TESTS = ROOT / "tests"


def pytest_arguments(target: str) -> list[str]:
    printed = subprocess.run(
        ["make", "-n", "-s", "-C", str(ROOT), target],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (line,) = [line for line in printed.splitlines() if " -m pytest " in line]
    return shlex.split(line.split(" -m pytest ", 1)[1].split(";", 1)[0])


def collected(arguments: list[str], module: Path) -> bool:
    """Whether pytest, run from the root with these arguments, collects `module`."""
    # A word that names no file is an option's value (`-n auto`), not a path.
    paths = [ROOT / word for word in arguments if (ROOT / word).exists()]
    ignored = [ROOT / word.split("=", 1)[1] for word in arguments if word.startswith("--ignore=")]
    # With no path given, pytest collects the ini file's testpaths (pyproject.toml: tests).
    return _under(module, paths or [TESTS]) and not _under(module, ignored)


def _under(module: Path, folders: list[Path]) -> bool:
    return any(module.is_relative_to(folder) for folder in folders)


def test_the_two_targets_run_every_test_module_exactly_once():
    arguments = {target: pytest_arguments(target) for target in TARGETS}
    for target, words in arguments.items():
        # A marker or keyword expression would drop tests inside a module: the split is by folder.
        assert not {"-m", "-k"} & set(words), f"make {target}: {words}"
    modules = sorted(TESTS.rglob("test_*.py"))
    assert len(modules) > 100, modules
    counts = {m: sum(collected(arguments[t], m) for t in TARGETS) for m in modules}
    assert [m for m, n in counts.items() if n == 0] == [], "in neither target"
    assert [m for m, n in counts.items() if n > 1] == [], "in both targets"
    # The image side's real runs are the second target's; the program's tests the first's.
    assert collected(arguments["test-image"], TESTS / "image/trainkit/test_resilience.py")
    # The rendered plan run whole (the cluster in a box) starts real processes too.
    assert collected(arguments["test-image"], TESTS / "cluster/test_selftest.py")
    # So does the suite run whole on a copy of the project with a user's stacks added.
    assert collected(arguments["test-image"], TESTS / "suite/test_user_stacks.py")
    assert collected(arguments["test"], TESTS / "program/test_canary_roll.py")


def test_ci_and_the_readme_run_both_targets():
    ci = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    made = [line.split()[1] for line in ci if re.fullmatch(r"make [\w-]+", line)]
    assert made == ["test", "test-image"]
    readme = (ROOT / "README.md").read_text()
    for target in TARGETS:
        assert re.search(rf"^make {target}\s+#", readme, flags=re.MULTILINE), target


def test_every_module_put_first_exists():
    # A module renamed or moved would silently lose its place at the front of the queue.
    assert [m for m in LONGEST_FIRST if not (ROOT / m).is_file()] == []
