"""The command docs/scheduling.md gives a team to bring back a workload the idle reclaimer
deactivated is the inverse of the reclaimer's patch, on the resource it patches: Kueue's
Workloads (kueue.x-k8s.io), a JSON merge patch of spec.active alone."""

from __future__ import annotations

import json
import re
import shlex

from model.stacks import ROOT


def test_the_documented_reactivation_undoes_the_reclaimers_patch():
    text = (ROOT / "docs/scheduling.md").read_text()
    (line,) = re.findall(r"^\s*(kubectl -n <team> patch .*)$", text, re.MULTILINE)
    args = shlex.split(line)
    assert args[:5] == ["kubectl", "-n", "<team>", "patch", "workloads.kueue.x-k8s.io"]
    assert args[args.index("--type") + 1] == "merge"
    patch = json.loads(args[args.index("-p") + 1])
    # The reclaimer's patch is {"spec": {"active": false}} (tests/image/selftest/test_reclaim.py).
    assert patch == {"spec": {"active": True}}
