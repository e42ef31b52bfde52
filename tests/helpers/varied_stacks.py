"""A stack that sets what every shipped stack leaves at its default (STYLE.md §14): the staging
stack with other, still valid, values for settings that feed rendered objects, planned once per
test process. A setting the code hard-codes instead of reading passes every shipped stack; it
fails on this one."""

from __future__ import annotations

import functools

from model.config import PlatformConfig, parse_config
from model.config.pools import windowed
from plan.model import Plan
from tests.conftest import (
    AWS_STACKS,
    STACKS,
    planned,
    project_plan,
    stack_config,
    stack_file_config,
)
from tests.helpers.bad_stacks import NS
from tests.helpers.network_stacks import (
    EXISTING_VPC_STACK,
    FRANKFURT_STACK,
    existing_vpc_plan,
    frankfurt_plan,
)
from tests.helpers.selftest_stacks import FSX, IMAGE

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
    return project_plan(VARIED_STACK, {VARIED_STACK: _config()})


# One GPU group of each capacity kind the model takes (STYLE.md §14: every member of an
# enumeration the code maps), by group name.
CAPACITY_STACK = "cap"
CAPACITY_GROUPS = {
    "on_demand": "od",
    "spot": "spot",
    "reservation": "odcr",
    "capacity_block": "block",
}
CAPACITY_CONFIG = {
    "gpu-platform:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
    "gpu-platform:cluster": {"admin_principal_arns": ["arn:aws:iam::123456789012:role/admins"]},
    "gpu-platform:gpu_node_groups": [
        {"name": "od", "instance_types": ["g5.2xlarge"]},
        {"name": "spot", "instance_types": ["g5.2xlarge"], "capacity": "spot"},
        {
            "name": "odcr",
            "instance_types": ["p5.48xlarge"],
            "capacity": "reservation",
            "capacity_reservation_id": "cr-0123456789abcdef0",
            "zone": "us-east-1a",
        },
        {
            "name": "block",
            "instance_types": ["p5.48xlarge"],
            "capacity": "capacity_block",
            "capacity_reservation_id": "cr-0123456789abcdef1",
            "zone": "us-east-1a",
        },
    ],
}


# The capacity-kinds stack's reserved groups, each with a window, and an on-demand group of the
# same type after them, where drained work goes: the Capacity Block requeues with the default
# warm-up and drain, and was bought for 4 instances while its group launches at most 2 (what is
# paid is what was bought); the reservation holds, with its own minutes, over a month's and a
# year's end, as many instances as its group launches.
WINDOW_STACK = "window"
BLOCK_WINDOW = {"start": "2026-12-14T11:30:00Z", "end": "2026-12-16T11:30:00Z", "instances": 4}
ODCR_WINDOW = {
    "instances": 2,
    "start": "2026-12-31T20:00:00Z",
    "end": "2027-01-01T04:00:00Z",
    "warmup_minutes": 15,
    "drain_minutes": 20,
    "on_drain": "hold",
}


def _window_config() -> dict:
    windows = {"odcr": ODCR_WINDOW, "block": BLOCK_WINDOW}
    groups = [
        {**g, "reservation_window": windows[g["name"]]}
        for g in CAPACITY_CONFIG[f"{NS}:gpu_node_groups"]
        if g["name"] in windows
    ]
    groups.append({"name": "p5od", "instance_types": ["p5.48xlarge"], "zone": "us-east-1a"})
    # The window's controller runs in the self-test image, whose runs keep their reports on
    # shared data.
    return {
        **CAPACITY_CONFIG,
        f"{NS}:gpu_node_groups": groups,
        f"{NS}:selftest": {"image": IMAGE},
        f"{NS}:storage": FSX,
    }


WINDOW_CONFIG = _window_config()


def window_config() -> PlatformConfig:
    return parse_config({k.split(":", 1)[1]: v for k, v in WINDOW_CONFIG.items()}, WINDOW_STACK)


@functools.cache
def window_plan() -> Plan:
    return project_plan(WINDOW_STACK, {WINDOW_STACK: WINDOW_CONFIG})


# The window stack without its on-demand group: the block requeues, but at its drain the queue
# has no other flavor open (the reservation's window starts two weeks later), so its drained
# workloads wait (a `reservation-drain-waits` warning). Every pool windowed: no post-deploy or
# scheduled self-test has a pool to run on at any time, so the stack turns them off and keeps
# the image for the window's controller and the node-join check.
WAITING_WINDOW_STACK = "window-waiting"


def waiting_window_config() -> PlatformConfig:
    config = {k.split(":", 1)[1]: v for k, v in WINDOW_CONFIG.items()}
    config["gpu_node_groups"] = [g for g in config["gpu_node_groups"] if g["name"] != "p5od"]
    config["selftest"] = {**config["selftest"], "mode": "off", "schedule": {"enabled": False}}
    return parse_config(config, WAITING_WINDOW_STACK)


# The shipped burst worker with a window on its Capacity Block: its own drained workloads
# requeue on the worker, to the spot flavor its queue lists first.
BURST_WINDOW_STACK = "burst-window"


def burst_window_config() -> PlatformConfig:
    config = {k.split(":", 1)[1]: v for k, v in stack_file_config("burst").items()}
    config["gpu_node_groups"] = [
        {**g, "reservation_window": BLOCK_WINDOW} if g["name"] == "h100-block" else g
        for g in config["gpu_node_groups"]
    ]
    config["selftest"] = {"image": IMAGE}
    return parse_config(config, BURST_WINDOW_STACK)


def window_configs() -> list[tuple[str, PlatformConfig]]:
    """(name, config) of every stack that declares a reservation window: the shipped ones that
    do (read from their config), the window stack, its waiting twin and a windowed burst
    worker."""
    shipped = [(s, stack_config(s)) for s in STACKS]
    return [
        *((s, cfg) for s, cfg in shipped if windowed(cfg)),
        (WINDOW_STACK, window_config()),
        (WAITING_WINDOW_STACK, waiting_window_config()),
        (BURST_WINDOW_STACK, burst_window_config()),
    ]


@functools.cache
def capacity_kinds_plan() -> Plan:
    return project_plan(CAPACITY_STACK, {CAPACITY_STACK: CAPACITY_CONFIG})


# One GB200 NVL72 pool as AWS sells it (EKS User Guide, "Use P6e-GB200 UltraServers with Amazon
# EKS"): an UltraServer Capacity Block of one u-p6e-gb200x72 (18 instances), the group sized to
# it, EFA, FSx for the jobs' shared data. The type is offered only in the Dallas Local Zone of
# us-east-1 (EC2 User Guide, "Launch instances using Capacity Blocks"), us-east-1-dfw-2a (AWS
# Local Zones User Guide, "Available Local Zones"): the pool is placed there, and the stack
# lists the zone under aws.zone_offerings, as a stack does for an offering newer than the
# catalog's reading. FSx stays in the region, in the first zone.
GB200_STACK = "gb200"
GB200_POOL = "nvl72"
GB200_ZONE = "us-east-1-dfw-2a"
GB200_CONFIG = {
    f"{NS}:aws": {
        "region": "us-east-1",
        "zones": ["us-east-1a", "us-east-1b"],
        "local_zones": [GB200_ZONE],
        "zone_offerings": {"p6e-gb200.36xlarge": [GB200_ZONE]},
    },
    # The default minor, 1.35: EKS asks 1.33 or later, and 1.33 is in extended support now.
    f"{NS}:cluster": {"admin_principal_arns": ["arn:aws:iam::123456789012:role/admins"]},
    # Jobs mount and checkpoint to shared data.
    f"{NS}:storage": FSX,
    f"{NS}:gpu_node_groups": [
        {
            "name": GB200_POOL,
            "instance_types": ["p6e-gb200.36xlarge"],
            "capacity": "capacity_block",
            "capacity_reservation_id": "cr-0123456789abcdef2",
            "efa": True,
            "zone": GB200_ZONE,
            "scaling": {"min_size": 18, "desired_size": 18, "max_size": 18},
        },
    ],
}


def gb200_config() -> PlatformConfig:
    return parse_config({k.split(":", 1)[1]: v for k, v in GB200_CONFIG.items()}, GB200_STACK)


@functools.cache
def gb200_plan() -> Plan:
    return project_plan(GB200_STACK, {GB200_STACK: GB200_CONFIG})


def every_aws_plan() -> list[tuple[str, Plan]]:
    """(name, plan) of every AWS stack, the varied stack, the capacity-kinds stack, its windowed
    twin, the GB200 stack and the network stacks (Frankfurt through a Transit Gateway, an
    existing VPC): for the tests of a class of resources, so that a kind (or a region) no
    shipped stack declares is covered too."""
    return [(s, aws_plan(s)) for s in (*AWS_STACKS, *AWS_FIXTURES)]


def aws_plan(stack: str) -> Plan:
    """The plan of a shipped AWS stack or of one of AWS_FIXTURES, by name."""
    fixtures = {
        VARIED_STACK: varied_plan,
        CAPACITY_STACK: capacity_kinds_plan,
        WINDOW_STACK: window_plan,
        GB200_STACK: gb200_plan,
        FRANKFURT_STACK: frankfurt_plan,
        EXISTING_VPC_STACK: existing_vpc_plan,
        DRA_STACK: lambda: dra_plan(DRA_STACK),
    }
    return fixtures[stack]() if stack in fixtures else planned(stack)


# A pool on each GPU allocation in one cluster, on each provider (issue 41 §1): on AWS the staging
# stack's A100 EFA group on DRA (from one node: no scale from zero with claims), an H100 group on
# DRA cut into MIG slices of each profile (mixed), and a device-plugin group beside them that
# still scales from zero; on the existing cluster the onprem A100 pool on DRA, on a minor that
# serves resource.k8s.io/v1, beside a device-plugin L40S pool shared by time-slicing.
DRA_STACK = "dra"
DRA_EXISTING_STACK = "dra-onprem"


def _dra_config() -> dict:
    config = stack_file_config("staging")
    (group,) = config[f"{NS}:gpu_node_groups"]
    group.update(gpu_allocation="dra", scaling={"min_size": 1, "max_size": 2, "desired_size": 1})
    config[f"{NS}:gpu_node_groups"] = [
        group,
        {
            "name": "h100-mig",
            "instance_types": ["p5.48xlarge"],
            "zone": "us-east-1c",
            "gpu_allocation": "dra",
            "gpu_sharing": {"mode": "mig"},
            "scaling": {"min_size": 1, "max_size": 1},
        },
        {"name": "g5", "instance_types": ["g5.2xlarge"]},
    ]
    config[f"{NS}:gpu_operator"] = {"mig_strategy": "mixed"}
    return config


def _dra_existing_config() -> dict:
    config = stack_file_config("onprem")
    config[f"{NS}:cluster"]["kubernetes_version"] = "1.34"
    (pool,) = config[f"{NS}:existing"]["gpu_pools"]
    pool["gpu_allocation"] = "dra"
    config[f"{NS}:existing"]["gpu_pools"] = [
        pool,
        {
            "name": "l40s",
            "node_selector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "gpu_model": "L40S",
            "gpu_memory_gib": 48,
            "gpus_per_node": 4,
            "nodes": 2,
            "gpu_sharing": {"mode": "time-slicing", "replicas": 4},
        },
    ]
    # Without the burst worker, which the offline plan would read from its own stack file.
    del config[f"{NS}:multikueue"]
    scheduling = config[f"{NS}:scheduling"]
    scheduling["cluster_queues"] = [{"name": "shared"}]
    scheduling["teams"] = [{**t, "cluster_queue": "shared"} for t in scheduling["teams"]]
    config[f"{NS}:scheduling"]["flavors"].append(
        {"pool": "l40s", "cpus_per_node": 64, "memory_gib_per_node": 512}
    )
    return config


DRA_CONFIGS = {DRA_STACK: _dra_config(), DRA_EXISTING_STACK: _dra_existing_config()}


def dra_config(stack: str) -> PlatformConfig:
    return parse_config({k.split(":", 1)[1]: v for k, v in DRA_CONFIGS[stack].items()}, stack)


@functools.cache
def dra_plan(stack: str) -> Plan:
    return project_plan(stack, {stack: DRA_CONFIGS[stack]})


# Moving staging's A100 EFA pool from the device plugin to DRA, a plan per step (issue 41 §1,
# plan/migration.py): staging with the self-test on, then a DRA group of the same instances
# beside it (from one node: no scale from zero with claims), then the shared queue's quota moved
# to it (staging's group already scales to zero, so its nodes go as they empty), then the old
# group removed.
MIGRATION_STACK = "staging"
DRA_GROUP = {
    "name": "a100-dra",
    "instance_types": ["p4d.24xlarge"],
    "efa": True,
    "zone": "us-east-1c",
    "gpu_allocation": "dra",
    "scaling": {"min_size": 1, "max_size": 2, "desired_size": 1},
}
# p4d.24xlarge: 8 GPUs (EC2 accelerated computing instance types), 2 nodes at most.
MOVED_QUOTA = {"cluster_queues": [{"name": "shared", "gpus": {"a100-efa": 0, "a100-dra": 16}}]}


def _migration_steps() -> list[dict]:
    shipped = stack_file_config(MIGRATION_STACK)
    # With the self-test's image, new nodes join tested (model/config/node_join.joins_tested).
    shipped[f"{NS}:selftest"] = {**shipped.get(f"{NS}:selftest", {}), "image": IMAGE}
    (old,) = shipped[f"{NS}:gpu_node_groups"]
    joined = {**shipped, f"{NS}:gpu_node_groups": [old, DRA_GROUP]}
    moved = {**joined, f"{NS}:scheduling": {**shipped.get(f"{NS}:scheduling", {}), **MOVED_QUOTA}}
    queue = {"name": "shared", "gpus": {"a100-dra": 16}}
    removed = {
        **moved,
        f"{NS}:gpu_node_groups": [DRA_GROUP],
        f"{NS}:scheduling": {**moved[f"{NS}:scheduling"], "cluster_queues": [queue]},
    }
    return [shipped, joined, moved, removed]


MIGRATION_STEPS = _migration_steps()


def migration_plan(step: int) -> Plan:
    return project_plan(MIGRATION_STACK, {MIGRATION_STACK: MIGRATION_STEPS[step]})


# The shipped manager (onprem) bursting to its worker (burst) where the worker has a pool on DRA
# (issue 41 §1/§2): MultiKueue copies only the JobSet to a worker, never the claim template or
# ComputeDomain submitted beside it (Kueue v0.19.2 pkg/controller/jobs/jobset/
# jobset_multikueue_adapter.go, SyncJob). In `dra-burst` the pool the burst's flavor selects
# (p5.48xlarge spot) moves to DRA; in `dra-beside` the worker keeps it and gains an A100 pool
# on DRA for its own jobs (from one node: no scale from zero with claims).
DRA_BURST_STACK = "dra-burst"
DRA_BESIDE_STACK = "dra-beside"


def _dra_worker(change) -> dict[str, dict]:
    """The onprem and burst stack files, burst's GPU groups changed by `change`."""
    worker = stack_file_config("burst")
    change(worker[f"{NS}:gpu_node_groups"])
    return {"onprem": stack_file_config("onprem"), "burst": worker}


def _spot_on_dra(groups: list[dict]) -> None:
    spot = next(g for g in groups if g["name"] == "h100-spot")
    spot.update(gpu_allocation="dra", scaling={"min_size": 1, "max_size": 2, "desired_size": 1})


def _dra_beside(groups: list[dict]) -> None:
    groups.append({**DRA_GROUP, "zone": "us-east-1b"})


# And in `gb200-burst` the worker is the GB200 stack, whose multi-node jobs each need a
# ComputeDomain: the manager's queue bursts to its p6e-gb200.36xlarge (one UltraServer's GPUs).
GB200_BURST_STACK = "gb200-burst"


def _gb200_worker() -> dict[str, dict]:
    manager = stack_file_config("onprem")
    burst = next(q for q in manager[f"{NS}:scheduling"]["cluster_queues"] if "burst" in q)
    burst["burst"].update(instance_type="p6e-gb200.36xlarge", capacity="capacity_block", gpus=72)
    worker = {
        **GB200_CONFIG,
        f"{NS}:scheduling": {
            "cluster_queues": [{"name": "burst"}],
            "teams": [{"name": "research", "cluster_queue": "burst"}],
        },
        f"{NS}:multikueue": {"serve_as_worker": True},
    }
    return {"onprem": manager, "burst": worker}


# Project name -> (the manager's stack, the project's stack files).
DRA_WORKER_PROJECTS = {
    DRA_BURST_STACK: ("onprem", _dra_worker(_spot_on_dra)),
    DRA_BESIDE_STACK: ("onprem", _dra_worker(_dra_beside)),
    GB200_BURST_STACK: ("onprem", _gb200_worker()),
}


# The fixture stacks every_aws_plan adds to the shipped ones: a test of a class that
# parametrizes by stack takes (*AWS_STACKS, *AWS_FIXTURES) and aws_plan(name).
AWS_FIXTURES = (
    VARIED_STACK,
    CAPACITY_STACK,
    WINDOW_STACK,
    GB200_STACK,
    FRANKFURT_STACK,
    EXISTING_VPC_STACK,
    DRA_STACK,
)
