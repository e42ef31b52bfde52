"""What every component of a stack shares: the stack's name (which prefixes every resource's
name), where it pulls images from (a mirror, ECR pull-through cache rules), whether its
stateful resources are protected, and the tags on every AWS resource. Built once from the
config (`StackContext.of`) and handed to each component, instead of a copy of each field in
every component's Args; what only one component needs stays that component's own field.
Where add-ons run:
components/data/system_node_group.add_on_nodes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from components.registry_mirror import ImageRoute, image_route
from model.config import NAMESPACE, PlatformConfig
from model.versions import CHARTS, Chart


@dataclass(frozen=True)
class StackContext:
    # The stack's name: the prefix of every resource's name.
    env: str
    # `images.registry_mirror` or `images.pull_through_cache`: where the cluster pulls images
    # from instead of their upstream registries (components/registry_mirror.py).
    image_route: ImageRoute | None = None
    # Production stacks (`protect_stateful`): Pulumi refuses to delete their stateful resources
    # (what holds data or would be slow to get back), and the self-test's image repository is
    # not deleted with its images.
    protect: bool = False
    # On every AWS resource: the provider's default tags, and the launch templates' tag
    # specifications (provider default tags stop at the launch template); none on-prem.
    tags: dict[str, str] = field(default_factory=dict)
    # `charts`: the versions this stack takes ahead of the pins, by chart (model/versions.CHARTS).
    chart_overrides: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, env: str, cfg: PlatformConfig) -> StackContext:
        # An existing cluster's stack declares no AWS resource to tag.
        tags = (
            {"gpu-platform:stack": env, "managed-by": "pulumi", **cfg.aws.tags}
            if cfg.aws is not None
            else {}
        )
        overrides = {key: override.version for key, override in cfg.charts.items()}
        return cls(env, image_route(cfg), cfg.protect_stateful, tags, overrides)

    def chart(self, key: str) -> Chart:
        """The chart as this stack installs it: the pin, at the stack's version where it
        overrides it."""
        pinned = CHARTS[key]
        return replace(pinned, version=self.chart_overrides.get(key, pinned.version))

    @property
    def cluster_name(self) -> str:
        return f"{NAMESPACE}-{self.env}"
