"""The platform's launcher, shipped to the pods of every job: ConfigMap `training-launcher`, in
every namespace jobs run in, on every cluster, holding contract/launch.py and the contract
modules it imports, read from this checkout as files.

A job's container runs `python /opt/gpu-platform/launcher/launch.py <torchrun's flags> ...`
(components/scheduling/training_job.py mounts the ConfigMap there, read-only), whatever image
the team brings: the launcher is the platform's, not the image's, so the exit codes the
JobSet's failure policy reads (contract/exits.py) are the ones this checkout renders. A
ConfigMap lives in its own namespace only, and MultiKueue copies only the JobSet to a worker
(Kueue v0.19.2 pkg/controller/jobs/jobset/jobset_multikueue_adapter.go, SyncJob), so every
namespace where jobs run holds it, on the manager and on every worker.

Its `contract` package (the two files the launcher imports) is not the image's: the launcher
drops it before a worker runs the script (contract/launch.forget_own_modules), so a script that
imports `contract.env` finds the image's whole package on the image's PYTHONPATH.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

import contract
import contract.exits
import contract.launch
from components.base import PlatformComponent, plane_labels
from components.context import StackContext
from components.kubernetes_object import KubernetesObject

CONFIGMAP = "training-launcher"
MOUNT_PATH = "/opt/gpu-platform/launcher"
SCRIPT = "launch.py"
# ConfigMap key -> the path under MOUNT_PATH (a key cannot hold a `/`), each read from this
# checkout's contract/: the launcher and the modules it imports.
ITEMS = {
    "launch.py": SCRIPT,
    "contract.__init__.py": "contract/__init__.py",
    "contract.exits.py": "contract/exits.py",
}
SOURCES = {
    "launch.py": Path(contract.launch.__file__),
    "contract.__init__.py": Path(contract.__file__),
    "contract.exits.py": Path(contract.exits.__file__),
}
PART_OF = plane_labels("scheduling")


def launcher_configmap(namespace: str) -> dict[str, Any]:
    """The ConfigMap, its files read when it is declared."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": namespace, "labels": dict(PART_OF)},
        "data": {key: path.read_text() for key, path in SOURCES.items()},
    }


@dataclass(frozen=True)
class LauncherArgs:
    context: StackContext
    # Every namespace jobs run in: the training namespace, each team's, the self-test's.
    namespaces: Sequence[str]
    # Declared first: those namespaces.
    after: Sequence[pulumi.Resource] = ()


class Launcher(PlatformComponent):
    """The `training-launcher` ConfigMap in each namespace jobs run in."""

    PLANE = "scheduling"

    def __init__(self, name: str, args: LauncherArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        for ns in args.namespaces:
            KubernetesObject(
                f"{args.context.env}-{CONFIGMAP}-{ns}",
                launcher_configmap(ns),
                self.child(depends_on=list(args.after)),
            )
        self.register_outputs({"configmap": CONFIGMAP})
