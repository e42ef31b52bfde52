"""ECR pull-through cache rules (images.pull_through_cache): a rule per cached upstream with
the URL ECR takes, every image from a cached registry pulled through its rule's prefix (the
one rewrite the registry mirror uses, components/registry_mirror.py), the node role allowed
to import and create repositories under those prefixes only, and the settings ECR would
refuse refused first.

Facts: ECR User Guide, pull-through-cache.html (upstreams, `upstreamRegistryUrl`, the
`ecr-pullthroughcache/` secret name, `<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/...`;
nvcr.io not a source) and pull-through-cache-iam.html (the puller's two actions), as
../shared/PINS.md "Alternative 1" records them."""

from __future__ import annotations

import json

import pytest

from components.data.pull_through_cache import puller_policy
from components.registry_mirror import image_route
from model.config import parse_config
from model.config.images import PullThroughCacheSettings
from plan.image_paths import format_image_paths
from plan.images import image_lines
from plan.render import render_plan
from tests.conftest import SHARED_HELM, project_plan
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing
from tests.helpers.selftest_stacks import FSX, IMAGE, P5

ACCOUNT = "111122223333"
ECR = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
DOCKER_SECRET = (
    f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
)
TRAINER = "nvcr.io/nvidia/pytorch:25.08-py3@sha256:" + "1" * 64
TOKENIZER = "ghcr.io/example/tokenize@sha256:" + "2" * 64
TOOLS = "docker.io/library/python@sha256:" + "3" * 64
CACHE = {"account_id": ACCOUNT, "credentials": {"docker.io": DOCKER_SECRET}}
RULE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"
# The releases whose values name a registry alone for every image (model/versions.py
# REGISTRY_KEY): one value cannot carry a prefix per upstream, so they stay upstream.
REGISTRY_ONLY_RELEASES = ("kube-prometheus-stack", "keda")


STACK = aws(
    gpu_node_groups=[P5],
    storage=FSX,
    selftest={"image": IMAGE},
    images={"pull_through_cache": CACHE, "prepull": [TRAINER, TOKENIZER, TOOLS]},
)


@pytest.fixture(scope="module")
def cached():
    return project_plan("ptc", {"ptc": STACK})


@pytest.fixture(scope="module")
def rendering(cached):
    return render_plan(cached, (SHARED_HELM,))


def test_a_rule_per_cached_upstream_with_the_url_ecr_takes(cached):
    rules = {r.inputs["ecrRepositoryPrefix"]: r.inputs for r in cached.of_type(RULE)}
    # Docker Hub's upstreamRegistryUrl is registry-1.docker.io (pull-through-cache.html);
    # GHCR is not cached: the stack gives no secret for it.
    assert {p: r["upstreamRegistryUrl"] for p, r in rules.items()} == {
        "ecr-public": "public.ecr.aws",
        "k8s": "registry.k8s.io",
        "quay": "quay.io",
        "docker-hub": "registry-1.docker.io",
    }
    assert rules["docker-hub"]["credentialArn"] == DOCKER_SECRET
    assert all("credentialArn" not in r for p, r in rules.items() if p != "docker-hub")


def test_the_node_role_imports_and_creates_under_the_rules_prefixes_only(cached):
    (policy,) = [
        json.loads(r.inputs["policy"])
        for r in cached.of_type("aws:iam/rolePolicy:RolePolicy")
        if r.name == "ptc-node"
    ]
    (statement,) = policy["Statement"]
    assert sorted(statement["Action"]) == ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]
    assert sorted(statement["Resource"]) == [
        f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/docker-hub/*",
        f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/ecr-public/*",
        f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/k8s/*",
        f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/quay/*",
    ]


def test_without_credentials_only_the_public_upstreams_are_cached():
    policy = json.loads(puller_policy(PullThroughCacheSettings(account_id=ACCOUNT), "eu-west-1"))
    assert sorted(policy["Statement"][0]["Resource"]) == [
        f"arn:aws:ecr:eu-west-1:{ACCOUNT}:repository/ecr-public/*",
        f"arn:aws:ecr:eu-west-1:{ACCOUNT}:repository/k8s/*",
        f"arn:aws:ecr:eu-west-1:{ACCOUNT}:repository/quay/*",
    ]


def test_every_image_from_a_cached_registry_is_pulled_through_its_rule(cached, rendering):
    sources = [("declared", obj) for obj in cached.kubernetes_objects()]
    sources += [(release.release, obj) for release, obj in rendering.outlines()]
    lines = image_lines(sources)
    cached_upstreams = ("public.ecr.aws/", "registry.k8s.io/", "quay.io/", "docker.io/")
    bypassing = [
        line
        for line in lines
        if line.startswith(cached_upstreams)
        and not line.endswith(tuple(f"(ptc-{r})" for r in REGISTRY_ONLY_RELEASES))
    ]
    assert not bypassing, "\n".join(bypassing)
    images = {line.split()[0] for line in lines}
    # The program's own images and the charts' repositories, each through its prefix.
    assert f"{ECR}/docker-hub/library/python@sha256:{'3' * 64}" in images
    assert f"{ECR}/k8s/pause:3.10.1" in images
    assert any(i.startswith(f"{ECR}/k8s/kueue/kueue:") for i in images)
    assert any(i.startswith(f"{ECR}/ecr-public/fsx-csi-driver/aws-fsx-csi-driver:") for i in images)
    # nvcr.io cannot be a source, and GHCR has no secret: both stay upstream.
    assert TRAINER in images and TOKENIZER in images
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" in images


def test_the_plan_reports_each_pool_image_s_rule(cached, rendering):
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in STACK.items()}, "Pulumi.ptc.yaml")
    lines = format_image_paths(cached, rendering, image_route(cfg)).splitlines()
    # The GPU Operator's NFD worker runs on every GPU node (its chart's image,
    # registry.k8s.io/nfd/node-feature-discovery), through the k8s rule.
    assert any(
        line.startswith(f"    {ECR}/k8s/nfd/node-feature-discovery:")
        and line.endswith(": pull-through cache rule k8s (from registry.k8s.io)")
        for line in lines
    ), lines
    assert (
        f"    {TRAINER}  DaemonSet gpu-platform-selftest/prepull-h100 (declared): "
        "upstream nvcr.io, pre-pulled at join"
    ) in lines


SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:"
REFUSED = [
    pytest.param(
        aws(
            images={
                "registry_mirror": "registry.internal.example:5000/mirror",
                "pull_through_cache": {"account_id": ACCOUNT},
            }
        ),
        f"{NS}:images.pull_through_cache",
        "a registry mirror already serves every image",
        "not both",
        id="with-a-mirror",
    ),
    pytest.param(
        aws(images={"pull_through_cache": {**CACHE, "credentials": {"nvcr.io": SECRET + "x"}}}),
        f"{NS}:images.pull_through_cache.credentials",
        "'nvcr.io'",
        "nvcr.io cannot be a source",
        id="nvcr-is-no-source",
    ),
    pytest.param(
        aws(
            images={
                "pull_through_cache": {**CACHE, "credentials": {"ghcr.io": SECRET + "github-x"}}
            }
        ),
        f"{NS}:images.pull_through_cache.credentials",
        SECRET + "github-x",
        "ecr-pullthroughcache/",
        id="secret-name-without-the-prefix",
    ),
    pytest.param(
        aws(
            images={
                "pull_through_cache": {
                    **CACHE,
                    "credentials": {
                        "docker.io": DOCKER_SECRET.replace("us-east-1", "eu-west-1"),
                    },
                }
            }
        ),
        f"{NS}:images.pull_through_cache.credentials.docker.io",
        "is in eu-west-1",
        "us-east-1",
        id="secret-in-another-region",
    ),
    pytest.param(
        existing(images={"pull_through_cache": {"account_id": ACCOUNT}}),
        f"{NS}:images.pull_through_cache",
        "an AWS account's",
        "use registry_mirror",
        id="existing-cluster",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), REFUSED)
def test_a_cache_ecr_would_refuse_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
