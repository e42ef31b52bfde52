"""The cluster-autoscaler's config (provider aws): which node group it grows first, and how
soon it gives nodes back. The node groups it scales are in `nodes`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from model.config.base import Int, Settings
from model.config.bounds import WEEK_MINUTES
from model.config.nodes import CapacityType


class AutoscalerSettings(Settings):
    """cluster-autoscaler (provider aws): scales every node group, GPU groups from zero."""

    enabled: bool = Field(True, description="Deploy cluster-autoscaler.")
    # cluster-autoscaler's priority expander reads its ConfigMap's priorities as Go ints
    # (expander/priority/priority.go); the platform writes them as 1 to 100.
    priorities: dict[CapacityType, Annotated[Int, Field(ge=1, le=100)]] = Field(
        default_factory=lambda: {
            "capacity_block": 40,
            "reservation": 30,
            "on_demand": 20,
            "spot": 10,
        },
        description="Priority expander: when several groups fit a pending pod, the highest "
        "wins. Default: reserved capacity (already paid for), then on-demand, then spot.",
    )
    scale_down_delay_after_add_minutes: Int = Field(
        10, ge=0, le=WEEK_MINUTES, description="No scale-down this long after any scale-up."
    )
