"""The account a stack names is the account `pulumi up` deploys to.

`images.pull_through_cache.account_id` is written into every image reference the cache serves
(`<account>.dkr.ecr.<region>.amazonaws.com/...`), while the rules themselves are created in the
account of the credentials `pulumi up` runs with: were the two different, every node would pull
from a registry without the rules. The model cannot see the credentials, so the program asks
STS, through the stack's own AWS provider, before it declares anything in the account.

The offline plan reads no credentials: its engine answers a placeholder for the account
(plan/engine.py, PlanMocks.call), and nothing is compared there.
"""

from __future__ import annotations

import re

import pulumi
import pulumi_aws as aws

from model.config import PlatformConfig

# STS GetCallerIdentity's Account: the 12-digit id (AWS STS API Reference, GetCallerIdentity).
_ACCOUNT = re.compile(r"[0-9]{12}")


class AnotherAccount(pulumi.RunError):
    """The stack names an account other than the one its credentials belong to. The Pulumi
    language host prints a RunError without a trace."""

    def __init__(self, source: str, problems: list[str]):
        self.source, self.problems = source, problems
        lines = [f"{source}: the stack names another AWS account than `pulumi up` runs in:"]
        lines += [f"  - {problem}" for problem in problems]
        lines.append(
            "Nothing was created in either account (only the stack's AWS provider, which read "
            "the credentials, was declared). Run `pulumi up` with credentials of the account the "
            "stack names (AWS_PROFILE, or the role CI assumes), or fix the stack file."
        )
        super().__init__("\n".join(lines))


def named_accounts(cfg: PlatformConfig) -> list[tuple[str, str]]:
    """(key path, account) for each key of the stack that must name the deploying account.
    The cache's credential secrets are already held to its account by the model."""
    cache = cfg.images.pull_through_cache
    return [] if cache is None else [("images.pull_through_cache.account_id", cache.account_id)]


def account_problems(cfg: PlatformConfig, deploying: str) -> list[str]:
    return [
        f"{path}: {account!r}, and the credentials `pulumi up` runs with belong to account "
        f"{deploying}; run it with credentials of {account}, or set {path} to {deploying!r} if "
        "the stack deploys there"
        for path, account in named_accounts(cfg)
        if account != deploying
    ]


def refuse_another_account(cfg: PlatformConfig, source: str, provider: aws.Provider) -> None:
    """Raises AnotherAccount where a key names an account the provider's credentials are not
    of. A blocking invoke, so that nothing after it is declared in the wrong account."""
    if not named_accounts(cfg):
        return
    answer = aws.get_caller_identity(opts=pulumi.InvokeOptions(provider=provider)).account_id
    if not _ACCOUNT.fullmatch(answer):
        return
    problems = account_problems(cfg, answer)
    if problems:
        raise AnotherAccount(source, problems)
