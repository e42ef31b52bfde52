"""The account a stack names is the one `pulumi up` deploys to (infra/deploying_account.py):
with credentials of another account the program stops before it declares anything in it, and
says which key, which account it names, whose credentials these are and what to do; with the
named account's credentials it declares the stack; the offline plan, which reads no
credentials, compares nothing."""

from __future__ import annotations

import pulumi

from infra.deploying_account import account_problems, named_accounts
from model.config import PlatformConfig
from model.stacks import read_project
from plan.engine import PlanMocks, Recording, record
from tests.conftest import make_project, project_plan
from tests.helpers.cache_stacks import ACCOUNT, STACK, config_of
from tools.config_docs import _rows

CALLER_IDENTITY = "aws:index/getCallerIdentity:getCallerIdentity"
# AWS documentation's example accounts (IAM User Guide): the stack's, and another.
OTHER_ACCOUNT = "444455556666"


def _run_as(account: str, tmp_path, monkeypatch) -> tuple[Recording, BaseException | None]:
    """The cache stack's program, under the mock engine, with credentials of `account`: STS
    answers it, as it answers `pulumi up` (AWS STS API Reference, GetCallerIdentity)."""
    offline = PlanMocks.call

    def call(self, args):
        if args.token == CALLER_IDENTITY:
            return {
                "accountId": account,
                "arn": f"arn:aws:sts::{account}:assumed-role/deployer/ci",
                "userId": "AROAEXAMPLE:ci",
                "id": account,
            }
        return offline(self, args)

    monkeypatch.setattr(PlanMocks, "call", call)
    project = read_project(make_project(tmp_path, {"ptc": STACK}))
    recording = Recording(stack="ptc", project=project.name)
    try:
        record(project, recording)
    except pulumi.RunError as error:  # what the language host prints without a trace
        return recording, error
    return recording, None


def test_credentials_of_another_account_declare_nothing_in_it_and_say_why(tmp_path, monkeypatch):
    recording, error = _run_as(OTHER_ACCOUNT, tmp_path, monkeypatch)
    assert error is not None, "the program declared the stack with another account's credentials"
    message = str(error)
    assert message.startswith("stacks/Pulumi.ptc.yaml: the stack names another AWS account")
    assert (
        f"  - images.pull_through_cache.account_id: '{ACCOUNT}', and the credentials `pulumi up` "
        f"runs with belong to account {OTHER_ACCOUNT}; run it with credentials of {ACCOUNT}, or "
        f"set images.pull_through_cache.account_id to '{OTHER_ACCOUNT}'"
    ) in message
    # The provider the credentials were read through, and nothing in the account.
    declared = {r.type for r in recording.resources.values() if r.custom}
    assert declared == {"pulumi:providers:aws"}


def test_credentials_of_the_named_account_declare_the_stack(tmp_path, monkeypatch):
    recording, error = _run_as(ACCOUNT, tmp_path, monkeypatch)
    assert error is None
    types = {r.type for r in recording.resources.values()}
    assert "aws:ecr/pullThroughCacheRule:PullThroughCacheRule" in types


def test_the_offline_plan_reads_no_account_and_compares_none():
    """`python -m plan`'s engine answers a placeholder for the account (plan/engine.py), not
    an account: the cache stack plans whatever account it names."""
    plan = project_plan("ptc", {"ptc": STACK})
    assert plan.of_type("aws:ecr/pullThroughCacheRule:PullThroughCacheRule")


# Every key of the config model whose value names an AWS account (a "12-digit" account in its
# shape, docs/config.md), and whether `pulumi up` must run in that account.
MUST_BE_THE_DEPLOYING_ACCOUNT = {
    # ECR User Guide, pull-through-cache.html: a rule caches into the private registry of the
    # account that creates it, the registry the rewritten references name.
    "images.pull_through_cache.account_id": True,
    # EKS User Guide, creating-access-entries.html: a STANDARD access entry's ARN "can be in the
    # same, or different, AWS account than the account that your cluster is in".
    "cluster.admin_principal_arns": False,
    "scheduling.teams[].access[].principal_arns": False,
    # KMS Developer Guide, "Allowing users in other accounts to use a KMS key": the key's
    # policy admits another account.
    "cluster.log_kms_key_arn": False,
    "network.flow_log_kms_key_arn": False,
    "storage.fsx.kms_key_arn": False,
    # EC2 User Guide, create-cr-group.html: a group gathers reservations the account owns and
    # ones other accounts share with it; whose group a launch may target is not said there.
    "gpu_node_groups[].capacity_reservation_group_arn": False,
}


def test_every_key_that_names_an_account_says_whether_it_must_be_the_deploying_one():
    shaped = {
        path.strip("`")
        for path, _, _, _, constraint, _ in _rows(PlatformConfig, "")
        if "12-digit" in constraint
    }
    assert shaped == set(MUST_BE_THE_DEPLOYING_ACCOUNT)


def test_only_the_keys_that_must_name_the_deploying_account_are_compared():
    """The cache stack's admin role is in another account than its cache (bad_stacks.ADMIN):
    an access entry may be, so only the cache's account is compared."""
    cfg = config_of("ptc")
    assert cfg.cluster.admin_principal_arns[0].split(":")[4] != ACCOUNT
    compared = {path for path, _ in named_accounts(cfg)}
    assert compared == {k for k, must in MUST_BE_THE_DEPLOYING_ACCOUNT.items() if must}
    assert account_problems(cfg, ACCOUNT) == []
    assert len(account_problems(cfg, OTHER_ACCOUNT)) == 1
