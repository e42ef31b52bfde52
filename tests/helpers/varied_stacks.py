"""A stack that sets what every shipped stack leaves at its default (STYLE.md §14): the staging
stack with other, still valid, values for settings that feed rendered objects, planned once per
test process. A setting the code hard-codes instead of reading passes every shipped stack; it
fails on this one."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from plan.cli import plan_stack
from plan.model import Plan
from tests.conftest import make_project, stack_file_config
from tests.helpers.bad_stacks import NS

VARIED_STACK = "varied"


def _config() -> dict:
    config = stack_file_config("staging")
    fsx = config[f"{NS}:storage"]["fsx"]
    # AWS FSx API, CreateFileSystemLustreConfiguration: DataCompressionType LZ4 | NONE;
    # FileSystemTypeVersion 2.12 | 2.15 (PERSISTENT_2 takes either).
    fsx.update(data_compression="NONE", lustre_version="2.12")
    # mount.lustre(8): noatime is a client option beside flock.
    fsx["mount_options"] = ["flock", "noatime"]
    config[f"{NS}:observability"] = {
        "scrape_interval_seconds": 15,
        "retention_days": 20,
        "retention_size_gib": 60,
        "storage_gib": 80,
    }
    (group,) = config[f"{NS}:gpu_node_groups"]
    # Kubernetes docs, "Control Topology Management Policies on a node": scope container |
    # pod, policy none | best-effort | restricted | single-numa-node; CPU manager none | static.
    group["kubelet"] = {
        "topology_manager_scope": "container",
        "topology_manager_policy": "best-effort",
    }
    group["root_volume_gib"] = 300
    group["scale_down_unneeded_minutes"] = 45
    return config


@functools.cache
def varied_plan() -> Plan:
    root = make_project(Path(tempfile.mkdtemp(prefix="varied-")), {VARIED_STACK: _config()})
    return plan_stack(VARIED_STACK, root)
