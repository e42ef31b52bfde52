"""The preflight a team's or a recipe's multi-node job runs before it trains: the self-test's
`--checks preflight` (bootstrap/selftest/runner.py: the GPUs visible, every GPU computing what
the others do, small all-reduces across the group and within each node with every contribution
checked, NCCL's transport on the fabric), in the self-test's own image, as the init container
of every pod (components/scheduling/training_job.preflight_container). It reuses the self-test's
checks rather than copying them into each team's image, and is told what the pool promises as
the self-test is.

A node that fails is named in the pod's log (`preflight FAIL: node <node>: <checks>`) and the pod
fails before any rank trains, so a bad node costs the group seconds, not the GPU-hours of a run
that would hang on it. A fault of the node itself (its GPUs, devices, the all-reduce inside it)
is also the container's termination message, from which the platform's quarantine watcher
(components/selftest/access.py) taints and labels the node, so the restarted group lands
elsewhere (docs/training.md, "How a bad node is left out").

Without a self-test image (`selftest.image` unset) there is nothing to run: no preflight."""

from __future__ import annotations

import dataclasses

from components.registry_mirror import image_route, mirrored
from components.scheduling.job_spec import Preflight, TrainingJobSpec
from components.scheduling.training_job import fabric_devices
from components.selftest.job import fabric_devices as node_fabric_devices
from contract.env import (
    SELFTEST_EXPECTED_FABRIC_DEVICES,
    SELFTEST_EXPECTED_GPUS,
    SELFTEST_FABRIC,
    SELFTEST_IMAGE,
    SELFTEST_INSTANCE_TYPE,
    SELFTEST_OUT,
    SELFTEST_RUN_ID,
)
from model.config import PlatformConfig

# The init container's report: the writable /tmp of a read-only root, gone with the pod (its
# verdict is in the pod's log).
OUT = "/tmp/preflight"


def expected_fabric_devices(cfg: PlatformConfig, spec: TrainingJobSpec) -> int:
    """The EFA devices the pod is given (its share of the node's), or on RDMA pools every HCA
    the one shared RDMA device exposes, as the self-test counts them."""
    if spec.pool.efa_interfaces:
        return sum(fabric_devices(spec).values())
    return node_fabric_devices(cfg, spec.pool)


def preflight(cfg: PlatformConfig, spec: TrainingJobSpec) -> Preflight | None:
    """What the preflight of `spec`'s pods runs and expects: the GPUs and fabric devices each
    pod takes, on its pool's fabric."""
    image = mirrored(cfg.selftest.image, image_route(cfg))
    if image is None:
        return None
    env = {
        SELFTEST_RUN_ID: f"preflight-{spec.name}",
        SELFTEST_IMAGE: image,
        SELFTEST_OUT: OUT,
        SELFTEST_EXPECTED_GPUS: str(spec.gpus),
        SELFTEST_FABRIC: spec.pool.fabric,
        SELFTEST_EXPECTED_FABRIC_DEVICES: str(expected_fabric_devices(cfg, spec)),
        # The transport check reads NCCL's own log for a fallback to sockets.
        "NCCL_DEBUG": "INFO",
    }
    if spec.pool.instance_types:
        env[SELFTEST_INSTANCE_TYPE] = spec.pool.instance_types[0]
    return Preflight(image=image, env=env)


def with_preflight(cfg: PlatformConfig, spec: TrainingJobSpec) -> TrainingJobSpec:
    """`spec` with its preflight (the builder runs it only on jobs of more than one node)."""
    return dataclasses.replace(spec, preflight=preflight(cfg, spec))
