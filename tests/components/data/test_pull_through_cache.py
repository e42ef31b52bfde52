"""ECR pull-through cache rules (images.pull_through_cache): a rule per cached upstream with
the URL ECR takes, every image from a cached registry pulled through its rule's prefix (the
one rewrite the registry mirror uses, components/registry_mirror.py), the node role allowed
to import and create repositories under those prefixes only, and the settings ECR would
refuse refused first.

Facts: ECR User Guide, pull-through-cache.html (upstreams, `upstreamRegistryUrl`, the
`ecr-pullthroughcache/` secret name, `<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/...`;
nvcr.io not a source) and pull-through-cache-iam.html (the puller's two actions), as
../shared/PINS.md "Alternative 1" records them.

nvcr.io's images instead: an ECR repository `nvcr/<path>` each, the copy script the plan writes
(skopeo-copy(1): `--all`, `--preserve-digests`), and the two steps: repositories and images
from nvcr.io with a warning, then (`nvidia_copied`) every NVIDIA image from ECR."""

from __future__ import annotations

import json
import re

import pytest

from components.data.pull_through_cache import nvidia_repositories, puller_policy
from components.registry_mirror import image_route, mirrored_values, registry_of
from model.config import parse_config
from model.config.images import PullThroughCacheSettings
from model.versions import CHART_IMAGE_BLOCKS, CHARTS, NVIDIA_CHART_IMAGES
from plan.cli import write_copy_script
from plan.image_paths import format_image_paths
from plan.images import image_lines
from plan.render import render_plan
from tests.conftest import SHARED_HELM, project_plan
from tests.helpers import helm_values
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing
from tests.helpers.cache_stacks import (
    ACCOUNT,
    CACHE,
    COPY_LINES,
    DOCKER_SECRET,
    ECR,
    TOKENIZER,
    TOOLS,
    TRAINER,
    cache_plan,
    config_of,
)
from tests.helpers.selftest_stacks import FSX, P5

RULE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"


@pytest.fixture(scope="module")
def before_copy():
    return cache_plan("ptc")


@pytest.fixture(scope="module")
def after_copy():
    return cache_plan("ptcc")


@pytest.fixture(scope="module")
def cached(before_copy):
    return before_copy[0]


@pytest.fixture(scope="module")
def rendering(before_copy):
    return before_copy[1]


@pytest.fixture(scope="module")
def copied(after_copy):
    return after_copy[0]


@pytest.fixture(scope="module")
def copied_rendering(after_copy):
    return after_copy[1]


def lines_of(plan, rendering) -> list[str]:
    """images.txt's lines: what the plan declares and its releases render."""
    sources = [("declared", obj) for obj in plan.kubernetes_objects()]
    return image_lines(sources + [(release.release, obj) for release, obj in rendering.outlines()])


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
    lines = lines_of(cached, rendering)
    cached_upstreams = ("public.ecr.aws/", "registry.k8s.io/", "quay.io/", "docker.io/")
    bypassing = [line for line in lines if line.startswith(cached_upstreams)]
    assert not bypassing, "\n".join(bypassing)
    images = {line.split()[0] for line in lines}
    # The program's own images and the charts' repositories, each through its prefix.
    assert f"{ECR}/docker-hub/library/python@sha256:{'3' * 64}" in images
    assert f"{ECR}/k8s/pause:3.10.1" in images
    assert any(i.startswith(f"{ECR}/k8s/kueue/kueue:") for i in images)
    assert any(i.startswith(f"{ECR}/ecr-public/fsx-csi-driver/aws-fsx-csi-driver:") for i in images)
    # The charts with a global registry value, image by image through their blocks:
    # kube-prometheus-stack 88.5.3 values.yaml prometheus.prometheusSpec.image (quay.io,
    # prometheus/prometheus, v3.14.0-distroless); its grafana subchart 12.11.1 (docker.io,
    # grafana/grafana, the subchart's appVersion 13.2.0).
    assert f"{ECR}/quay/prometheus/prometheus:v3.14.0-distroless" in images
    assert f"{ECR}/docker-hub/grafana/grafana:13.2.0" in images
    # nvcr.io is copied, not cached (not yet here), and GHCR has no secret: both upstream.
    assert TRAINER in images and TOKENIZER in images
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" in images
    # keda 2.20.2 values.yaml image.keda: ghcr.io kedacore/keda at the chart's appVersion.
    assert "ghcr.io/kedacore/keda:2.20.2" in images


def image_blocks(node, path: str = "") -> dict[str, str]:
    """Every image block of a chart's values (`registry` beside `repository`), by dotted path,
    as `registry/repository`."""
    found = {}
    if isinstance(node, dict):
        if isinstance(node.get("registry"), str) and isinstance(node.get("repository"), str):
            found[path] = f"{node['registry']}/{node['repository']}"
        for key, value in node.items():
            found |= image_blocks(value, f"{path}.{key}".lstrip("."))
    return found


@pytest.mark.parametrize("chart", ["keda", "kube-prometheus-stack"])
def test_every_image_block_of_a_one_registry_chart_takes_its_own_prefix(chart):
    """The charts whose global registry value serves a mirror: each image block of the pinned
    values.yaml and its subcharts' (under the subchart's name) is one the cache routes."""
    version = CHARTS[chart].version
    found = image_blocks(helm_values.defaults(chart, version))
    for name, values in helm_values.subcharts(chart, version).items():
        found |= {f"{name}.{k}": v for k, v in image_blocks(values).items()}
    assert found == CHART_IMAGE_BLOCKS[chart]


def test_a_block_takes_its_rule_s_prefix_and_docker_hub_s_library_namespace():
    github = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:ecr-pullthroughcache/github-x"
    stack = aws(images={"pull_through_cache": {**CACHE, "credentials": {
        **CACHE["credentials"], "ghcr.io": github}}})  # fmt: skip
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in stack.items()}, "Pulumi.x.yaml")
    keda = mirrored_values("keda", {"image": {"keda": {"tag": "2.20.2"}}}, image_route(cfg))
    assert keda["image"]["keda"] == {
        "registry": f"{ECR}/github",
        "repository": "kedacore/keda",
        "tag": "2.20.2",
    }
    # ECR User Guide, pull-through-cache.html: a Docker Hub official image is pulled as
    # `<prefix>/library/<name>`.
    stack_values = mirrored_values("kube-prometheus-stack", {}, image_route(cfg))
    assert stack_values["crds"]["upgradeJob"]["image"]["busybox"] == {
        "registry": f"{ECR}/docker-hub",
        "repository": "library/busybox",
    }
    # The global registry stays unset: it would win over every block.
    assert "global" not in stack_values


def test_the_plan_reports_each_pool_image_s_rule(cached, rendering):
    lines = format_image_paths(cached, rendering, image_route(config_of("ptc"))).splitlines()
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


def test_every_nvcr_image_the_stack_names_gets_a_repository():
    """The self-test and recipes images too, when a team builds them on an NGC base and keeps
    them on nvcr.io; their paths without tag or digest."""
    selftest = "nvcr.io/acme/selftest:1.0@sha256:" + "4" * 64
    recipes = "nvcr.io/acme/team/recipes@sha256:" + "5" * 64
    stack = aws(
        gpu_node_groups=[P5],
        storage=FSX,
        images={"pull_through_cache": CACHE, "prepull": [TRAINER, TOOLS]},
        selftest={"image": selftest},
        recipes={"image": recipes},
    )
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in stack.items()}, "Pulumi.x.yaml")
    names = nvidia_repositories(cfg)
    assert {"nvcr/acme/selftest", "nvcr/acme/team/recipes", "nvcr/nvidia/pytorch"} <= set(names)
    assert not [n for n in names if "python" in n]


# What stays off the stack's ECR once NVIDIA's images are copied, each with its reason.
OFF_THE_STACK_S_ECR = {
    # EKS's own ECR registry, which the node role reads (the EFA plugin chart's repository).
    "602401143452.dkr.ecr.us-west-2.amazonaws.com": "AWS's registry for EKS add-ons",
    # The fixture gives no GHCR secret, so no rule caches it.
    "ghcr.io": "no pull-through rule without a secret",
}


def off_the_stack_s_ecr(line: str) -> str | None:
    """Why an images.txt line is not pulled from the stack's ECR, or None if it should be."""
    return OFF_THE_STACK_S_ECR.get(registry_of(line.split()[0]))


def test_no_image_is_pulled_from_nvcr_once_nvidia_s_images_are_copied(copied, copied_rendering):
    lines = lines_of(copied, copied_rendering)
    assert not [line for line in lines if registry_of(line.split()[0]) == "nvcr.io"]
    stray = [
        line
        for line in lines
        if registry_of(line.split()[0]) != ECR and off_the_stack_s_ecr(line) is None
    ]
    assert not stray, "\n".join(stray)
    images = {line.split()[0] for line in lines}
    # gpu-operator v26.7.0 values.yaml: devicePlugin nvcr.io/nvidia k8s-device-plugin v0.20.0.
    assert f"{ECR}/nvcr/nvidia/k8s-device-plugin:v0.20.0" in images
    assert f"{ECR}/nvcr/nvidia/pytorch:25.08-py3@sha256:{'1' * 64}" in images


def test_every_copied_image_has_a_repository_the_stack_declares(copied, copied_rendering):
    repositories = {
        r.inputs["name"]: r.inputs for r in copied.of_type("aws:ecr/repository:Repository")
    }
    # A reference's repository: its path without the tag and digest (distribution/reference).
    wanted = {
        re.sub(r"(:[\w][\w.-]*)?(@sha256:[0-9a-f]{64})?$", "", image.removeprefix(f"{ECR}/"))
        for image in (line.split()[0] for line in lines_of(copied, copied_rendering))
        if image.startswith(f"{ECR}/nvcr/")
    }
    assert "nvcr/nvidia/gpu-operator" in wanted and "nvcr/nvidia/pytorch" in wanted
    assert wanted <= set(repositories), sorted(wanted - set(repositories))
    for name in wanted:
        # A copied tag names one image for good, and each is scanned: the settings of every
        # private repository of the platform.
        assert repositories[name]["imageTagMutability"] == "IMMUTABLE", name
        assert repositories[name]["imageScanningConfiguration"] == {"scanOnPush": True}, name
        assert repositories[name]["encryptionConfigurations"] == [{"encryptionType": "KMS"}], name


def nvcr_images(node) -> set[str]:
    """`<repository path>/<image>` of every image block on nvcr.io in a chart's values."""
    found = set()
    if isinstance(node, dict):
        repository, image = node.get("repository"), node.get("image")
        if isinstance(repository, str) and repository.startswith("nvcr.io/") and image:
            found.add(f"{repository.removeprefix('nvcr.io/')}/{image}")
        for value in node.values():
            found |= nvcr_images(value)
    return found


def test_every_nvcr_image_of_the_gpu_operator_chart_gets_a_repository():
    """What the stack declares before any rendering: each image block of the pinned chart's
    values.yaml on nvcr.io, enabled or not (a stack may turn an operand on)."""
    chart = helm_values.defaults("gpu-operator", CHARTS["gpu-operator"].version)
    assert nvcr_images(chart) == set(NVIDIA_CHART_IMAGES["gpu-operator"])


@pytest.mark.parametrize("step", ["ptc", "ptcc"])
def test_the_plan_writes_the_copy_of_every_nvidia_image(
    step, cached, rendering, copied, copied_rendering, tmp_path
):
    """The same lines before the copy (images from nvcr.io) and after (from ECR)."""
    plan, rendered = {"ptc": (cached, rendering), "ptcc": (copied, copied_rendering)}[step]
    script = write_copy_script(step, config_of(step), plan, rendered, tmp_path)
    assert script == tmp_path / "copy-nvidia-images.sh"
    lines = script.read_text().splitlines()
    assert lines[0] == "#!/bin/sh" and "set -eu" in lines
    assert [line for line in lines if line.startswith("skopeo")] == COPY_LINES


def test_without_a_cache_the_plan_writes_no_copy(tmp_path):
    stack = aws(gpu_node_groups=[P5], storage=FSX, images={"prepull": [TRAINER]})
    plan = project_plan("nocache", {"nocache": stack})
    rendered = render_plan(plan, (SHARED_HELM,))
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in stack.items()}, "Pulumi.x.yaml")
    assert write_copy_script("nocache", cfg, plan, rendered, tmp_path) is None


def test_until_the_copy_nvidia_s_images_come_from_nvcr_with_a_warning(cached, rendering):
    """The default step: `pulumi up` creates the repositories, the nodes do not pull from them
    before the copy, and the plan says what to run."""
    assert "nvcr/nvidia/gpu-operator" in {
        r.inputs["name"] for r in cached.of_type("aws:ecr/repository:Repository")
    }
    images = {line.split()[0] for line in lines_of(cached, rendering)}
    assert not [i for i in images if i.startswith(f"{ECR}/nvcr/")]
    (said,) = [w for w in cached.warnings if w.endswith("[warning nvidia-images-uncopied]")]
    assert "run out/ptc/copy-nvidia-images.sh" in said
    assert "images.pull_through_cache.nvidia_copied: true" in said


def test_the_plan_reports_copied_images_as_copied(copied, copied_rendering):
    report = format_image_paths(
        copied, copied_rendering, image_route(config_of("ptcc"))
    ).splitlines()
    assert (
        f"    {ECR}/nvcr/nvidia/pytorch:25.08-py3@sha256:{'1' * 64}  DaemonSet "
        "gpu-platform-selftest/prepull-h100 (declared): copied to ECR nvcr/nvidia/pytorch, "
        "pre-pulled at join"
    ) in report
    assert any(
        line.startswith(f"    {ECR}/nvcr/nvidia/k8s-device-plugin:v0.20.0  GPU Operator operand")
        and line.endswith(": copied to ECR nvcr/nvidia/k8s-device-plugin")
        for line in report
    ), report


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
