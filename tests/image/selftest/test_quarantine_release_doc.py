"""docs/monitoring.md, "Returning a quarantined node": the commands it gives lift every mark the
image's quarantine patch puts on a node (bootstrap/selftest/quarantine.py), and nothing else,
so a returned node is the node it was and the next quarantine starts clean. (An image-side
test: it applies the image's own patch.)

kubectl's node verbs are modelled from their `--help` examples (kubectl 1.35): `kubectl taint
nodes foo dedicated:NoSchedule-` "Remove from node 'foo' the taint with key 'dedicated' and
effect 'NoSchedule' if one exists"; `kubectl label pods foo bar-` "removing a label named
'bar' if it exists"; `kubectl annotate pods foo description-` removes the annotation
`description`; `kubectl uncordon` "Mark node as schedulable"."""

from __future__ import annotations

import copy
import re
import shlex
from datetime import datetime
from typing import Any

from selftest import quarantine

from tests.helpers.image_path import ROOT
from tests.helpers.kube_api import merge_patched

SECTION = "### Returning a quarantined node"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
# A node as it joined: its GPU taint and labels, and an annotation of someone else's.
JOINED = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "ip-10-0-1-5",
        "labels": {"kubernetes.io/hostname": "ip-10-0-1-5", "gpu-platform/node-join": "passed"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        "resourceVersion": "42",
    },
    "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
}


def release_commands() -> list[list[str]]:
    """The section's `kubectl` commands that change a node, `<node>` filled in."""
    text = (ROOT / "docs" / "monitoring.md").read_text()
    section = text[text.index(SECTION) :]
    block = SH_BLOCK.search(section)[1]
    found = []
    for line in block.splitlines():
        words = shlex.split(line.replace("<node>", "ip-10-0-1-5"), comments=True)
        if words[:1] == ["kubectl"] and words[1] in ("taint", "label", "annotate", "uncordon"):
            found.append(words[1:])
    return found


def kubectl(node: dict[str, Any], words: list[str]) -> None:
    """One of the docs' commands, applied to `node` as kubectl would."""
    if words == ["uncordon", "ip-10-0-1-5"]:
        node["spec"].pop("unschedulable", None)
        return
    verb, kind, name, *args = words
    assert (kind, name) == ("node", "ip-10-0-1-5"), words
    for arg in args:
        assert arg.endswith("-"), f"the release only removes: {words}"
        key = arg[:-1]
        if verb == "taint":
            key, _, effect = key.partition(":")
            node["spec"]["taints"] = [
                t for t in node["spec"]["taints"]
                if not (t["key"] == key and (not effect or t["effect"] == effect))
            ]  # fmt: skip
        else:
            node["metadata"]["labels" if verb == "label" else "annotations"].pop(key, None)


def test_the_release_commands_lift_every_mark_a_quarantine_puts_and_nothing_else():
    patch = quarantine.quarantine_patch(
        JOINED, quarantine.DEFAULT_LABEL, ["hardware.xid"], datetime.fromisoformat("2026-12-05")
    )
    held = copy.deepcopy(merge_patched(JOINED, patch))
    assert held != JOINED
    for words in release_commands():
        kubectl(held, words)
    assert held == JOINED, "the docs' release leaves a mark of the quarantine on the node"


def test_the_model_reads_every_node_command_of_the_section():
    # A command the model skipped would pass the test above unread.
    assert [w[0] for w in release_commands()] == ["taint", "label", "annotate", "uncordon"]
