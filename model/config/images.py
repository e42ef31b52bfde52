"""Where the cluster pulls its images from and how fast (`gpu-platform:images`): upstream
registries, one mirror an air-gapped cluster reaches instead, or ECR pull-through cache rules;
the training images pre-pulled at join; SOCI parallel pull on AWS GPU nodes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, field_validator, model_validator

from model.config.base import FieldProblem, Settings, shaped
from model.config.nodes import ROOT_VOLUME_THROUGHPUT_MBPS
from model.config.regions import SUPPORTED_PARTITION
from model.config.selftest import PinnedImage

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.nodes import GpuNodeGroupSettings

# host[:port][/path]: lower-case, no scheme, no tag. The host needs a dot or a port (or is
# localhost): a first component without either is read as a Docker Hub namespace, so
# `mirror/kueue/kueue` would pull from docker.io/mirror (Docker's reference grammar,
# distribution/reference: "domain").
_MIRROR = re.compile(
    r"^(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+|[a-z0-9-]+:[0-9]+|[a-z0-9-]+(\.[a-z0-9-]+)+:[0-9]+)"
    r"(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
)


# SOCI parallel pull on the AL2023 AMI (../shared/PINS.md, "Fast image start-up", from
# awslabs/amazon-eks-ami v20260724 CHANGELOG.md and nodeadm/doc/examples.md): the gate is named
# FastImagePull from release v20250821 (v20250813 called it AggressiveImagePull, which nodeadm
# now rejects); from v20251217 setup-local-disks bind-mounts /var/lib/soci-snapshotter-grpc onto
# the instance-store RAID0, before that the images land on the root volume; AWS wants that
# volume at 600 MiB/s or more; nodeadm ignores the gate below 7 GiB memory or 4 vCPUs.
FAST_PULL_GATE_FIRST_RELEASE = "20250821"
SOCI_ON_RAID0_FIRST_RELEASE = "20251217"
SOCI_ROOT_VOLUME_MIBPS = 600
SOCI_MIN_MEMORY_GIB = 7
SOCI_MIN_VCPUS = 4


@dataclass(frozen=True)
class Upstream:
    """A registry an ECR pull-through cache rule can cache."""

    url: str  # CreatePullThroughCacheRule's upstreamRegistryUrl
    prefix: str  # the rule's ecrRepositoryPrefix: the platform's name for it
    credentials: bool  # needs a Secrets Manager secret `ecr-pullthroughcache/...`


# ECR User Guide, pull-through-cache.html (../shared/PINS.md, "Alternative 1"): the upstreams
# a rule can cache, by the registry image references name; Azure Container Registry has a
# host per registry (*.azurecr.io) and is left out. nvcr.io cannot be a source.
PULL_THROUGH_UPSTREAMS = {
    "public.ecr.aws": Upstream("public.ecr.aws", "ecr-public", credentials=False),
    "registry.k8s.io": Upstream("registry.k8s.io", "k8s", credentials=False),
    "quay.io": Upstream("quay.io", "quay", credentials=False),
    "docker.io": Upstream("registry-1.docker.io", "docker-hub", credentials=True),
    "ghcr.io": Upstream("ghcr.io", "github", credentials=True),
    "registry.gitlab.com": Upstream("registry.gitlab.com", "gitlab", credentials=True),
    "cgr.dev": Upstream("cgr.dev", "chainguard", credentials=True),
}
# nvcr.io is no pull-through source (pull-through-cache.html lists the upstreams a rule can
# cache): NVIDIA's images are copied into ECR repositories the stack declares, under one prefix.
NVIDIA_REGISTRY = "nvcr.io"
NVIDIA_COPY_PREFIX = "nvcr"
CREDENTIAL_SECRET_PREFIX = "ecr-pullthroughcache/"
_SECRET_ARN = re.compile(
    rf"^arn:{SUPPORTED_PARTITION}:secretsmanager:([a-z0-9-]+):([0-9]{{12}}):secret:"
    + re.escape(CREDENTIAL_SECRET_PREFIX)
    + r"[A-Za-z0-9/_+=.@-]+$"
)


class PullThroughCacheSettings(Settings):
    """ECR pull-through cache rules in the stack's region, and the images routed through them."""

    account_id: Annotated[str, shaped(r"[0-9]{12}", "a 12-digit AWS account id")] = Field(
        description="The AWS account the stack deploys to, whose ECR registry holds the cache: "
        "image references name it (`<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/...`), "
        "and the offline plan, which reads no account, renders them without checking it. "
        "`pulumi up` and `pulumi preview` ask STS whose credentials they run with and stop, "
        "before anything is created, when that is another account.",
    )
    credentials: dict[str, str] = Field(
        default_factory=dict,
        description="Upstream registries that need credentials (docker.io, ghcr.io, "
        "registry.gitlab.com, cgr.dev), each with the ARN of the Secrets Manager secret ECR "
        "signs in with; its name must start `ecr-pullthroughcache/` (ECR User Guide, "
        "pull-through-cache.html). Only these are cached; without one, their images stay "
        "upstream. Default: none.",
    )

    nvidia_copied: bool = Field(
        False,
        description="NVIDIA's images (nvcr.io, which no pull-through rule can cache) are in "
        "the stack's ECR repositories `nvcr/<path>`, so every nvcr.io reference is pulled "
        "from there. Set it once `pulumi up` has created those repositories and "
        "out/<stack>/copy-nvidia-images.sh has copied the images (docs/gpu-nodes.md, "
        '"NVIDIA\'s images into ECR"), and run that script again before an up that changes an '
        "NVIDIA image's tag. Default: false: the repositories are declared and the images "
        "still come from nvcr.io, with a warning.",
    )

    @field_validator("credentials")
    @classmethod
    def _credentialed(cls, value: dict[str, str]) -> dict[str, str]:
        needing = sorted(h for h, u in PULL_THROUGH_UPSTREAMS.items() if u.credentials)
        for host, arn in value.items():
            if host not in needing:
                raise ValueError(
                    f"{host!r} is not a registry a pull-through rule caches with credentials; "
                    f"valid: {', '.join(needing)} (public.ecr.aws, registry.k8s.io and quay.io "
                    "need none; nvcr.io cannot be a source)"
                )
            if not _SECRET_ARN.match(arn):
                raise ValueError(
                    f"{host}: {arn!r} is not a Secrets Manager secret ARN whose name starts "
                    f"{CREDENTIAL_SECRET_PREFIX!r}, e.g. arn:aws:secretsmanager:us-east-1:"
                    "111122223333:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
                )
        return value

    def upstreams(self) -> list[str]:
        """The registries cached: every one that needs no credentials, and those given."""
        return [
            h
            for h, u in PULL_THROUGH_UPSTREAMS.items()
            if not u.credentials or h in self.credentials
        ]


# A TCP port is 16 bits, and port 0 is no port one can connect to (RFC 793, RFC 6335).
MAX_PORT = 65535


class ImageSettings(Settings):
    """The registry every image of the stack comes from."""

    registry_mirror: str | None = Field(
        None,
        description="A registry that mirrors every image the stack pulls (an air-gapped "
        "cluster's): `host[:port][/path]`, e.g. `registry.internal.example:5000/mirror`. Each "
        "image reference keeps its path and loses its registry: "
        "`registry.k8s.io/kueue/kueue:v0.19.2` becomes "
        "`registry.internal.example:5000/mirror/kueue/kueue:v0.19.2`, through each chart's "
        "registry values, the operators' custom resources and the program's own pods. "
        "out/<stack>/images.txt lists what to copy there. Default: upstream registries.",
    )

    prepull: tuple[PinnedImage, ...] = Field(
        (),
        description="The images jobs on the stack's GPU pools run, each pinned by digest: a "
        "new GPU node pulls them while its node-join check runs and keeps them "
        "(components/selftest/prepull.py), so a job's first pod there does not wait for its "
        "image. Each image must have `sh` (its pull runs `sh -c 'exit 0'`). The recipes image "
        "(recipes.image) is pulled as well without being listed. Default: none.",
    )

    fast_pull: bool | None = Field(
        None,
        description="SOCI parallel pull on the GPU nodes (nodeadm's `FastImagePull` feature "
        "gate, which AWS calls experimental: more CPU, memory and disk I/O while a node pulls): "
        "layers download in parallel ranged chunks and unpack in parallel, onto the "
        "instance-store RAID0. Needs every pinned `gpu_node_groups[].ami_release` at 20251217 "
        'or later (docs/gpu-nodes.md, "Images that start in seconds"). Default: on with '
        "provider aws; provider existing cannot set it (the admin's nodes).",
    )

    pull_through_cache: PullThroughCacheSettings | None = Field(
        None,
        description="ECR pull-through cache rules (provider aws) for the public registries "
        "the stack's images come from: ECR Public, registry.k8s.io and Quay always, Docker "
        "Hub, GHCR, GitLab and Chainguard with `credentials`. Every image from those is pulled "
        "as `<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/<path>:<tag>`, and the node "
        "role may import and create repositories under those prefixes only. nvcr.io cannot be "
        "a source: NVIDIA's images are copied into ECR repositories `nvcr/<path>` the stack "
        "declares (`nvidia_copied`). Not with registry_mirror. Default: off.",
    )

    @model_validator(mode="after")
    def _one_route(self) -> ImageSettings:
        if self.registry_mirror is not None and self.pull_through_cache is not None:
            raise FieldProblem(
                "pull_through_cache",
                "a registry mirror already serves every image; set either registry_mirror "
                "(an air-gapped cluster's mirror) or pull_through_cache, not both",
            )
        return self

    def fast_pull_on(self, provider: str) -> bool:
        return self.fast_pull if self.fast_pull is not None else provider == "aws"

    @field_validator("registry_mirror")
    @classmethod
    def _a_registry(cls, value: str | None) -> str | None:
        if value is not None and not _MIRROR.match(value):
            raise ValueError(
                f"{value!r} is not a registry: give host[:port][/path] without a scheme or "
                "trailing slash, the host with a dot or a port, e.g. "
                "registry.internal.example:5000/mirror"
            )
        host = (value or "").split("/", 1)[0]
        if ":" in host and not 1 <= int(host.rpartition(":")[2]) <= MAX_PORT:
            raise ValueError(
                f"{value!r}: port {host.rpartition(':')[2]} is not a TCP port; a port is 1 to "
                f"{MAX_PORT}, e.g. registry.internal.example:5000/mirror"
            )
        return value


def fast_pull_problem(group: GpuNodeGroupSettings) -> tuple[str, str] | None:
    """(key under the group, why) SOCI parallel pull would not work as meant on `group`'s
    nodes, or None."""
    # An unpinned group boots the latest release, which has both.
    built = group.ami_build_date
    if built is not None and built < FAST_PULL_GATE_FIRST_RELEASE:
        return "ami_release", (
            f"{group.ami_release} predates the FastImagePull gate (AMI release "
            f"v{FAST_PULL_GATE_FIRST_RELEASE}); nodeadm would refuse the NodeConfig"
        )
    for i, row in enumerate(group.instances):
        if row.memory_gib < SOCI_MIN_MEMORY_GIB or row.vcpus < SOCI_MIN_VCPUS:
            return f"instance_types[{i}]", (
                f"nodeadm ignores FastImagePull on {row.name} ({row.vcpus} vCPUs, "
                f"{row.memory_gib} GiB; it needs {SOCI_MIN_VCPUS} vCPUs and "
                f"{SOCI_MIN_MEMORY_GIB} GiB)"
            )
        if not row.has_instance_storage:
            key, where = f"instance_types[{i}]", f"{row.name} has no instance store"
        elif built is not None and built < SOCI_ON_RAID0_FIRST_RELEASE:
            key, where = (
                "ami_release",
                (
                    f"AMI release {group.ami_release} keeps the SOCI directory off the "
                    f"instance-store RAID0 (on it from v{SOCI_ON_RAID0_FIRST_RELEASE})"
                ),
            )
        else:
            continue
        return key, (
            f"{where}, so images would land on the {ROOT_VOLUME_THROUGHPUT_MBPS} MiB/s gp3 "
            f"root volume; AWS wants at least {SOCI_ROOT_VOLUME_MIBPS} MiB/s for SOCI "
            "parallel pull"
        )
    return None


def check_images(cfg: PlatformConfig) -> list[FieldProblem]:
    """SOCI parallel pull is nodeadm's: only on AWS GPU groups whose AMI and disks serve it."""
    if cfg.provider != "aws":
        if cfg.images.pull_through_cache is not None:
            return [
                FieldProblem(
                    "images.pull_through_cache",
                    "ECR pull-through cache rules are an AWS account's; with provider existing "
                    "use registry_mirror, and remove the key",
                )
            ]
        if cfg.images.fast_pull:
            return [
                FieldProblem(
                    "images.fast_pull",
                    "nodeadm's FastImagePull exists only on the EKS AMI (provider aws); on the "
                    "admin's nodes configure containerd or the SOCI snapshotter there "
                    '(docs/gpu-nodes.md, "Images that start in seconds"), and remove the key',
                )
            ]
        return []
    found = _secrets_beside_the_cache(cfg)
    if not cfg.images.fast_pull_on(cfg.provider):
        return found
    for i, group in enumerate(cfg.gpu_node_groups):
        problem = fast_pull_problem(group)
        if problem is not None:
            key, why = problem
            found.append(
                FieldProblem(
                    f"gpu_node_groups[{i}].{key}",
                    f"{why}. images.fast_pull is on (the default with provider aws): pin "
                    f"ami_release from {SOCI_ON_RAID0_FIRST_RELEASE} on (e.g. 1.35.3-20260724) "
                    "or leave it unset for the latest, use instance types with an instance "
                    "store, or set images.fast_pull: false",
                )
            )
    return found


def _secrets_beside_the_cache(cfg: PlatformConfig) -> list[FieldProblem]:
    """ECR reads a rule's secret in its own account and region (pull-through-cache.html)."""
    cache = cfg.images.pull_through_cache
    if cache is None or cfg.aws is None:
        return []
    found = []
    for host, arn in cache.credentials.items():
        region, account = _SECRET_ARN.match(arn).group(1, 2)
        if (region, account) != (cfg.aws.region, cache.account_id):
            found.append(
                FieldProblem(
                    f"images.pull_through_cache.credentials.{host}",
                    f"{arn} is in {region} of account {account}; ECR reads the secret in the "
                    f"cache's own region and account: {cfg.aws.region} of {cache.account_id}",
                )
            )
    return found
