"""A stack of two teams on two pools, as an organisation adopting the platform has them: an
on-demand p4d pool and a spot g6 pool, a ClusterQueue per team in one cohort with borrowing and
lending limits (and a third that only lends), and fair sharing on, both across the queues and
among the LocalQueues (Kueue v0.19.2's fair sharing and admission fair sharing). Read straight
into the config model (`teams_config`), or planned as a stack file (`stack_file`)."""

from __future__ import annotations

import copy
from typing import Any

from model.config import PlatformConfig, parse_config

SOURCE = "stacks/Pulumi.teams.yaml"
# p4d.24xlarge: 8 A100 (AWS, "Amazon EC2 P4 instances"); g6.2xlarge: 1 L4 (AWS, "Amazon EC2 G6
# instances"). The dear pool first, so that config order alone would pick it.
RAW: dict[str, Any] = {
    "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
    "cluster": {"admin_principal_arns": ["arn:aws:iam::123456789012:role/admins"]},
    "gpu_node_groups": [
        {"name": "a100", "instance_types": ["p4d.24xlarge"], "scaling": {"max_size": 3}},
        {
            "name": "l4-spot",
            "instance_types": ["g6.2xlarge"],
            "capacity": "spot",
            "scaling": {"max_size": 4},
        },
    ],
    "scheduling": {
        "cluster_queues": [
            {
                "name": "vision",
                "gpus": {"a100": 8, "l4-spot": 2},
                "borrowing_limit": {"a100": 4},
                "fair_sharing_weight": 2,
            },
            {"name": "nlp", "gpus": {"a100": 8, "l4-spot": 2}, "lending_limit": {"a100": 2}},
            # No team: it only lends, and borrows for nobody.
            {"name": "batch", "gpus": {"a100": 4}},
        ],
        "teams": [
            {"name": "vision", "cluster_queue": "vision"},
            {"name": "nlp", "cluster_queue": "nlp"},
        ],
        "fair_sharing": {"enabled": True, "admission": {"team_weights": {"vision": 2}}},
    },
}


def raw(**changes: Any) -> dict[str, Any]:
    """RAW with `changes` set under scheduling (a deep copy)."""
    found = copy.deepcopy(RAW)
    found["scheduling"].update(copy.deepcopy(changes))
    return found


def teams_config(data: dict[str, Any] | None = None) -> PlatformConfig:
    return parse_config(copy.deepcopy(data or RAW), SOURCE)


def stack_file(data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The stack as its stack file holds it: every section under `gpu-platform:`."""
    return {f"gpu-platform:{k}": v for k, v in copy.deepcopy(data or RAW).items()}
