"""The bounds the real systems put on the numbers the config model takes, and those bounds in
JSON Schema's words. tests/model/test_config_bounds.py fails on a number field without both
bounds."""

from __future__ import annotations

from typing import Any

# Kubernetes API int32 fields: replicas, HPA min/maxReplicas, KEDA's cooldownPeriod, the
# kubelet's maxPods.
INT32_MAX = 2**31 - 1
# Kubernetes "Considerations for large clusters": no more than 5,000 nodes per cluster.
MAX_CLUSTER_NODES = 5000
# EBS user guide, "Amazon EBS volume types": a gp3 volume holds 1 GiB to 16 TiB.
GP3_MAX_GIB = 16384
# No GPU sold holds more than 288 GB (NVIDIA B300, AMD MI355X): this bounds a typo (80000 for 80)
# with room for the next generations.
MAX_GPU_MEMORY_GIB = 1024
# A week, in minutes: the longest wait a platform timer takes (GPU repair waits, scale-down).
WEEK_MINUTES = 10080
# A training run's counts (steps, batch, seeds): torch's generators take a seed below 2**63 as
# int64 (torch.Generator.manual_seed); the other counts the same bound, far past any run.
INT64_MAX = 2**63 - 1
# Linux PID_MAX_LIMIT (include/linux/threads.h, 2**22): no node runs more processes.
MAX_PROCESSES = 2**22


# pydantic writes the bounds of an optional number (`Int | None = Field(None, ge=1)`) as its
# own ge / le, which no JSON Schema reader knows: editors would take any number.
JSON_SCHEMA_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum",
                      "lt": "exclusiveMaximum"}  # fmt: skip


def standard_bounds(schema: Any) -> None:
    """Every number of a model's schema, in its unions, maps and lists too, with JSON Schema's
    minimum / maximum for pydantic's ge / le."""
    if isinstance(schema, list):
        for item in schema:
            standard_bounds(item)
    elif isinstance(schema, dict):
        if schema.get("type") in ("integer", "number"):
            for ours, standard in JSON_SCHEMA_BOUNDS.items():
                if ours in schema:
                    schema[standard] = schema.pop(ours)
        for value in schema.values():
            standard_bounds(value)
