"""GPU settings applied at boot per GPU node group (compute mode, persistence, power limit,
application clocks), checked against the GPU model's limits in the instance catalog."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from model.catalog import InstanceType
from model.config.base import FieldProblem, Int, Settings


class ApplicationClocks(Settings):
    """One `nvidia-smi -ac <memory>,<graphics>` pair; the GPU accepts only pairs it lists in
    `nvidia-smi -q -d SUPPORTED_CLOCKS`."""

    # No GPU clock reaches 10 GHz; the instance catalog lists the valid pairs.
    memory_mhz: Int = Field(ge=1, le=10000, description="Memory clock, MHz.")
    graphics_mhz: Int = Field(ge=1, le=10000, description="Graphics (SM) clock, MHz.")


class GpuTuningSettings(Settings):
    """GPU settings `nvidia-smi` applies on every boot, before the kubelet starts."""

    compute_mode: Literal["default", "exclusive-process"] = Field(
        "default",
        description="`exclusive-process` (`nvidia-smi -c EXCLUSIVE_PROCESS`) lets one process "
        "hold each GPU: the one training process per GPU, or the MPS control daemon. Refused "
        "with time-slicing, which runs several processes on one GPU.",
    )
    persistence_mode: bool = Field(
        True,
        description="`nvidia-smi -pm 1`: keep the driver loaded with no client, so each pod "
        "start skips GPU initialisation and the settings below stay applied.",
    )
    power_limit_watts: Int | None = Field(
        None,
        ge=1,
        # No GPU's board limit reaches 2 kW (B300: 1,400 W); the catalog bounds each model.
        le=2000,
        description="`nvidia-smi -pl`: cap each GPU's board power; within the GPU model's "
        "range in the instance catalog. Default: the GPU's own default limit.",
    )
    application_clocks: ApplicationClocks | None = Field(
        None,
        description="`nvidia-smi -ac`: a memory,graphics clock pair the GPU model lists in "
        "the instance catalog. Default: the driver's.",
    )


def check_tuning(tuning: GpuTuningSettings, sharing_mode: str, rows: list[InstanceType]) -> None:
    """Refuse settings the group's GPUs or its sharing mode cannot take; paths are relative
    to the GPU node group."""
    if tuning.compute_mode == "exclusive-process" and sharing_mode == "time-slicing":
        # NVIDIA's MPS guide ("Starting MPS control daemon") sets the GPU EXCLUSIVE_PROCESS
        # before starting the daemon: "Exclusive-mode restrictions are applied to the MPS
        # server, not MPS clients". Time-slicing has no such server: each sharing pod's own
        # process opens the GPU, and all but the first would fail.
        raise FieldProblem(
            "gpu_tuning.compute_mode",
            "exclusive-process lets one process hold a GPU, but gpu_sharing.mode "
            "time-slicing runs several processes on it; use compute_mode default, or "
            "gpu_sharing.mode mps",
        )
    for row in rows:
        limits = row.gpu_limits
        watts = tuning.power_limit_watts
        if watts is not None and not (
            limits and limits.min_power_watts <= watts <= limits.max_power_watts
        ):
            allowed = (
                f"{limits.min_power_watts} to {limits.max_power_watts} W"
                if limits
                else "no power limit (no range recorded in the catalog)"
            )
            raise FieldProblem(
                "gpu_tuning.power_limit_watts",
                f"{watts} W is outside {row.name}'s {row.gpu_model} range: {allowed}",
            )
        clocks = tuning.application_clocks
        if clocks is None:
            continue
        pairs = limits.application_clocks if limits else ()
        if not pairs:
            raise FieldProblem(
                "gpu_tuning.application_clocks",
                f"the catalog lists no application clocks for {row.name}'s "
                f"{row.gpu_model}; leave application_clocks unset",
            )
        if (clocks.memory_mhz, clocks.graphics_mhz) not in pairs:
            listed = ", ".join(f"memory_mhz {m}, graphics_mhz {g}" for m, g in pairs)
            raise FieldProblem(
                "gpu_tuning.application_clocks",
                f"memory_mhz {clocks.memory_mhz}, graphics_mhz {clocks.graphics_mhz} is "
                f"not a pair {row.name}'s {row.gpu_model} lists; valid: {listed}",
            )
