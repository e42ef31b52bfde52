"""The alert tests' stacks and promtool runner, shared by the rule, fleet and dashboard tests
(tests/components/observability/): an AWS stack per way of sharing a GPU, one whose self-test
runs on a schedule, and `promtool test rules` of a cases file against generated rules."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from model.config import PlatformConfig
from tests.helpers.bad_stacks import ADMIN, GROUP
from tests.helpers.tools import promtool

# One A100 group per way of sharing a GPU that the promtool cases hold nodes of: whole GPUs,
# time-slicing 4, MPS 2, MIG single (the cluster's one MIG strategy; mixed has its own file).
SHARING_GROUPS = [
    GROUP,
    {**GROUP, "name": "a100-ts", "gpu_sharing": {"mode": "time-slicing", "replicas": 4}},
    {**GROUP, "name": "a100-mps", "gpu_sharing": {"mode": "mps", "replicas": 2}},
    {**GROUP, "name": "a100-mig", "gpu_sharing": {"mode": "mig"}},
]
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest@sha256:" + "0" * 64


def aws_config(groups=SHARING_GROUPS, mig_strategy="single", **alerts) -> PlatformConfig:
    """An AWS stack with the given GPU groups, MIG strategy and alert settings, defaults
    elsewhere."""
    return PlatformConfig.model_validate(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": groups,
            "gpu_operator": {"mig_strategy": mig_strategy},
            "alerts": alerts,
        }
    )


def budget_config() -> PlatformConfig:
    """One on-demand p4d.24xlarge pool in us-east-1 and a team `vision` with a monthly budget
    of $250: the team cost rules' promtool cases (tests/promtool/team_cost_test.yaml)."""
    return PlatformConfig.model_validate(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [GROUP],
            "scheduling": {"teams": [{"name": "vision", "monthly_budget_usd": 250}]},
        }
    )


def scheduled_config(groups=(GROUP,), **alerts) -> PlatformConfig:
    """An AWS stack with an image, so its self-test runs on a schedule and pushes results."""
    return PlatformConfig.model_validate(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": list(groups),
            "selftest": {"image": IMAGE},
            "alerts": alerts,
        }
    )


def promtool_cases(tmp_path, rules: dict, cases: Path) -> subprocess.CompletedProcess:
    """`promtool test rules` of `cases` (which reads rules.yaml) against `rules`."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    shutil.copy(cases, tmp_path / "alerts_test.yaml")
    return subprocess.run(
        [promtool(), "test", "rules", "alerts_test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
