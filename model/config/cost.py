"""The cost estimate's settings (`gpu-platform:cost`): the stack's monthly budget and the
assumptions the estimate cannot take from a price list. Prices themselves live in the catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import BeforeValidator, Field

from model.config.base import FieldProblem, InstanceTypeName, Int, Settings

if TYPE_CHECKING:
    from model.config import PlatformConfig


def _not_a_boolean(value: object) -> object:
    # pydantic reads true as 1.0; `spot_discount: true` is a mistake, never a number.
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a boolean; give a number, e.g. 0.6")
    return value


# A price or a fraction: a number, or a string holding one, never a boolean.
Number = Annotated[float, BeforeValidator(_not_a_boolean)]


class CostSettings(Settings):
    """What the plan's cost estimate assumes, and the budget it checks the stack against."""

    monthly_budget_usd: Number | None = Field(
        None,
        gt=0,
        le=1e12,
        description="The stack's monthly budget in USD. The plan warns when the estimate at the "
        "node groups' max size exceeds it. Default: no budget, no check (provider aws only).",
    )
    spot_discount: Number = Field(
        0.6,
        ge=0,
        lt=1,
        description="Assumed spot discount off the on-demand rate (0.6: spot at 40% of "
        "on-demand). An assumption, not a price: spot prices move by zone and hour; AWS "
        "advertises 'up to 90%' off.",
    )
    hours_per_month: Int = Field(
        730,
        ge=1,
        le=744,
        description="Hours in a month of the estimate; 730 is the average month (8,760 h / 12) "
        "the AWS Pricing Calculator uses.",
    )
    capacity_block_hourly_usd: dict[InstanceTypeName, Annotated[Number, Field(gt=0, le=1e6)]] = (
        Field(
            default_factory=dict,
            description="Reservation fee per instance-hour of the Capacity Blocks bought, by "
            "instance type; it replaces the catalog's indicative rate, and prices a type the "
            "catalog has no rate for.",
        )
    )


def check_cost(cfg: PlatformConfig) -> None:
    if cfg.provider != "aws" and "monthly_budget_usd" in cfg.cost.model_fields_set:
        raise FieldProblem(
            "cost.monthly_budget_usd",
            "only valid with provider aws: the estimate has no prices for an existing "
            "cluster's own machines, so there is nothing to check a budget against",
        )
    for i, team in enumerate(cfg.scheduling.teams):
        if team.monthly_budget_usd is not None and cfg.provider != "aws":
            raise FieldProblem(
                f"scheduling.teams[{i}].monthly_budget_usd",
                f"only valid with provider aws: team {team.name}'s GPU-hours are counted on an "
                "existing cluster, but its pools have no price to spend a budget in",
            )
