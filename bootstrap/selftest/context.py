"""What a self-test run knows about where it runs: its rank in the job, its device, the volumes
to test, what the GPU pool promises and the floors to hold it to."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from contract.env import (
    NODE_NAME,
    SELFTEST_NVME_CACHE,
    SELFTEST_OUT,
    SELFTEST_RUN_ID,
    SELFTEST_SHARED_DATA,
)
from contract.mounts import NVME_CACHE_MOUNT_PATH, SHARED_DATA_MOUNT_PATH

# Test-only fault injection into a spawned run: comma-separated fault names, each for every rank
# or, as `name@rank`, for one (`sdc-compute@1,sdc-allreduce@2`). The program never sets it; the
# image-tier tests do (tests/image/selftest/test_sdc.py).
INJECT_FAULTS = "SELFTEST_INJECT_FAULTS"


def injected_faults(text: str, rank: int) -> tuple[str, ...]:
    """The faults `SELFTEST_INJECT_FAULTS` injects into `rank`."""
    faults = []
    for entry in filter(None, (e.strip() for e in text.split(","))):
        name, _, only = entry.partition("@")
        if not only or int(only) == rank:
            faults.append(name)
    return tuple(faults)


@dataclass
class SelfTestContext:
    run_id: str
    rank: int
    world_size: int
    local_rank: int
    # "cuda" with NCCL on GPU nodes, "cpu" with gloo elsewhere.
    device: str
    # Where the report goes (shared storage in the cluster, out/selftest/ here).
    out_dir: Path
    # The storage plane's volumes; a missing one is a FAIL of its own checks only.
    shared_data: Path
    nvme_cache: Path
    image: str = "local"
    nodes: int = 1
    # What the GPU pool promises per node (0 on CPU): GPUs, EFA or RDMA devices.
    expected_gpus: int = 0
    # The instance catalog's GPU count for `instance_type`, when the Job knows it.
    catalog_gpus: int | None = None
    expected_fabric_devices: int = 0
    fabric: str = "tcp"
    instance_type: str | None = None
    # Thresholds, by name; each carries its source in `floor_sources`.
    floors: dict[str, float] = field(default_factory=dict)
    floor_sources: dict[str, str] = field(default_factory=dict)
    dcgm_exporter_url: str | None = None
    prometheus_url: str | None = None
    # Whether the GPU autoscalers' metric must be served for this run's own pod.
    autoscaler_metric: bool = False
    # The node's DCGM host engine (host[:port]) for `dcgmi diag`; None skips it.
    dcgm_hostengine: str | None = None
    # Its diagnostic's level (contract/dcgm.py) where the run sets one; None: the check set's.
    dcgm_level: int | None = None
    # "short" (the periodic run: DCGM diag level 1, 5 s fio runs) or "full" (level 2, 20 s).
    check_set: str = "full"
    # The Kubernetes node this rank runs on (downward API NODE_NAME), else the host's name.
    node: str = field(default_factory=lambda: os.environ.get(NODE_NAME) or os.uname().nodename)
    # Seconds to wait for every rank to join before the run reports the missing ones.
    join_timeout_s: float = 60.0
    # Storage check sizes: one sequential file of `storage_bytes`, then `small_files` 4 KiB files.
    storage_bytes: int = 64 * 1024 * 1024
    small_files: int = 200
    # Faults the tests inject into a real run, by name, for this rank (training knows
    # "corrupt-checkpoint", agreement "sdc-compute", collectives "sdc-allreduce").
    faults: tuple[str, ...] = ()

    @property
    def is_rank0(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls, **overrides) -> SelfTestContext:
        """torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK), then the given settings."""
        env = os.environ
        values = {
            "run_id": env.get(SELFTEST_RUN_ID, "local"),
            "rank": int(env.get("RANK", "0")),
            "world_size": int(env.get("WORLD_SIZE", "1")),
            "local_rank": int(env.get("LOCAL_RANK", "0")),
            "device": "cpu",
            "out_dir": Path(env.get(SELFTEST_OUT, "out/selftest")),
            "shared_data": Path(env.get(SELFTEST_SHARED_DATA, SHARED_DATA_MOUNT_PATH)),
            "nvme_cache": Path(env.get(SELFTEST_NVME_CACHE, NVME_CACHE_MOUNT_PATH)),
        }
        values["faults"] = injected_faults(env.get(INJECT_FAULTS, ""), values["rank"])
        values.update(overrides)
        return cls(**values)
