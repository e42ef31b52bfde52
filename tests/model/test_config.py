"""The config model: defaults, production defaults, and a clear error for each kind of bad input."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from model.config import ConfigError, GpuNodeGroupSettings, PlatformConfig, parse_config
from model.config.loading import ON_DEFAULTS, unwrap
from model.stacks import read_project
from model.versions import SUPPORTED_KUBERNETES_VERSIONS
from plan.cli import main
from plan.engine import Recording, record, run_program
from tests.conftest import make_project, stack_file_config
from tests.helpers.raw_config import ADMIN, AWS

SOURCE = "stacks/Pulumi.bad.yaml"


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, SOURCE)
    assert str(caught.value).startswith(SOURCE)
    return caught.value.problems


def test_defaults_need_only_region_and_zones():
    cfg = parse_config(AWS, SOURCE)
    assert cfg.provider == "aws"
    assert cfg.network.nat_gateways == "single"
    assert cfg.cluster.endpoint_private_only is False
    assert cfg.cluster.kubernetes_version in SUPPORTED_KUBERNETES_VERSIONS
    assert cfg.protect_stateful is False


def test_production_changes_defaults_but_an_explicit_key_wins():
    cluster = {"admin_principal_arns": ADMIN, "api_access_cidrs": ["10.8.0.0/24"]}
    # The runners' range reaches the private endpoint through a Transit Gateway.
    vpn = {"id": "tgw-0123456789abcdef0", "cidrs": ["10.8.0.0/24"]}
    network = {"flow_logs": False, "transit_gateway": vpn}
    raw = {**AWS, "production": True, "network": network, "cluster": cluster}
    cfg = parse_config(raw, SOURCE)
    assert cfg.network.nat_gateways == "per_zone"
    assert cfg.cluster.endpoint_private_only is True
    assert cfg.cluster.deletion_protection is True
    assert cfg.network.flow_logs is False
    assert cfg.protect_stateful is True


def test_production_in_an_existing_vpc_hardens_what_is_the_platforms_only():
    """NAT gateways are the existing VPC's owner's: production sets no nat_gateways there (a
    key an existing VPC refuses), and still turns on flow logs and the private endpoint, which
    is not refused for want of a route the plan cannot see."""
    subnets = [
        {"id": "subnet-0aaaaaaaaaaaaaaa1", "zone": "us-east-1a", "cidr": "10.60.0.0/18"},
        {"id": "subnet-0bbbbbbbbbbbbbbb2", "zone": "us-east-1b", "cidr": "10.60.64.0/18"},
    ]
    raw = {
        **AWS,
        "production": True,
        "network": {"existing_vpc": {"id": "vpc-0fedcba9876543210", "private_subnets": subnets}},
        "cluster": {"admin_principal_arns": ADMIN, "api_access_cidrs": ["10.8.0.0/24"]},
    }
    cfg = parse_config(raw, SOURCE)
    assert "nat_gateways" not in cfg.network.model_fields_set
    assert cfg.network.flow_logs is True
    assert cfg.cluster.endpoint_private_only is True


def test_every_field_has_a_description_or_is_a_section():
    seen = set()

    def walk(model, path):
        seen.add(model)
        for name, field in model.model_fields.items():
            inner = unwrap(field.annotation)
            is_section = isinstance(inner, type) and issubclass(inner, BaseModel)
            assert field.description or is_section, f"{path}{name} has no description"
            if is_section and inner not in seen:
                walk(inner, f"{path}{name}.")

    walk(PlatformConfig, "")
    assert GpuNodeGroupSettings in seen, "the walk reaches models inside lists"


BAD = [
    pytest.param({**AWS, "netwrk": {}}, "gpu-platform:netwrk", "did you mean 'network'", id="typo"),
    pytest.param(
        {**AWS, "network": {"vpc_cdir": "10.0.0.0/16"}},
        "gpu-platform:network.vpc_cdir",
        "flow_log_retention_days, flow_logs, local_zone_subnet_cidrs, nat_gateways",
        id="nested-typo",
    ),
    pytest.param(
        {**AWS, "network": {"flow_logs": "maybe"}},
        "gpu-platform:network.flow_logs",
        "'maybe'",
        id="wrong-type",
    ),
    pytest.param(
        {**AWS, "system_nodes": {"scaling": {"min_size": 5, "max_size": 2}}},
        "gpu-platform:system_nodes.scaling.min_size",
        "min_size 5 > max_size 2",
        id="min-over-max",
    ),
    pytest.param(
        {**AWS, "system_nodes": {"scaling": {"min_size": 1, "max_size": 3, "desired_size": 4}}},
        "gpu-platform:system_nodes.scaling.desired_size",
        "outside [min_size 1, max_size 3]",
        id="desired-outside",
    ),
    pytest.param(
        {**AWS, "network": {"private_subnet_cidrs": ["10.0.0.0/18", "10.0.32.0/19"]}},
        "gpu-platform:network.private_subnet_cidrs[1]",
        "10.0.32.0/19 overlaps private_subnet_cidrs[0]",
        id="overlapping-cidrs",
    ),
    pytest.param(
        {**AWS, "cluster": {"service_ipv4_cidr": "10.0.0.0/20"}},
        "gpu-platform:cluster.service_ipv4_cidr",
        "overlaps network.vpc_cidr 10.0.0.0/16",
        id="service-cidr-in-vpc",
    ),
    pytest.param(
        {**AWS, "network": {"public_subnet_cidrs": ["10.0.240.0/24", "10.0.250.0/24"]}}
        | {"aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b", "us-east-1c"]}},
        "gpu-platform:network.public_subnet_cidrs",
        "2 subnets for 3 zones",
        id="fewer-subnets-than-zones",
    ),
    pytest.param(
        {**AWS, "network": {"private_subnet_cidrs": ["10.1.0.0/18", "10.0.64.0/18"]}},
        "gpu-platform:network.private_subnet_cidrs[0]",
        "outside vpc_cidr 10.0.0.0/16",
        id="subnet-outside-vpc",
    ),
    pytest.param(
        {**AWS, "system_nodes": {"instance_types": ["m7i.xlarg"]}},
        "gpu-platform:system_nodes.instance_types[0]",
        "did you mean 'm7i.xlarge'",
        id="unknown-instance-type",
    ),
    pytest.param(
        {**AWS, "cluster": {"kubernetes_version": "1.27"}},
        "gpu-platform:cluster.kubernetes_version",
        "valid: " + ", ".join(SUPPORTED_KUBERNETES_VERSIONS),
        id="unsupported-kubernetes",
    ),
    pytest.param(
        {**AWS, "cluster": {"kubernetes_version": 1.3}},
        "gpu-platform:cluster.kubernetes_version",
        "quote it",
        id="unquoted-version",
    ),
    pytest.param(
        {"aws": {"zones": ["us-east-1a", "us-east-1b"]}},
        "gpu-platform:aws.region",
        "required value is missing",
        id="missing-region",
    ),
    pytest.param({}, "gpu-platform:aws", "required with provider aws", id="missing-aws"),
    pytest.param(
        {"provider": "existing"},
        "gpu-platform:existing",
        "required with provider existing",
        id="missing-existing",
    ),
    pytest.param(
        {"provider": "existing", "existing": {"name": "lab"}},
        "gpu-platform:existing.kubeconfig_path",
        "exactly one of kubeconfig_path or kubeconfig",
        id="missing-kubeconfig",
    ),
    pytest.param(
        {"provider": "existing", "existing": {"name": "lab", "kubeconfig_path": "k"}, **AWS},
        "gpu-platform:aws",
        "only valid with provider aws",
        id="aws-on-existing",
    ),
    pytest.param(
        {"provider": "gcp"}, "gpu-platform:provider", "'aws' or 'existing'", id="bad-provider"
    ),
    pytest.param(
        {"aws": {"region": "us-east-1", "zones": ["us-east-1a", "eu-west-1b"]}},
        "gpu-platform:aws.zones[1]",
        "not a zone of region us-east-1",
        id="zone-of-other-region",
    ),
    pytest.param(
        {**AWS, "cluster": {"log_retention_days": 10}},
        "gpu-platform:cluster.log_retention_days",
        "valid: [1, 3, 5",
        id="bad-retention",
    ),
    pytest.param(
        {
            **AWS,
            "cluster": {
                "endpoint_private_only": True,
                "public_access_cidrs": ["1.2.3.0/24"],
                "api_access_cidrs": ["10.8.0.0/24"],
                "admin_principal_arns": ADMIN,
            },
        },
        "gpu-platform:cluster.public_access_cidrs",
        "no effect with endpoint_private_only",
        id="contradictory-endpoint",
    ),
]


@pytest.mark.parametrize(("raw", "path", "detail"), BAD)
def test_bad_input_names_path_and_fix(raw, path, detail):
    found = problems(raw)
    assert any(p.startswith(f"{path}:") and detail in p for p in found), found


def test_several_problems_are_reported_together():
    # A minor newer than any supported is a field's own problem; an older one is the provider's
    # to judge, once every field is valid (model/config/kubernetes_minor.py).
    found = problems({**AWS, "netwrk": {}, "cluster": {"kubernetes_version": "1.99"}})
    # Issue 38: and in the same run, the rules across sections, with those two set aside: this
    # cluster section lists no admin principal.
    assert [p.split(": ")[0] for p in found] == [
        "gpu-platform:cluster.kubernetes_version",
        "gpu-platform:netwrk",
        "gpu-platform:cluster.admin_principal_arns",
    ]
    assert found[2].endswith(ON_DEFAULTS)


def test_bad_stack_declares_nothing_and_exits_2(tmp_path, capsys, monkeypatch):
    root = make_project(tmp_path, {"bad": {"gpu-platform:network": {"nat_gateway": "single"}}})
    with pytest.raises(ConfigError) as caught:
        run_program("bad", root)
    assert "stacks/Pulumi.bad.yaml" in str(caught.value)

    monkeypatch.setattr("plan.cli.ROOT", root)
    assert main(["bad", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "gpu-platform:network.nat_gateway: unknown key; did you mean 'nat_gateways'" in err
    assert not (tmp_path / "out").exists()


def test_bad_stack_registers_no_resource(tmp_path):
    root = make_project(tmp_path, {"bad": {"gpu-platform:provider": "azure"}})
    recording = Recording(stack="bad", project="gpu-platform")
    with pytest.raises(ConfigError):
        record(read_project(root), recording)
    assert [r.type for r in recording.resources.values()] == ["pulumi:pulumi:Stack"]


# ------------------------------------------------ topology settings: advice that holds

REMOVE = object()
RACK = "network.example.internal/rack"
# Per case: the stack, its scheduling keys that break a topology rule, the key refused, the
# message's advice in full, and each alternative that advice offers, applied. On AWS the levels
# are the labels EKS sets (topology.k8s.aws/network-node-layer-N) and both keys are refused, so
# the only advice that holds there is to remove them.
TOPOLOGY_ADVICE = [
    pytest.param(
        "dev",
        {"topology_labels_applied": True},
        "scheduling.topology_labels_applied",
        "only for existing clusters: on AWS EKS puts the topology labels on the nodes itself; "
        "remove it",
        [{"topology_labels_applied": REMOVE}],
        id="aws-applied-without-levels",
    ),
    pytest.param(
        "dev",
        {"topology_levels": ["Not A Label"]},
        "scheduling.topology_levels",
        "only for existing clusters: on AWS the levels are the instance topology labels EKS "
        "puts on the nodes (topology.k8s.aws/network-node-layer-N); remove it",
        [{"topology_levels": REMOVE}],
        id="aws-bad-level",
    ),
    pytest.param(
        "dev",
        {"topology_levels": [RACK, RACK]},
        "scheduling.topology_levels",
        "only for existing clusters: on AWS the levels are the instance topology labels EKS "
        "puts on the nodes (topology.k8s.aws/network-node-layer-N); remove it",
        [{"topology_levels": REMOVE}],
        id="aws-repeated-level",
    ),
    pytest.param(
        "onprem",
        {"topology_levels": [], "topology_labels_applied": True},
        "scheduling.topology_labels_applied",
        "true, but topology_levels names no label; list the labels the nodes carry, broadest "
        "first, or remove it",
        [{"topology_levels": [RACK]}, {"topology_labels_applied": REMOVE}],
        id="existing-applied-without-levels",
    ),
    pytest.param(
        "onprem",
        {"topology_levels": [RACK, "kubernetes.io/hostname"]},
        "scheduling.topology_levels[1]",
        "kubernetes.io/hostname is added below the levels given; leave it out",
        [{"topology_levels": [RACK]}],
        id="existing-hostname-level",
    ),
    pytest.param(
        "onprem",
        {"topology_levels": [RACK, RACK]},
        "scheduling.topology_levels[1]",
        f"{RACK!r} is listed twice; list each level once",
        [{"topology_levels": [RACK]}],
        id="existing-repeated-level",
    ),
]


def _with_scheduling(stack: str, keys: dict) -> dict:
    raw = {k.split(":", 1)[1]: v for k, v in stack_file_config(stack).items()}
    scheduling = raw.setdefault("scheduling", {})
    for key, value in keys.items():
        if value is REMOVE:
            scheduling.pop(key, None)
        else:
            scheduling[key] = value
    return raw


@pytest.mark.parametrize(("stack", "bad", "path", "advice", "applied"), TOPOLOGY_ADVICE)
def test_the_topology_settings_advice_yields_a_stack_that_passes(stack, bad, path, advice, applied):
    """The class: each topology setting refused says what to do, and doing it (each way the
    message offers) gives a stack the model takes, rather than one the next check refuses."""
    source = f"stacks/Pulumi.{stack}.yaml"
    with pytest.raises(ConfigError) as refused:
        parse_config(_with_scheduling(stack, bad), source)
    assert f"  - gpu-platform:{path}: {advice}" in str(refused.value).splitlines()
    for fix in applied:
        parse_config(_with_scheduling(stack, {**bad, **fix}), source)
