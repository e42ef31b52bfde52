"""The cluster-autoscaler's config (provider aws): which node group it grows first, and how
soon it gives nodes back. The node groups it scales are in `nodes`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from model.config.base import Int, Settings
from model.config.bounds import WEEK_MINUTES
from model.config.nodes import CapacityType

# Reserved capacity (already paid for), then on-demand, then spot.
DEFAULT_PRIORITIES: dict[str, int] = {
    "capacity_block": 40,
    "reservation": 30,
    "on_demand": 20,
    "spot": 10,
}


class AutoscalerSettings(Settings):
    """cluster-autoscaler (provider aws): scales every node group, GPU groups from zero."""

    enabled: bool = Field(True, description="Deploy cluster-autoscaler.")
    # cluster-autoscaler's priority expander reads its ConfigMap's priorities as Go ints
    # (expander/priority/priority.go); the platform writes them as 1 to 100.
    priorities: dict[CapacityType, Annotated[Int, Field(ge=1, le=100)]] = Field(
        default_factory=lambda: dict(DEFAULT_PRIORITIES),
        description="Priority expander: when several groups fit a pending pod, the highest "
        "wins. Default: reserved capacity (already paid for), then on-demand, then spot. A "
        "stack's table sets the kinds it names; the others keep their default.",
    )
    scale_down_delay_after_add_minutes: Int = Field(
        10, ge=0, le=WEEK_MINUTES, description="No scale-down this long after any scale-up."
    )

    @field_validator("priorities")
    @classmethod
    def _every_kind_ranked(cls, value: dict[str, int]) -> dict[str, int]:
        # Every capacity kind needs a level: a group of a kind the table left out would have
        # none, and the plan would stop on it long after the config was read.
        return {**DEFAULT_PRIORITIES, **value}
