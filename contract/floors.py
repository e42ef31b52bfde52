"""The self-test's all-reduce bus-bandwidth floors in GB/s (GB = 1e9), one table the program
(model/config/selftest.py, which hands a run its floors) and the image (bootstrap/selftest, run
with only an instance type) both read. The figures are shared/FACTS.md's, "Self-test numbers":
nccl-tests all_reduce_perf within one 8-GPU node per GPU model, and across two nodes per
instance type at 2 GiB messages. Inside one multi-node NVLink domain (GB200 NVL72) the floor
across nodes is the NVLink one, derived from the datasheet figure (`nvlink_busbw_floor`)."""

from __future__ import annotations

SOURCE = 'shared/FACTS.md, "Self-test numbers"'
INTRA_NODE_BUSBW_GBPS: dict[str, float] = {"A100": 228.0, "H100": 460.0, "H200": 431.0}
INTER_NODE_BUSBW_GBPS: dict[str, float] = {"p4de.24xlarge": 78.0, "p5.48xlarge": 444.0}
# All-reduce over NVLink reaches, per GPU, the share of the datasheet's NVLink bandwidth that the
# H100 floor above does: 460 GB/s (FACTS.md, one 8-GPU node, where the all-reduce runs over
# NVLink only) of H100 SXM's 900 GB/s (NVIDIA H100 Tensor Core GPU datasheet, "NVIDIA NVLink:
# 900GB/s").
H100_NVLINK_GBPS = 900.0
NVLINK_SOURCE = (
    f"{SOURCE}: the H100 floor {INTRA_NODE_BUSBW_GBPS['H100']:g} GB/s over H100's datasheet "
    f"NVLink {H100_NVLINK_GBPS:g} GB/s, times the type's NVLink per GPU"
)
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


def nvlink_busbw_floor(nvlink_gbps_per_gpu: float) -> float:
    """The all-reduce busbw floor (GB/s) across nodes of one NVLink domain whose GPUs each have
    `nvlink_gbps_per_gpu` of NVLink (the datasheet's figure, both directions as NVIDIA counts
    it for H100 and GB200 alike)."""
    return round(nvlink_gbps_per_gpu * INTRA_NODE_BUSBW_GBPS["H100"] / H100_NVLINK_GBPS, 1)
