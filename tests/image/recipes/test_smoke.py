"""`make recipes-smoke` interrupts each recipe on purpose: torchrun's report of that exit stays
off the terminal, and a run that did not stop as planned still shows everything it printed.

A stand-in for torchrun replays what torchrun does when its ranks exit 143 after saving: the
recipe's step lines on stdout, the report with `interrupted`, and torch.distributed.elastic's
ChildFailedError traceback on stderr with exit 1 (tests/image/recipes/test_training.py sees the real
one: "exitcode  : 143" in torchrun's stderr)."""

from __future__ import annotations

import sys

import pytest

from recipes import smoke

# The stand-in reads no settings; the smoke hands it the recipe's all the same.
SETTINGS = {"sd-finetune": {"recipe": "sd-finetune"}}
TORCHRUN_ON_SIGTERM = """\
import json, sys
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1])
print(json.dumps({"recipe": "sd-finetune", "step": 1, "loss": 0.5}), flush=True)
out.mkdir(parents=True, exist_ok=True)
(out / "report.json").write_text(json.dumps({"interrupted": %(saved)s}))
print("Traceback (most recent call last):", file=sys.stderr)
print("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", file=sys.stderr)
print("  exitcode  : 143 (pid: 4242)", file=sys.stderr)
sys.exit(1)
"""


@pytest.fixture
def torchrun(tmp_path, monkeypatch):
    """Point the smoke at a stand-in torchrun whose ranks saved (or did not) before exiting."""
    monkeypatch.setattr(smoke, "ROOT", tmp_path / "recipes")

    def stand_in(saved: bool) -> None:
        script = tmp_path / "torchrun.py"
        script.write_text(TORCHRUN_ON_SIGTERM % {"saved": saved})
        monkeypatch.setattr(smoke, "TORCHRUN", [sys.executable, str(script)])

    return stand_in


def test_a_planned_interruption_prints_no_torchrun_traceback(torchrun, tmp_path, capfd):
    torchrun(saved=True)
    assert smoke.interrupt("sd-finetune", SETTINGS, tmp_path / "shared", 3) is None
    out, err = capfd.readouterr()
    assert '"step": 1' in out  # the recipe's own progress still shows
    assert "Traceback" not in out + err
    kept = (tmp_path / "recipes" / "logs" / "sd-finetune-interrupted.stderr").read_text()
    assert "exitcode  : 143" in kept


def test_an_interruption_that_did_not_save_shows_torchruns_report(torchrun, tmp_path, capfd):
    torchrun(saved=False)
    failure = smoke.interrupt("sd-finetune", SETTINGS, tmp_path / "shared", 3)
    assert failure is not None and "ChildFailedError" in failure and "exitcode  : 143" in failure
