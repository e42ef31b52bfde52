"""ECR pull-through cache rules (`images.pull_through_cache`): one rule a cached upstream
registry, in the stack's region, so a node pulls `registry.k8s.io/kueue/kueue:v0.19.2` as
`<account>.dkr.ecr.<region>.amazonaws.com/k8s/kueue/kueue:v0.19.2` (components/registry_mirror.py
rewrites every reference); the first pull of a tag goes upstream, later ones stay in the region
(ECR User Guide, pull-through-cache.html; ../shared/PINS.md, "Alternative 1").

The node role pulls: besides the read-only ECR policy every node has, it may import an upstream
image and create its repository under the rules' prefixes only (pull-through-cache-iam.html).

nvcr.io cannot be a rule's source: each NVIDIA image the stack runs gets a repository
`nvcr/<path>` here, `python -m plan` writes the script that copies the images into them
(out/<stack>/copy-nvidia-images.sh, plan/images.py), and only once that has run does the stack
say so (`nvidia_copied`) and pull them from there; until then they come from nvcr.io, and the
program warns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from components.ecr import repository_args
from components.registry_mirror import registry_of, repository_of
from model.config import PlatformConfig
from model.config.images import (
    NVIDIA_COPY_PREFIX,
    NVIDIA_REGISTRY,
    PULL_THROUGH_UPSTREAMS,
    PullThroughCacheSettings,
)
from model.config.regions import SUPPORTED_PARTITION
from model.versions import NVIDIA_CHART_IMAGES
from model.warning_kinds import warning

# What the plan writes for the copy (plan/images.py), under out/<stack>/.
COPY_SCRIPT = "copy-nvidia-images.sh"

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


def nvidia_repositories(cfg: PlatformConfig) -> list[str]:
    """`nvcr/<path>` for every nvcr.io image the stack runs: the GPU Operator's, and the
    training, recipes and self-test images the stack names on nvcr.io."""
    named = [*cfg.images.prepull, cfg.recipes.image, cfg.selftest.image]
    paths = [
        *NVIDIA_CHART_IMAGES["gpu-operator"],
        *(repository_of(i) for i in named if i and registry_of(i) == NVIDIA_REGISTRY),
    ]
    return sorted({f"{NVIDIA_COPY_PREFIX}/{path}" for path in paths})


def uncopied_warning(env: str, count: int) -> str:
    return warning(
        "nvidia-images-uncopied",
        f"images.pull_through_cache: the {count} ECR repositories for NVIDIA's images "
        f"({NVIDIA_COPY_PREFIX}/...) are declared, and the nodes still pull those images from "
        f"{NVIDIA_REGISTRY}: after this `pulumi up`, run out/{env}/{COPY_SCRIPT} with NGC "
        "credentials, then set images.pull_through_cache.nvidia_copied: true",
    )


@dataclass(frozen=True)
class PullThroughCacheArgs:
    env: str
    cache: PullThroughCacheSettings
    # nvidia_repositories(cfg)
    nvidia_repositories: tuple[str, ...] = ()
    protect: bool = False


class PullThroughCache(PlatformComponent):
    """The stack's pull-through cache rules, and the repositories NVIDIA's images are copied
    into."""

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
        # Names are fixed: a replacement created first would collide on its name.
        self.repositories = [
            aws.ecr.Repository(
                f"{args.env}-{name.replace('/', '-')}",
                repository_args(name, protect=args.protect),
                self.child(delete_before_replace=True),
            )
            for name in args.nvidia_repositories
        ]
        if not args.cache.nvidia_copied:
            pulumi.warn(uncopied_warning(args.env, len(args.nvidia_repositories)))
        self.register_outputs({})
