"""A stand-in kubectl on PATH, for the commands that talk to a cluster: it answers each command
line from a table (stdout, exit status, stderr) and records every call. A command line the
table does not hold exits 1 naming it, so a call the test did not expect fails the test instead
of passing as an empty answer.

Lines are matched without the leading `--kubeconfig PATH` and `--context NAME`, which every
`python -m jobs` call puts first (jobs/kubectl.py); `calls` keeps them."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = """#!{python}
import json, sys
from pathlib import Path

here = Path({folder!r})
argv = sys.argv[1:]
with open(here / "calls.jsonl", "a") as calls:
    calls.write(json.dumps(argv) + "\\n")
while argv[:1] in (["--kubeconfig"], ["--context"]):
    argv = argv[2:]
for answer in json.loads((here / "answers.json").read_text()):
    if answer["argv"] == argv:
        sys.stdout.write(answer["stdout"])
        sys.stderr.write(answer["stderr"])
        sys.exit(answer["rc"])
sys.stderr.write("stand-in kubectl: no answer for " + json.dumps(argv) + "\\n")
sys.exit(1)
"""


@dataclass(frozen=True)
class StandInKubectl:
    folder: Path

    def answer(self, *argv: str, stdout: str | object = "", rc: int = 0, stderr: str = "") -> None:
        """`kubectl <argv>` prints `stdout` (a document is printed as JSON) and exits `rc`."""
        text = stdout if isinstance(stdout, str) else json.dumps(stdout, indent=2) + "\n"
        table = self.folder / "answers.json"
        answers = json.loads(table.read_text())
        answers.append({"argv": list(argv), "stdout": text, "rc": rc, "stderr": stderr})
        table.write_text(json.dumps(answers))

    @property
    def calls(self) -> list[list[str]]:
        log = self.folder / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def verbs(self) -> list[str]:
        """Each call's first word after the global flags: get, delete, apply."""
        found = []
        for argv in self.calls:
            while argv[:1] in (["--kubeconfig"], ["--context"]):
                argv = argv[2:]
            found.append(argv[0])
        return found


def stand_in_kubectl(folder: Path, monkeypatch: pytest.MonkeyPatch) -> StandInKubectl:
    """The stand-in, first on PATH for this test."""
    folder.mkdir()
    script = folder / "kubectl"
    script.write_text(SCRIPT.format(python=sys.executable, folder=str(folder)))
    script.chmod(0o755)
    (folder / "answers.json").write_text("[]")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return StandInKubectl(folder)
