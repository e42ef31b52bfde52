"""The fields that force a replacement: the provider-facts table the diff reads, and how its
paths match the diff's. Expected verdicts are the provider sources' own, named in each case."""

from __future__ import annotations

import json
import re

import pytest

from model.stacks import ROOT
from plan.diff import flatten
from plan.replacements import (
    BUILTIN_TABLE,
    KUBERNETES_ANY_KIND,
    TABLE,
    path_pattern,
    rule_for,
    rules,
    verdict,
)
from tests.helpers.crds import is_custom_resource
from tests.helpers.team_stacks import STACKS_AND_TEAMS, plan_of
from tests.helpers.varied_stacks import AWS_FIXTURES, DRA_STACK, aws_plan, every_aws_plan

SHARED_TABLE = ROOT.parent / "shared" / "provider-facts" / "replacements.json"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def test_the_table_is_the_shared_provider_facts_table_unchanged():
    """plan/replacements.json is ../shared/provider-facts/replacements.json, derived from the
    provider sources at the pinned versions: an edit to the copy, or a newer shared table, fails
    here (copy the shared file over to take it)."""
    assert TABLE.read_bytes() == SHARED_TABLE.read_bytes()


def test_the_builtin_rows_fill_only_what_the_shared_table_lacks():
    """replacements_builtin.json adds built-in kinds and AWS types; a row the shared table also
    has would be shadowed by it, so a newer shared table that gains one asks for the local row
    to go. Each row is read as the shared table's rows are: a Kubernetes kind from
    pulumi-kubernetes' forceNew table, an AWS type from its terraform-provider-aws file at a
    recorded commit, with `region` (every regional AWS type replaces on it)."""
    shared = json.loads(TABLE.read_text())["types"]
    builtin = json.loads(BUILTIN_TABLE.read_text())["types"]
    assert builtin and not set(builtin) & set(shared)
    for token, row in builtin.items():
        if token.startswith("kubernetes:"):
            assert row["replace_on"][:2] == ["metadata.name", "metadata.namespace"], token
            assert "diff.go" in row["source"], token
        else:
            assert token.startswith("aws:"), token
            assert "region" in row["replace_on"], token
            assert re.fullmatch(
                r"hashicorp/terraform-provider-aws:internal/service/\S+\.go @ commit [0-9a-f]{40}",
                row["source"],
            ), token


def test_a_cluster_role_bindings_role_ref_forces_replacement():
    # pulumi-kubernetes diff.go: roleBinding = properties{".roleRef"} for both binding kinds.
    binding = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
    assert verdict(binding, ["roleRef.name"]).forced_by == ("roleRef",)
    assert not verdict("kubernetes:batch/v1:CronJob", ["spec.schedule"]).replaces


def _api_version(token: str) -> str:
    group_version = token.split(":")[1]
    return group_version.removeprefix("core/")


# The AWS fixtures too: a type only one declares (the GB200 stack's Local Zone opt-in) needs its
# row. Not yet the DRA fixture: its DeviceClass has no row (issue 41 §1 adds the DRA kinds).
TYPED_FIXTURES = [f for f in AWS_FIXTURES if f != DRA_STACK]


@pytest.mark.parametrize("stack", [*STACKS_AND_TEAMS, *TYPED_FIXTURES])
def test_every_resource_type_a_stack_declares_has_its_row(stack):
    """A type without a row would be diffed as an update whatever changed. Kubernetes kinds
    that the API server itself serves need their own row (pulumi-kubernetes' forceNew table
    lists per kind); custom resources take the row for any kind. Provider resources are the
    engine's, not a provider's schema: the diff says `pulumi preview` decides."""
    table = rules()
    missing = []
    for resource in (aws_plan(stack) if stack in AWS_FIXTURES else plan_of(stack)).resources:
        token = resource.type
        if not resource.custom or token.startswith("pulumi:providers:") or token in table:
            continue
        custom_kind = token.startswith("kubernetes:") and is_custom_resource(
            {"apiVersion": _api_version(token)}
        )
        if not custom_kind or getattr(rule_for(token), "type", None) != KUBERNETES_ANY_KIND:
            missing.append(token)
    assert not missing, sorted(set(missing))


def _concrete(path: str) -> str:
    """A table path as the diff writes a change under it: an index for `[]`, `.key` for
    `["key"]`, a leaf below it."""
    return re.sub(r'\["([^"]+)"\]', r".\1", path).replace("[]", "[3]") + ".x"


def test_every_path_in_the_table_matches_the_changes_under_it():
    """The whole table as a class: each listed path, written as the diff writes a change below
    it, is found; conditional keys (`a|b` any of them) are found as "may replace"."""
    for token, row in json.loads(TABLE.read_text())["types"].items():
        for path in row.get("replace_on", []):
            assert path in verdict(token, [_concrete(path)]).forced_by, (token, path)
        for key in row.get("replace_on_conditional", {}):
            for path in key.split("|"):
                maybe = [k for k, _ in verdict(token, [_concrete(path)]).maybe]
                assert key in maybe, (token, path)


@pytest.mark.parametrize(
    "token, paths, forced",
    [
        # terraform-provider-aws internal/service/eks/node_group.go: instance_types, subnet_ids
        # and capacity_type are ForceNew; scaling_config, labels, taints update in place.
        (NODE_GROUP, ["instanceTypes[0]"], ("instanceTypes",)),
        (NODE_GROUP, ["subnetIds[1]", "capacityType"], ("capacityType", "subnetIds")),
        (NODE_GROUP, ["scalingConfig.maxSize", "labels.team", "taints[0].value"], ()),
        # ... launch_template: id and name are ForceNew, version rolls the nodes in place.
        (NODE_GROUP, ["launchTemplate.version"], ()),
        (NODE_GROUP, ["launchTemplate.id"], ("launchTemplate.id",)),
        # ec2_launch_template.go: only name / name_prefix are ForceNew; user data and network
        # interfaces make a new template version.
        ("aws:ec2/launchTemplate:LaunchTemplate", ["userData", "networkInterfaces[16].x"], ()),
        # eks/cluster.go: version is updated in place (UpdateClusterVersion); role_arn ForceNew.
        ("aws:eks/cluster:Cluster", ["version"], ()),
        ("aws:eks/cluster:Cluster", ["roleArn"], ("roleArn",)),
        # fsx/lustre_file_system.go: subnet_ids and deployment_type are ForceNew.
        ("aws:fsx/lustreFileSystem:LustreFileSystem", ["subnetIds[0]"], ("subnetIds",)),
        # pulumi-kubernetes diff.go: a Job's pod template is in the forceNew table ...
        ("kubernetes:batch/v1:Job", ["spec.template.spec.containers[0].image"], ("spec.template",)),
        ("kubernetes:batch/v1:Job", ["spec.backoffLimit"], ()),
        # ... a custom resource replaces only on metadata.name / metadata.namespace ...
        ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", ["spec.cohort"], ()),
        ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", ["metadata.name"], ("metadata.name",)),
        # ... and helm_release.go: a Release's name replaces, its values upgrade in place.
        ("kubernetes:helm.sh/v3:Release", ["values.image.tag"], ()),
        ("kubernetes:helm.sh/v3:Release", ["name"], ("name",)),
        # ec2/ec2_availability_zone_group.go: group_name is ForceNew, opt_in_status updated
        # in place (ModifyAvailabilityZoneGroup).
        (
            "aws:ec2/availabilityZoneGroup:AvailabilityZoneGroup",
            ["groupName"],
            ("groupName",),
        ),
        ("aws:ec2/availabilityZoneGroup:AvailabilityZoneGroup", ["optInStatus"], ()),
        # ec2/vpc_route.go: route_table_id and the destination are ForceNew; the target is
        # changed in place (ReplaceRoute).
        ("aws:ec2/route:Route", ["destinationCidrBlock"], ("destinationCidrBlock",)),
        ("aws:ec2/route:Route", ["transitGatewayId", "natGatewayId"], ()),
        # ec2/transitgateway_vpc_attachment.go: transit_gateway_id and vpc_id are ForceNew,
        # subnet_ids are modified in place (ModifyTransitGatewayVpcAttachment).
        ("aws:ec2transitgateway/vpcAttachment:VpcAttachment", ["subnetIds[2]"], ()),
        (
            "aws:ec2transitgateway/vpcAttachment:VpcAttachment",
            ["transitGatewayId"],
            ("transitGatewayId",),
        ),
        # ec2/vpnsite_gateway_attachment.go: no update; both arguments ForceNew.
        ("aws:ec2/vpnGatewayAttachment:VpnGatewayAttachment", ["vpnGatewayId"], ("vpnGatewayId",)),
        # terraform-provider-random resource_password.go: every argument RequiresReplace.
        ("random:index/randomPassword:RandomPassword", ["length"], ("length",)),
    ],
)
def test_the_fields_the_provider_sources_replace_on(token, paths, forced):
    assert verdict(token, paths).forced_by == forced


def test_a_role_policy_attachment_is_detached_before_it_is_reattached():
    # pulumi-aws provider/resource_overrides.go: DeleteBeforeReplace for rolePolicyAttachment.
    found = verdict("aws:iam/rolePolicyAttachment:RolePolicyAttachment", ["policyArn"])
    assert found.replaces and found.delete_before_replace
    assert not verdict("aws:iam/role:Role", ["name"]).delete_before_replace


def test_a_conditional_field_may_replace_with_the_tables_words():
    # fsx/lustre_file_system.go CustomizeDiff: a smaller storage_capacity replaces.
    found = verdict("aws:fsx/lustreFileSystem:LustreFileSystem", ["storageCapacity"])
    assert not found.replaces
    ((path, why),) = found.maybe
    assert path == "storageCapacity" and "smaller" in why


def test_an_unverified_field_may_replace():
    found = verdict(NODE_GROUP, ["warmPoolConfig.maxGroupPreparedCapacity"])
    assert found.maybe == (
        (
            "warmPoolConfig",
            "its ForceNew status is not verified in the provider source read (provider-facts)",
        ),
    )


def test_a_type_the_table_lacks_is_said_so_and_never_taken_for_a_custom_resource():
    """A built-in kind without its own row is unknown, not the any-kind row; so is a component
    such as ConfigFile."""
    assert verdict("aws:sqs/queue:Queue", ["name"]).unknown_type
    assert verdict("kubernetes:networking.k8s.io/v1:Ingress", ["spec"]).unknown_type
    assert verdict("kubernetes:node.k8s.io/v1:RuntimeClass", ["handler"]).unknown_type
    assert verdict("kubernetes:yaml/v2:ConfigFile", ["file"]).unknown_type
    assert not verdict("kubernetes:monitoring.coreos.com/v1:PodMonitor", ["spec"]).unknown_type


def test_the_kinds_charts_render_replace_as_pulumi_kubernetes_forcenew_table_says():
    """pulumi-kubernetes provider/pkg/provider/diff.go @ 00302beb: apps v1 Deployment forces on
    .spec.selector; the table spells DaemonSet "Daemonset", so a DaemonSet's selector does not
    match it; RoleBinding forces on .roleRef; every kind on .metadata.name."""
    deployment = "kubernetes:apps/v1:Deployment"
    assert verdict(deployment, ["spec.selector.matchLabels.app"]).forced_by == ("spec.selector",)
    assert verdict(deployment, ["spec.template.spec.containers[0].image"]).forced_by == ()
    daemonset = verdict("kubernetes:apps/v1:DaemonSet", ["spec.selector.matchLabels.app"])
    assert not daemonset.unknown_type and daemonset.forced_by == ()
    binding = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
    assert verdict(binding, ["roleRef.name"]).forced_by == ("roleRef",)
    crd = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    assert verdict(crd, ["metadata.name", "spec.versions[0].served"]).forced_by == (
        "metadata.name",
    )


# Inputs that name the resource itself, by the table's `autonamed` field: changing one is a new
# name, so a replacement on it cannot collide; `region` moves it where the name is free.
def _name_inputs(row: dict) -> set[str]:
    names = {a for a in row.get("autonamed", []) if "." not in a and "[" not in a}
    return names | {f"{n}Prefix" for n in names} | {"region"}


def test_every_fixed_name_that_a_replacement_would_collide_on_is_deleted_first():
    """The class (provider-facts: `autonamed` says which input is the physical name,
    `replace_on` what replaces): a resource the program names itself, with an input set that
    replaces it and is not the name, is deleted before its replacement is created. Pulumi
    creates the new one first by default, and a second EKS node group, cluster or ECR
    repository of the same name is refused, so `pulumi up` would fail where the plan said
    `-/+`."""
    table = json.loads(SHARED_TABLE.read_text())["types"]
    colliding = []
    for stack, plan in every_aws_plan():
        for r in plan.resources:
            row = table.get(r.type, {})
            named = [a for a in row.get("autonamed", []) if r.inputs.get(a) is not None]
            if not named or r.delete_before_replace:
                continue
            inputs = flatten(r.inputs)
            forcing = [
                path
                for path in row["replace_on"]
                if path not in _name_inputs(row)
                and any(path_pattern(path).match(x) for x in inputs)
            ]
            if forcing:
                colliding.append(f"{stack}: {r.type} {r.name} (named by {named[0]}; {forcing})")
    assert not colliding, "created beside a resource of the same name on replacement: " + (
        "; ".join(colliding)
    )
