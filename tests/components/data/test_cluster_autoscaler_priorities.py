"""The priority expander's ranking of capacity kinds (STYLE.md §14-16): the default every stack
gets, read from the model and pinned as literals, every capacity kind ranked in the rendered
values (the shipped stacks use only three of the four), and a stack's own ranking followed.
docs/config.md prints the default table too; regenerating it would bless a changed one, so
these tests, not the page, guard it."""

from __future__ import annotations

import pytest

from components.data.cluster_autoscaler import helm_values
from model.config import parse_config
from tests.conftest import AWS_STACKS, find, planned, stack_config
from tests.helpers.bad_stacks import ADMIN

# One group per capacity kind, all in one zone (a reservation and a Capacity Block each
# target one zone's capacity).
GROUPS = [
    {"name": "block", "instance_types": ["p5.48xlarge"], "capacity": "capacity_block",
     "capacity_reservation_id": "cr-0a1b2c3d4e5f60718", "zone": "us-east-1b"},
    {"name": "odcr", "instance_types": ["p5.48xlarge"], "capacity": "reservation",
     "capacity_reservation_id": "cr-0f1e2d3c4b5a69788", "zone": "us-east-1b"},
    {"name": "ondemand", "instance_types": ["p5.48xlarge"], "zone": "us-east-1b"},
    {"name": "spare", "instance_types": ["p5.48xlarge"], "capacity": "spot", "zone": "us-east-1b"},
]  # fmt: skip


def every_kind(**autoscaler):
    raw = {
        "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "cluster": {"admin_principal_arns": [ADMIN]},
        "gpu_node_groups": GROUPS,
    }
    if autoscaler:
        raw["autoscaler"] = autoscaler
    return parse_config(raw, "stacks/Pulumi.t.yaml")


def expander_priorities_of(cfg) -> dict[str, list[str]]:
    values = helm_values(
        "t", "gpu-platform-t", "us-east-1", cfg.cluster.kubernetes_version,
        cfg.gpu_node_groups, cfg.autoscaler,
    )  # fmt: skip
    return values["expanderPriorities"]


def test_the_default_ranks_capacity_block_then_reservation_then_on_demand_then_spot():
    # The platform's promise (docs/gpu-nodes.md, "Autoscaling": Capacity Block, then
    # reservation, then on-demand, then spot): reserved capacity is paid for, used or not.
    # cluster-autoscaler expander/priority/priority.go: the highest number wins.
    assert every_kind().autoscaler.priorities == {
        "capacity_block": 40,
        "reservation": 30,
        "on_demand": 20,
        "spot": 10,
    }


def test_every_capacity_kind_is_ranked_in_the_rendered_values():
    # cluster-autoscaler expander/priority/readme.md: the ConfigMap maps a priority to the ASG
    # name regexes it covers; anything unmatched must fall under ".*" at the lowest level, or
    # the expander has no option for the system group. EKS names an ASG eks-<node group>-<id>.
    assert expander_priorities_of(every_kind()) == {
        "40": ["^eks-t-block-.*"],
        "30": ["^eks-t-odcr-.*"],
        "20": ["^eks-t-ondemand-.*"],
        "10": ["^eks-t-spare-.*"],
        "0": [".*"],
    }


def test_a_stack_that_prefers_spot_gets_its_own_ranking_and_the_defaults_for_the_rest():
    # Naming two kinds used to replace the whole table: the Capacity Block and reservation
    # groups had no level, and the plan stopped on a KeyError in expander_priorities.
    cfg = every_kind(priorities={"spot": 50, "on_demand": 5})
    assert expander_priorities_of(cfg) == {
        "50": ["^eks-t-spare-.*"],
        "40": ["^eks-t-block-.*"],
        "30": ["^eks-t-odcr-.*"],
        "5": ["^eks-t-ondemand-.*"],
        "0": [".*"],
    }


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_shipped_gpu_group_sits_at_its_capacity_kinds_default_level(stack):
    values = find(
        planned(stack), "kubernetes:helm.sh/v3:Release", f"{stack}-cluster-autoscaler"
    ).inputs["values"]
    # The defaults above, as literals: no shipped stack sets its own table.
    default = {"capacity_block": "40", "reservation": "30", "on_demand": "20", "spot": "10"}
    for group in stack_config(stack).gpu_node_groups:
        pattern = f"^eks-{stack}-{group.name}-.*"
        levels = [lvl for lvl, p in values["expanderPriorities"].items() if pattern in p]
        assert levels == [default[group.capacity]], (group.name, group.capacity)
