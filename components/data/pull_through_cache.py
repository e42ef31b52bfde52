"""ECR pull-through cache rules (`images.pull_through_cache`): one rule a cached upstream
registry, in the stack's region, so a node pulls `registry.k8s.io/kueue/kueue:v0.19.2` as
`<account>.dkr.ecr.<region>.amazonaws.com/k8s/kueue/kueue:v0.19.2` (components/registry_mirror.py
rewrites every reference); the first pull of a tag goes upstream, later ones stay in the region
(ECR User Guide, pull-through-cache.html; ../shared/PINS.md, "Alternative 1").

The node role pulls: besides the read-only ECR policy every node has, it may import an upstream
image and create its repository under the rules' prefixes only (pull-through-cache-iam.html).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from model.config.images import PULL_THROUGH_UPSTREAMS, PullThroughCacheSettings
from model.config.regions import SUPPORTED_PARTITION

# The first pull of a tag creates its repository and imports the image as the puller
# (ECR User Guide, pull-through-cache-iam.html).
PULLER_ACTIONS = ("ecr:BatchImportUpstreamImage", "ecr:CreateRepository")


def rule_args(cache: PullThroughCacheSettings) -> list[aws.ecr.PullThroughCacheRuleArgs]:
    return [
        aws.ecr.PullThroughCacheRuleArgs(
            ecr_repository_prefix=PULL_THROUGH_UPSTREAMS[host].prefix,
            upstream_registry_url=PULL_THROUGH_UPSTREAMS[host].url,
            credential_arn=cache.credentials.get(host),
        )
        for host in cache.upstreams()
    ]


def puller_policy(cache: PullThroughCacheSettings, region: str) -> str:
    """The node role's inline policy: import and create under the rules' prefixes only."""
    repositories = [
        f"arn:{SUPPORTED_PARTITION}:ecr:{region}:{cache.account_id}:repository/"
        f"{PULL_THROUGH_UPSTREAMS[host].prefix}/*"
        for host in cache.upstreams()
    ]
    statement = {"Effect": "Allow", "Action": list(PULLER_ACTIONS), "Resource": repositories}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]}, sort_keys=True)


@dataclass(frozen=True)
class PullThroughCacheArgs:
    env: str
    cache: PullThroughCacheSettings


class PullThroughCache(PlatformComponent):
    """The stack's pull-through cache rules."""

    PLANE = "data"

    def __init__(
        self, name: str, args: PullThroughCacheArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        self.rules = [
            aws.ecr.PullThroughCacheRule(
                f"{args.env}-{rule.ecr_repository_prefix}", rule, self.child()
            )
            for rule in rule_args(args.cache)
        ]
        self.register_outputs({})
