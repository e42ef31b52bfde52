"""The self-test's all-reduce bus-bandwidth floors in GB/s (GB = 1e9), one table the program
(model/config/selftest.py, which hands a run its floors) and the image (bootstrap/selftest, run
with only an instance type) both read. The figures are shared/FACTS.md's, "Self-test numbers":
nccl-tests all_reduce_perf within one 8-GPU node per GPU model, and across two nodes per
instance type at 2 GiB messages."""

from __future__ import annotations

SOURCE = 'shared/FACTS.md, "Self-test numbers"'
INTRA_NODE_BUSBW_GBPS: dict[str, float] = {"A100": 228.0, "H100": 460.0, "H200": 431.0}
INTER_NODE_BUSBW_GBPS: dict[str, float] = {"p4de.24xlarge": 78.0, "p5.48xlarge": 444.0}
# The GPU model of each 8-GPU instance type a run may name without the program's catalog (the
# image has none; tests/repo/test_contract.py holds it to model/catalog.py).
GPU_MODEL_OF: dict[str, str] = {
    "p4d.24xlarge": "A100",
    "p4de.24xlarge": "A100",
    "p5.48xlarge": "H100",
    "p5e.48xlarge": "H200",
    "p5en.48xlarge": "H200",
}


def busbw_floor(scope: str, instance_type: str | None) -> float | None:
    """The FACTS.md floor for an 'intra' or 'inter' node all-reduce on `instance_type`."""
    if scope == "intra":
        return INTRA_NODE_BUSBW_GBPS.get(GPU_MODEL_OF.get(instance_type or "", ""))
    return INTER_NODE_BUSBW_GBPS.get(instance_type or "")
