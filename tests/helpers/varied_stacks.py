"""A stack that sets what every shipped stack leaves at its default (STYLE.md §14): the staging
stack with other, still valid, values for settings that feed rendered objects, planned once per
test process. A setting the code hard-codes instead of reading passes every shipped stack; it
fails on this one."""

from __future__ import annotations

import functools
import tempfile
import typing
from pathlib import Path

from model.config.nodes import CapacityType
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


CAPACITY_STACK = "kinds"
CAPACITY_KINDS: tuple[str, ...] = typing.get_args(CapacityType)


def capacity_group_name(kind: str) -> str:
    return kind.replace("_", "-")


def _capacity_config() -> dict:
    """prod with one GPU group of each capacity kind the model takes (STYLE.md §14), the
    reserved ones in the zone of their reservation, with EFA as prod's H100 groups have it."""
    config = stack_file_config("prod")
    reserved = {"reservation": "cr-0c1d2e3f4a5b60720", "capacity_block": "cr-0a1b2c3d4e5f60718"}
    config[f"{NS}:gpu_node_groups"] = [
        {
            "name": capacity_group_name(kind),
            "instance_types": ["p5.48xlarge"],
            "capacity": kind,
            "efa": True,
            "zone": "us-east-1b",
            "scaling": {"min_size": 0, "max_size": 2},
            **({"capacity_reservation_id": reserved[kind]} if kind in reserved else {}),
        }
        for kind in CAPACITY_KINDS
    ]
    config.pop(f"{NS}:cost", None)
    return config


@functools.cache
def capacity_plan() -> Plan:
    root = make_project(
        Path(tempfile.mkdtemp(prefix="kinds-")), {CAPACITY_STACK: _capacity_config()}
    )
    return plan_stack(CAPACITY_STACK, root)
