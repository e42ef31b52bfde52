"""Knock-on effects in the diff: what rolls, restarts or is replaced because of a change that is
not its own, each with why (plan/knock_on.py's rules, each with a literal case and, where
the plan has them, every instance of the class)."""

from __future__ import annotations

import copy
import re

import pytest

from plan.diff import diff_plans
from plan.knock_on import LAUNCH_TEMPLATE, NODE_GROUP, ROLLS, WORKLOADS, flowing, own_rolls
from plan.rendered_diff import current_sources, diff_rendered
from tests.conftest import AWS_STACKS, planned, rendered
from tests.helpers.plan_diff_helpers import prod_changed

ROLLS_NODES = (
    "EKS replaces each node of the group with one from the new template version, draining its "
    "pods first (running training included), updateConfig.maxUnavailable at a time"
)


def test_a_root_volume_change_rolls_every_node_of_the_group(tmp_path):
    """Issue 26: root volume 200 -> 300 GiB showed as one launch template update. The group
    follows the template's latest version (components/data/nodes.py), and a new version is a node
    group update that replaces every node (EKS User Guide, "Understand each phase of node
    updates")."""
    text = prod_changed(tmp_path, "h100-ondemand", root_volume_gib=300)
    assert (
        "  ~ aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand\n"
        "      ~ blockDeviceMappings[0].ebs.volumeSize: 200 -> 300\n"
    ) in text
    assert (
        "  ! aws:eks/nodeGroup:NodeGroup prod-h100-ondemand rolls every node: "
        "launchTemplate.version reads aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand's "
        "latestVersion, which changes: every update of a launch template's data is a new version "
        f"of it; {ROLLS_NODES}\n"
    ) in text
    # The group's canary takes the same change (its own template, its own roll), and the
    # post-deploy self-test runs again: its run name follows the config.
    assert "  ~ aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand-canary\n" in text
    assert (
        "Diff: 0 to create, 2 to update, 1 to replace, 0 to delete.\n"
        "Knock-on: 2 to roll, 0 to replace, 0 to update.\n"
    ) in text


def _edited(resources, token, name, edit):
    earlier = copy.deepcopy(resources)
    edit(next(r for r in earlier if (r["type"], r["name"]) == (token, name)))
    return earlier


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_node_group_rolls_when_its_launch_template_changes(stack):
    """The class: every managed node group of every AWS stack reads its template's latest
    version, so a change of the template's data rolls it, and a change of its tags alone
    (no new version) does not."""
    current = [r.as_json() for r in planned(stack).resources]
    groups = [r for r in current if r["type"] == NODE_GROUP]
    assert groups, f"{stack}: no node group"
    for group in groups:
        version = group["inputs"]["launchTemplate"]["version"]
        template = re.fullmatch(r"\(known after apply: ([^.)]+)\)", version)
        assert template, f"{stack} {group['name']}: launchTemplate.version is {version!r}"
        name = template.group(1)

        def data(r):
            r["inputs"]["metadataOptions"]["httpPutResponseHopLimit"] += 1

        def description(r):
            r["inputs"]["description"] += " (earlier)"

        earlier = _edited(current, LAUNCH_TEMPLATE, name, data)
        effects = flowing(diff_plans(earlier, current), current)
        assert [(k.type, k.name, k.effect) for k in effects] == [
            (NODE_GROUP, group["name"], "rolls every node")
        ], f"{stack} {group['name']}"
        earlier = _edited(current, LAUNCH_TEMPLATE, name, description)
        assert diff_plans(earlier, current), "the description edit is a change"
        assert flowing(diff_plans(earlier, current), current) == [], f"{stack} {name}"


# terraform-provider-aws internal/service/eks/node_group.go (commit 012e0a32f068),
# resourceNodeGroupUpdate: `d.HasChanges("launch_template", "release_version", "version")`
# calls UpdateNodegroupVersion, which replaces every node (EKS User Guide, "Understand each
# phase of node updates"). Pulumi's names of those inputs:
NODE_ROLLING_INPUTS = {"launchTemplate", "releaseVersion", "version"}


def test_the_node_group_inputs_that_roll_nodes_are_the_providers():
    assert {r.path for r in ROLLS if r.type == NODE_GROUP} == NODE_ROLLING_INPUTS


@pytest.mark.parametrize("stack", AWS_STACKS)
@pytest.mark.parametrize(
    ("path", "earlier"),
    [("version", "1.30"), ("releaseVersion", "1.30.0-20240101"), ("launchTemplate.version", "0")],
)
def test_every_node_group_rolls_on_each_input_that_updates_its_version(stack, path, earlier):
    """The class: each managed node group of every AWS stack, each input the provider sends
    with UpdateNodegroupVersion changed on the group itself, shows its nodes rolling."""
    current = [r.as_json() for r in planned(stack).resources]
    groups = [r["name"] for r in current if r["type"] == NODE_GROUP]
    assert groups, f"{stack}: no node group"
    for name in groups:

        def edit(r):
            *parents, leaf = path.split(".")
            target = r["inputs"]
            for part in parents:
                target = target[part]
            target[leaf] = earlier

        diffs = diff_plans(_edited(current, NODE_GROUP, name, edit), current)
        assert [(d.action, d.name) for d in diffs] == [("update", name)], f"{stack} {name}"
        assert [(k.name, k.effect) for k in own_rolls(diffs)] == [(name, "rolls every node")], (
            f"{stack} {name}: a change of {path} is not shown to roll the nodes"
        )


def test_a_replaced_resource_replaces_what_its_id_flows_into_and_so_on():
    """A replaced subnet is a new subnet ID; the node group in it reads that ID in subnetIds,
    which EKS replaces a group on (terraform-provider-aws internal/service/eks/node_group.go:
    subnet_ids ForceNew), and the replaced group's new Auto Scaling group name flows into its
    autoscaling tags (autoscaling/tag.go: autoscaling_group_name ForceNew)."""
    current = [r.as_json() for r in planned("prod").resources]

    def cidr(r):
        r["inputs"]["cidrBlock"] = "10.99.0.0/19"

    earlier = _edited(current, "aws:ec2/subnet:Subnet", "prod-private-us-east-1b", cidr)
    diffs = diff_plans(earlier, current)
    assert [(d.action, d.name) for d in diffs] == [("replace", "prod-private-us-east-1b")]
    effects = {(k.type, k.name): k for k in flowing(diffs, current)}
    block = effects[(NODE_GROUP, "prod-h100-block")]
    assert block.effect == "is replaced"
    assert block.why == (
        "subnetIds[0] reads aws:ec2/subnet:Subnet prod-private-us-east-1b's id, which is "
        "replaced: a new resource, with new IDs"
    )
    tag = effects[("aws:autoscaling/tag:Tag", "prod-h100-block-label/gpu-platform/gpu-model")]
    assert tag.effect == "is replaced"
    assert tag.why.startswith(
        "autoscalingGroupName reads aws:eks/nodeGroup:NodeGroup prod-h100-block's "
        "resources[0].autoscalingGroups[0].name, which is replaced"
    )


def test_an_unchanged_plan_has_no_knock_on():
    current = [r.as_json() for r in planned("prod").resources]
    assert flowing(diff_plans(current, current), current) == []


NFD_WORKER = "gpu-operator/charts/node-feature-discovery/templates/worker.yaml"
NFD_CONF = "gpu-operator/charts/node-feature-discovery/templates/nfd-worker-conf.yaml"


def _with_checksum_changed(release: str, path: str) -> dict:
    sources = dict(current_sources(rendered("prod")))
    files = dict(sources[release])
    files[path] = re.sub(r"(checksum/[\w.-]+: )\w+", r"\g<1>0000", files[path], count=1)
    sources[release] = tuple(files.items())
    return sources


def test_a_changed_config_a_workload_hashes_rolls_its_pods():
    """node-feature-discovery's worker DaemonSet carries checksum/config, a hash of its
    ConfigMap (the chart's templates/worker.yaml), so a changed ConfigMap rolls every worker
    pod (Helm docs, "Automatically Roll Deployments"; Kubernetes: a pod template change
    replaces the pods)."""
    before = _with_checksum_changed("prod-gpu-operator", NFD_WORKER)
    files = dict(before["prod-gpu-operator"])
    assert NFD_CONF in files, f"no {NFD_CONF} in the gpu-operator render"
    files[NFD_CONF] = files[NFD_CONF].replace("sources:", "sources: # earlier", 1)
    before["prod-gpu-operator"] = tuple(files.items())
    diffs = diff_rendered(before, current_sources(rendered("prod")))
    [roll] = own_rolls(diffs)
    assert roll.name.startswith("DaemonSet ") and roll.name.endswith(" (prod-gpu-operator)")
    assert roll.effect == "rolls every pod"
    assert "a checksum/ annotation, a hash of the config its pods read: ConfigMap " in roll.why


def _workloads(stack: str) -> list[tuple[str, str]]:
    """(release, chart file) of every rendered workload with a checksum/ pod annotation."""
    found = []
    for release in rendered(stack).releases:
        for path, text in release.templates:
            kinds = re.findall(r"^kind: (\w+)", text, re.M)
            if re.search(r"^\s+checksum/", text, re.M) and any(
                t.rsplit(":", 1)[1] in kinds for t in WORKLOADS
            ):
                found.append((release.release, path))
    return found


def test_every_rendered_workload_with_a_checksum_rolls_when_it_changes():
    """The class, on prod: each checksum-annotated workload of every chart rolls its pods."""
    found = _workloads("prod")
    assert len(found) >= 3, found  # NFD master and worker, Grafana (shared/helm at the pins)
    for release, path in found:
        diffs = diff_rendered(
            _with_checksum_changed(release, path), current_sources(rendered("prod"))
        )
        rolls = own_rolls(diffs)
        assert [k.effect for k in rolls] == ["rolls every pod"], (release, path)
        assert "checksum/" in rolls[0].why
