"""Stacks whose teams have people (scheduling.teams[].access), planned once per test process:
on AWS, IAM roles of two teams, one of them in both with a different role in each; on an
existing cluster, its authenticator's groups, with namespaces the cluster already has."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from model.config import PlatformConfig
from plan.model import Plan
from tests.conftest import STACKS, make_project, planned, project_plan, stack_config
from tests.helpers.bad_stacks import GROUP, NS, aws, existing
from tests.helpers.brownfield_stacks import BROWNFIELD_STACKS, brownfield_config, brownfield_plan
from tests.helpers.varied_stacks import DRA_CONFIGS, DRA_STACK, GB200_CONFIG

ACCOUNT = "123456789012"
LLM_ENGINEERS = f"arn:aws:iam::{ACCOUNT}:role/llm-engineers"
# An IAM Identity Center permission set's role (IAM Identity Center user guide, "Referencing
# permission sets in resource policies ...": role/aws-reserved/sso.amazonaws.com/<region>/).
LLM_SSO = (
    f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/eu-central-1/"
    "AWSReservedSSO_LlmTeam_0123456789abcdef"
)
VISION_ENGINEERS = f"arn:aws:iam::{ACCOUNT}:role/vision-engineers"
# Reads llm's namespace, edits vision's: one access entry, one association per role.
AUDITORS = f"arn:aws:iam::{ACCOUNT}:role/auditors"

AWS_TEAMS = [
    {
        "name": "llm",
        "access": [
            {"role": "edit", "principal_arns": [LLM_ENGINEERS, LLM_SSO]},
            {"role": "view", "principal_arns": [AUDITORS]},
        ],
    },
    {"name": "vision", "access": [{"principal_arns": [VISION_ENGINEERS, AUDITORS]}]},
]

ONPREM_TEAMS = [
    {"name": "llm", "access": [{"groups": ["oidc:llm-engineers"]}]},
    {
        "name": "vision",
        "access": [
            {"groups": ["oidc:vision-engineers"]},
            {"role": "view", "groups": ["oidc:auditors"]},
        ],
    },
]
# Namespaces the existing cluster already has: the training namespace and one team's.
ADOPTED = ["training", "vision"]

AWS_TEAMS_STACK = "teams-aws"
ONPREM_TEAMS_STACK = "teams-onprem"


def aws_teams_config() -> dict:
    """The smallest AWS stack with a GPU pool, and two teams with people."""
    return aws(gpu_node_groups=[GROUP], scheduling={"teams": AWS_TEAMS})


def onprem_teams_config() -> dict:
    """The smallest existing-cluster stack, with two teams' groups and namespaces it has."""
    config = existing(scheduling={"teams": ONPREM_TEAMS})
    config[f"{NS}:existing"] = {**config[f"{NS}:existing"], "namespaces": ADOPTED}
    return config


TEAM_STACKS = (AWS_TEAMS_STACK, ONPREM_TEAMS_STACK)

# The AWS teams on the pools whose jobs are applied with more than their JobSet: the DRA
# fixture's (a claim template of the job's own) and the GB200 stack's (a ComputeDomain).
CLAIMS_TEAMS_STACK = "teams-dra"
DOMAIN_TEAMS_STACK = "teams-gb200"
BESIDE_TEAM_STACKS = (CLAIMS_TEAMS_STACK, DOMAIN_TEAMS_STACK)


def _with_aws_teams(config: dict) -> dict:
    return {
        **config,
        f"{NS}:scheduling": {**config.get(f"{NS}:scheduling", {}), "teams": AWS_TEAMS},
    }


def _stacks() -> dict[str, dict]:
    return {
        AWS_TEAMS_STACK: aws_teams_config(),
        ONPREM_TEAMS_STACK: onprem_teams_config(),
        CLAIMS_TEAMS_STACK: _with_aws_teams(DRA_CONFIGS[DRA_STACK]),
        DOMAIN_TEAMS_STACK: _with_aws_teams(GB200_CONFIG),
    }


@functools.cache
def _root() -> Path:
    return make_project(Path(tempfile.mkdtemp(prefix="teams-")), _stacks())


@functools.cache
def team_plan(stack: str) -> Plan:
    return project_plan(stack, _stacks())


def team_config(stack: str) -> PlatformConfig:
    return stack_config(stack, _root())


# Every stack file found and the fixtures above: for the tests that enumerate what stacks
# declare, so that the team access and adopted namespaces no shipped stack has are covered.
# The shipped stacks, the team fixtures and the brownfield ones (a cluster with its own
# add-ons, storage and namespaces).
STACKS_AND_TEAMS = (*STACKS, *TEAM_STACKS, *BROWNFIELD_STACKS)


def plan_of(stack: str) -> Plan:
    if stack in BROWNFIELD_STACKS:
        return brownfield_plan(stack)
    return team_plan(stack) if stack in TEAM_STACKS else planned(stack)


def config_of(stack: str) -> PlatformConfig:
    if stack in BROWNFIELD_STACKS:
        return brownfield_config(stack)
    return team_config(stack) if stack in TEAM_STACKS else stack_config(stack)
