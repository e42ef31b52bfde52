"""The plan diff without a cloud: an earlier plan's resources.json against this plan, printed as
`terraform plan` prints one, secrets masked, ignore_changes not drift, protected changes flagged."""

from __future__ import annotations

import base64
import copy
import json
import re
import typing
from datetime import date

import pytest

from model.config.nodes import CapacityType
from model.cost import cost_report
from model.stacks import ROOT
from plan.cli import main
from plan.cost_change import format_cost_change
from plan.diff import (
    ABSENT,
    Change,
    Items,
    ResourceDiff,
    attribute_changes,
    diff_plans,
)
from plan.diff_report import format_diff
from plan.replacements import verdict
from plan.userdata_diff import userdata_lines
from tests.conftest import find, planned, stack_config
from tests.helpers.plan_diff_helpers import prod_changed

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
PREFIX = "urn:pulumi:prod::gpu-platform::"
EKS_URN = PREFIX + "gpu-platform:control:EksControlPlane$aws:eks/cluster:Cluster::prod-eks"
SUBNET_URN = PREFIX + "gpu-platform:control:Network$aws:ec2/subnet:Subnet::prod-private-us-east-1a"
FSX_KEY_URN = PREFIX + "gpu-platform:storage:FsxLustre$aws:kms/key:Key::prod-fsx-key"
BLOCK_URN = PREFIX + "gpu-platform:data:GpuNodeGroup$aws:eks/nodeGroup:NodeGroup::prod-h100-block"


def prod_now():
    plan = planned("prod")
    current = [r.as_json() for r in plan.resources]
    ignored = {r.urn: list(r.ignore_changes) for r in plan.resources}
    return current, ignored


def edited(resources, urn, edit):
    """A copy of the plan with one resource changed by `edit`, as an earlier plan would be."""
    earlier = copy.deepcopy(resources)
    edit(next(r for r in earlier if r["urn"] == urn))
    return earlier


def test_attributes_are_compared_leaf_by_leaf_with_paths_as_ignore_changes_writes_them():
    before = {"tags": {"Name": "a", "team": "ml"}, "subnetIds": ["s1", "s2"], "size": 1}
    after = {"tags": {"Name": "b"}, "subnetIds": ["s1"], "size": 1, "encrypted": True}
    assert attribute_changes(before, after) == (
        Change("encrypted", ABSENT, True),
        Change("subnetIds[1]", "s2", ABSENT),
        Change("tags.Name", "a", "b"),
        Change("tags.team", "ml", ABSENT),
    )


def test_an_emptied_list_is_a_change():
    assert attribute_changes({"cidrs": ["10.0.0.0/8"]}, {"cidrs": []}) == (
        Change("cidrs", ABSENT, []),
        Change("cidrs[0]", "10.0.0.0/8", ABSENT),
    )


def test_values_under_password_secret_or_token_keys_are_masked_both_sides():
    before = {"env": {"ADMIN_PASSWORD": "hunter2", "apiToken": "t-1", "clientSecret": "s-1"}}
    after = {"env": {"ADMIN_PASSWORD": "hunter3", "apiToken": "t-2", "clientSecret": "s-2"}}
    changes = attribute_changes(before, after)
    assert [(c.path, c.before, c.after) for c in changes] == [
        ("env.ADMIN_PASSWORD", "(secret)", "(secret)"),
        ("env.apiToken", "(secret)", "(secret)"),
        ("env.clientSecret", "(secret)", "(secret)"),
    ]
    assert "hunter" not in format_diff([ResourceDiff("update", "t", "n", False, changes)], "x")


def test_a_value_the_plan_already_masks_stays_masked_and_equal():
    # resources.json never holds a secret's value, only (secret): two plans cannot tell it moved.
    assert (
        attribute_changes({"stringData": {"k": "(secret)"}}, {"stringData": {"k": "(secret)"}})
        == ()
    )


def test_an_unchanged_plan_has_no_changes():
    current, ignored = prod_now()
    assert diff_plans(current, current, ignored) == []
    text = format_diff([], "out/prod")
    assert text == (
        "Changes against out/prod:\n"
        "  none: this plan declares what the earlier plan declared\n"
        "Diff: 0 to create, 0 to update, 0 to replace, 0 to delete."
    )


def test_the_desired_size_the_autoscaler_owns_is_not_drift():
    """components/data/nodes.py registers node groups with ignore_changes scalingConfig.desiredSize:
    an earlier plan with another desired size is no change; another max size is."""
    current, ignored = prod_now()
    assert ignored[BLOCK_URN] == ["scalingConfig.desiredSize"]
    earlier = edited(
        current, BLOCK_URN, lambda r: r["inputs"]["scalingConfig"].update(desiredSize=1)
    )
    assert diff_plans(earlier, current, ignored) == []
    earlier = edited(current, BLOCK_URN, lambda r: r["inputs"]["scalingConfig"].update(maxSize=2))
    # stacks/Pulumi.prod.yaml: the block group's max_size is 4.
    assert diff_plans(earlier, current, ignored) == [
        ResourceDiff(
            "update", NODE_GROUP, "prod-h100-block", False, (Change("scalingConfig.maxSize", 2, 4),)
        )
    ]


def test_ignore_changes_covers_the_path_and_below_and_any_index_for_a_star():
    before = {"scalingConfig": {"desiredSize": 1}, "tags": [{"v": 1}, {"v": 2}], "keep": 1}
    after = {"scalingConfig": {"desiredSize": 3}, "tags": [{"v": 5}, {"v": 6}], "keep": 2}
    assert attribute_changes(before, after, ["scalingConfig", "tags[*].v"]) == (
        Change("keep", 1, 2),
    )


def test_a_change_to_a_protected_resource_is_flagged():
    current, ignored = prod_now()
    earlier = edited(current, EKS_URN, lambda r: r["inputs"].update(deletionProtection=False))
    diffs = diff_plans(earlier, current, ignored)
    assert diffs == [
        ResourceDiff(
            "update",
            "aws:eks/cluster:Cluster",
            "prod-eks",
            True,
            (Change("deletionProtection", False, True),),
        )
    ]
    text = format_diff(diffs, "out/prod")
    assert "  ~ aws:eks/cluster:Cluster prod-eks  [PROTECTED]\n" in text
    assert "      ~ deletionProtection: false -> true\n" in text
    assert "Protected resources changed: prod-eks (update)." in text


def test_created_and_deleted_resources_and_a_lifted_protection():
    current, ignored = prod_now()
    earlier = [r for r in current if r["urn"] != SUBNET_URN]
    gone = copy.deepcopy(find(planned("prod"), "aws:kms/key:Key", "prod-fsx-key").as_json())
    gone.update(urn=gone["urn"].replace("prod-fsx-key", "prod-old-key"), name="prod-old-key")
    earlier.append(gone)
    earlier = edited(earlier, FSX_KEY_URN, lambda r: r.update(protect=False))
    diffs = diff_plans(earlier, current, ignored)
    assert [(d.action, d.name, d.protect) for d in diffs] == [
        ("create", "prod-private-us-east-1a", False),
        ("update", "prod-fsx-key", True),
        ("delete", "prod-old-key", True),
    ]
    assert diffs[1].changes == (Change("(protect)", False, True),)
    text = format_diff(diffs, "old")
    assert "  + aws:ec2/subnet:Subnet prod-private-us-east-1a\n" in text
    assert "  - aws:kms/key:Key prod-old-key  [PROTECTED]\n" in text
    assert "Diff: 1 to create, 1 to update, 0 to replace, 1 to delete." in text
    assert "Protected resources changed: prod-fsx-key (update), prod-old-key (delete)." in text


def test_a_retained_resource_is_said_to_be_forgotten_and_a_new_retention_is_a_change():
    # Issue 38: a team namespace is retained on delete (docs/operations.md, "Namespaces a
    # destroy leaves"); the diff of a plan from before says so, and a removed one is not
    # deleted from the cluster.
    onprem = [r.as_json() for r in planned("onprem").resources]
    (training,) = [r for r in onprem if r["name"] == "ns-training"]
    assert training["retain_on_delete"] is True
    earlier = edited(onprem, training["urn"], lambda r: r.pop("retain_on_delete"))
    (diff,) = diff_plans(earlier, onprem)
    assert (diff.action, diff.changes) == ("update", (Change("(retain_on_delete)", False, True),))
    gone = diff_plans(onprem, [r for r in onprem if r["urn"] != training["urn"]])
    assert [(d.action, d.name, d.retained) for d in gone] == [("delete", "ns-training", True)]
    text = format_diff(gone, "old")
    assert (
        "  - kubernetes:core/v1:Namespace ns-training  [RETAINED: forgotten, left on the cluster]\n"
        in text
    )


@pytest.mark.usefixtures("cli_on_session_plans")
def test_plan_against_an_earlier_folder_prints_the_diff(tmp_path, capsys):
    current, _ = prod_now()
    earlier = edited(
        current,
        EKS_URN,
        lambda r: r["inputs"]["vpcConfig"].update(
            endpointPublicAccess=True, publicAccessCidrs=["198.51.100.0/24"]
        ),
    )
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "resources.json").write_text(json.dumps({"resources": earlier}))
    argv = [
        "prod",
        "--out",
        str(tmp_path / "now"),
        "--against",
        str(tmp_path / "before"),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        f"Changes against {tmp_path / 'before'}:\n"
        "  ~ aws:eks/cluster:Cluster prod-eks  [PROTECTED]\n"
        "      ~ vpcConfig.endpointPublicAccess: true -> false\n"
        '      - vpcConfig.publicAccessCidrs[0]: "198.51.100.0/24"\n'
        "Diff: 0 to create, 1 to update, 0 to replace, 0 to delete.\n"
    ) in out


@pytest.mark.usefixtures("cli_on_session_plans")
def test_against_a_folder_without_a_plan_exits_2(tmp_path, capsys):
    assert (
        main(["onprem", "--quiet", "--out", str(tmp_path / "now"), "--against", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"error: --against {tmp_path}: not a plan's resources.json")


@pytest.mark.usefixtures("cli_on_session_plans")
def test_against_prints_the_changes_before_the_plan_and_alone_with_changes_only(tmp_path, capsys):
    current, _ = prod_now()
    earlier = edited(current, EKS_URN, lambda r: r["inputs"].update(deletionProtection=False))
    (tmp_path / "resources.json").write_text(json.dumps({"resources": earlier}))
    assert main(["prod", "--out", str(tmp_path / "now"), "--against", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.index(f"Changes against {tmp_path}:") < out.index("Plan for stack prod")
    argv = ["prod", "--out", str(tmp_path / "now"), "--against", str(tmp_path), "--changes-only"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Changes against {tmp_path}:\n")
    assert "Plan for stack" not in out and "Exposure:" not in out and "Policies" not in out
    assert out.splitlines()[-1].startswith("Planned prod: ")


def test_changes_only_without_an_earlier_plan_is_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["prod", "--changes-only"])
    assert stop.value.code == 2
    assert "--changes-only needs --against" in capsys.readouterr().err


# ------------------------------------------------------- a changed stack, planned for real


def test_an_instance_type_change_marks_the_node_group_replaced(tmp_path):
    """terraform-provider-aws internal/service/eks/node_group.go: instance_types is ForceNew,
    so EKS replaces the group; its launch template only gets a new version. The group's name is
    fixed, so the old group goes first (a new one beside it would collide on the name), and the
    plan says what that costs: no nodes of the group in between."""
    text = prod_changed(tmp_path, "h100-ondemand", instance_types=["p5en.48xlarge"])
    assert (
        "  -/+ aws:eks/nodeGroup:NodeGroup prod-h100-ondemand (forces replacement: instanceTypes; "
        "deleted before the new one is created)\n"
        '      ~ instanceTypes[0]: "p5.48xlarge" -> "p5en.48xlarge"  # forces replacement\n'
    ) in text
    assert (
        "      deleted first: no node of this group until the new group's nodes join: its "
        "capacity is gone in between and the training running on it is evicted\n"
    ) in text
    assert "  ~ aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand\n" in text
    # Beside the group: its canary group (the same instance types), the canary's Job that tests
    # the new type and the post-deploy self-test, whose run name follows the config.
    assert re.search(r"^Diff: 0 to create, \d+ to update, 4 to replace, 0 to delete\.$", text, re.M)
    # FACTS.md: p5.48xlarge has 32 EFA interfaces, p5en.48xlarge 16: the last 16 go, as a range.
    assert "      - networkInterfaces[16..31] removed (16 items)\n" in text
    assert "networkInterfaces[16]." not in text and "networkInterfaces[31]" not in text.replace(
        "[16..31]", ""
    )


def test_a_max_pods_change_shows_the_decoded_user_data_line(tmp_path):
    """The nodeadm NodeConfig in MIME part 1 of the user data, not two base64 blobs. p5.48xlarge
    runs 100 pods by default: the VPC CNI's limit, 2 ENIs × (50 addresses - 1) + 2 (AWS VPC CNI
    eni-max-pods.txt: p5.48xlarge 100)."""
    text = prod_changed(tmp_path, "h100-ondemand", kubelet={"max_pods": 64})
    assert (
        "  ~ aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand\n"
        "      ~ userData (decoded):\n"
        "          MIME part 1 (application/node.eks.aws):\n"
        "          @@ -7 +7 @@\n"
        "          -      maxPods: 100\n"
        "          +      maxPods: 64\n"
    ) in text
    # Its canary group takes the same change first, and the post-deploy self-test runs again
    # (its run name follows the config).
    assert "  ~ aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand-canary\n" in text
    assert "  -/+ kubernetes:jobset.x-k8s.io/v1alpha2:JobSet prod-selftest-job " in text
    assert (
        "  ! aws:eks/nodeGroup:NodeGroup prod-h100-ondemand rolls every node: "
        "launchTemplate.version reads aws:ec2/launchTemplate:LaunchTemplate prod-h100-ondemand's "
        "latestVersion, which changes: every update of a launch template's data is a new version "
        "of it; EKS replaces each node of the group with one from the new template version, "
        "draining its pods first (running training included), updateConfig.maxUnavailable at a "
        "time\n"
    ) in text
    assert (
        "Diff: 0 to create, 2 to update, 1 to replace, 0 to delete.\n"
        "Knock-on: 2 to roll, 0 to replace, 0 to update.\n"
    ) in text
    assert "TUlNRS" not in text  # base64 of "MIME": no encoded user data


def test_a_desired_size_change_shows_the_monthly_cost_delta(tmp_path):
    """p5.48xlarge on demand, us-east-1 price list 2026-07-20: $55.04/h; 2 more nodes at
    desired size × 730 h = +$80,358.40 a month, and their 200 GiB gp3 root volumes, 2 × (200 ×
    $0.08 + 125 MB/s × $0.04) = +$42.00 (AWS Price List API, 2026-08-20; EBS pricing page,
    N. Virginia). Shipped prod at
    desired size: 118,756.30 (tests/model/test_cost.py works it out)."""
    text = prod_changed(tmp_path, "h100-ondemand", scaling={"desired_size": 2})
    assert (
        "Cost change (USD/month at node groups' min / desired / max size):\n"
        "  GPU node group h100-ondemand (p5.48xlarge, on_demand): "
        "$0.00 / $0.00 / $321,433.60 -> $0.00 / $80,358.40 / $321,433.60\n"
        "      +$80,358.40/month at desired size\n"
        "  root volumes of GPU node group h100-ondemand (200 GiB gp3 each): "
        "$0.00 / $0.00 / $168.00 -> $0.00 / $42.00 / $168.00\n"
        "      +$42.00/month at desired size\n"
        "  total: $118,756.30 / $118,756.30 / $440,670.23 -> $118,756.30 / $199,156.70 / "
        "$440,670.23\n"
        "      +$80,400.40/month at desired size\n"
    ) in text
    # The autoscaler owns the desired size of a running group: no AWS resource changes; only
    # the post-deploy self-test runs again (its run name follows the config).
    assert "Diff: 0 to create, 0 to update, 1 to replace, 0 to delete." in text
    assert "  -/+ kubernetes:jobset.x-k8s.io/v1alpha2:JobSet prod-selftest-job " in text
    assert " aws:" not in text.split("Diff:")[0]


def test_the_docs_show_a_real_diff_with_a_replacement_and_its_cost(tmp_path):
    """docs/review.md, "Reviewing a change": prod's on-demand group moved to p5en.48xlarge and
    started at 2 nodes, as the program prints it. us-east-1 price list 2026-07-20: p5en.48xlarge
    $63.296/h, p5.48xlarge $55.04/h: 2 × 63.296 × 730 = +$92,412.16 a month at desired size,
    8 × (63.296 - 55.04) × 730 = +$48,215.04 at max."""
    text = prod_changed(
        tmp_path, "h100-ondemand", instance_types=["p5en.48xlarge"], scaling={"desired_size": 2}
    )
    assert (
        "  GPU node group h100-ondemand (p5en.48xlarge, on_demand): "
        "$0.00 / $0.00 / $321,433.60 -> $0.00 / $92,412.16 / $369,648.64\n"
        "      +$92,412.16/month at desired size; +$48,215.04/month at max size\n"
    ) in text
    page = (ROOT / "docs" / "review.md").read_text()
    shown = re.search(r"<!-- diff-example -->\n```\n(.*?)```", page, re.DOTALL)
    assert shown, "docs/review.md: no ``` block after <!-- diff-example -->"
    assert shown.group(1) == text + "\n", (
        "docs/review.md's example diff is stale: paste what this test's change prints (prod, "
        "h100-ondemand on p5en.48xlarge at desired size 2, --changes-only) after "
        "<!-- diff-example -->, then review it"
    )


# ------------------------------------------------------------------- reading the changes

INTERFACE = {"deviceIndex": 0, "interfaceType": "efa", "deleteOnTermination": True}


def test_whole_list_items_added_or_removed_together_collapse_to_a_range():
    before = {"nics": [dict(INTERFACE, networkCardIndex=i) for i in range(32)]}
    after = {"nics": [dict(INTERFACE, networkCardIndex=i) for i in range(16)]}
    assert attribute_changes(before, after) == (Change("nics[16..31]", Items(16), ABSENT),)
    assert attribute_changes(after, before) == (Change("nics[16..31]", ABSENT, Items(16)),)


def test_a_single_item_and_a_changed_item_keep_their_leaves_in_reading_order():
    before = {"ids": ["a", "b", "c"] + [f"x{i}" for i in range(9)], "n": [{"v": 1}, {"v": 2}]}
    after = {"ids": ["a", "B", "c"] + [f"x{i}" for i in range(8)], "n": [{"v": 1}]}
    assert attribute_changes(before, after) == (
        Change("ids[1]", "b", "B"),
        Change("ids[11]", "x8", ABSENT),
        Change("n[1].v", 2, ABSENT),
    )
    # Reading order: index 2 before index 10, not as strings sort them.
    wide = attribute_changes({"l": list(range(11))}, {"l": [*range(2), 9, *range(3, 10), 0]})
    assert [c.path for c in wide] == ["l[2]", "l[10]"]


def test_a_range_of_a_list_that_forces_replacement_is_marked():
    # terraform-provider-aws eks/node_group.go: subnet_ids is ForceNew.
    diff = ResourceDiff(
        "replace",
        NODE_GROUP,
        "g",
        False,
        (Change("subnetIds[1..2]", Items(2), ABSENT),),
        verdict(NODE_GROUP, ["subnetIds[1..2]"]),
    )
    text = format_diff([diff], "x")
    assert "  -/+ aws:eks/nodeGroup:NodeGroup g (forces replacement: subnetIds)\n" in text
    assert "      - subnetIds[1..2] removed (2 items)  # forces replacement\n" in text


def encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_decoded_user_data_keeps_secrets_masked():
    before = encoded("#!/bin/bash\nexport API_TOKEN=t-1\nDB_PASSWORD: hunter2\nRETRIES=3\n")
    after = encoded("#!/bin/bash\nexport API_TOKEN=t-2\nDB_PASSWORD: hunter3\nRETRIES=4\n")
    lines = userdata_lines(before, after)
    assert lines == ["MIME part 1 (text):", "@@ -4 +4 @@", "-RETRIES=3", "+RETRIES=4"]
    only_secret = encoded("#!/bin/bash\nexport API_TOKEN=t-3\nDB_PASSWORD: hunter2\nRETRIES=3\n")
    assert userdata_lines(before, only_secret) == [
        "MIME part 1 (text):",
        "(only a masked value changed)",
    ]
    shown = userdata_lines(encoded("A=1\n"), encoded("A=1\nclient_secret = s-1\n"))
    assert shown[-1] == "+client_secret = (secret)"


def test_a_protected_resource_replaced_says_what_to_do():
    diff = ResourceDiff(
        "replace",
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        "prod-fsx",
        True,
        (Change("subnetIds[0]", "a", "b"),),
        verdict("aws:fsx/lustreFileSystem:LustreFileSystem", ["subnetIds[0]"]),
    )
    text = format_diff([diff], "x")
    assert (
        "  -/+ aws:fsx/lustreFileSystem:LustreFileSystem prod-fsx (forces replacement: "
        "subnetIds)  [PROTECTED]\n"
    ) in text
    assert "Diff: 0 to create, 0 to update, 1 to replace, 0 to delete." in text
    assert "Protected resources changed: prod-fsx (replace). `pulumi up` refuses" in text


def test_what_the_table_cannot_decide_is_said_under_the_resource():
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"
    maybe = ResourceDiff(
        "update",
        fsx,
        "fs",
        False,
        (Change("storageCapacity", 9600, 4800),),
        verdict(fsx, ["storageCapacity"]),
    )
    provider = ResourceDiff(
        "update",
        "pulumi:providers:aws",
        "aws",
        False,
        (Change("region", "us-east-1", "us-west-2"),),
        verdict("pulumi:providers:aws", ["region"]),
    )
    text = format_diff([maybe, provider], "x")
    assert "      may force replacement: storageCapacity: CustomizeDiff: replaces when" in text
    assert "  1 of the updates may replace (see `may force replacement`): fs" in text
    assert "      a provider's settings: `pulumi preview` decides what this replaces" in text


# ------------------------------------------------------ cost deltas as each capacity is billed


def test_a_capacity_block_resize_costs_nothing_it_is_paid_up_front(tmp_path):
    """Issue 26: lowering the Capacity Block group's desired size printed -$28,710.90/month
    (1 × $39.33 × 730 h) though the block is paid up front whether its instances run or not
    (EC2 User Guide, "Capacity Blocks pricing and billing")."""
    # Shipped prod sizes the block to its count (min = desired = max = 4) and gives it a window
    # of 4 instances: its line prices the 4 bought at every size (4 × 39.33 × 730 =
    # $114,843.60), so one node fewer at min and desired size changes nothing there.
    text = prod_changed(tmp_path, "h100-block", scaling={"min_size": 3, "desired_size": 3})
    assert "  GPU node group h100-block (p5.48xlarge, capacity_block):" not in text
    assert "-$28,710.90" not in text
    # The block's instances are prepaid, their EBS root volumes are not: one node fewer from
    # day one is one 200 GiB gp3 volume fewer, 200 × $0.08 + 125 MB/s × $0.04 = $21.00.
    assert (
        "  root volumes of GPU node group h100-block (200 GiB gp3 each): "
        "$84.00 / $84.00 / $84.00 -> $63.00 / $63.00 / $84.00\n"
        "      -$21.00/month at min size; -$21.00/month at desired size\n"
    ) in text
    assert "-$21.00/month at desired size\n  a node group starts" in text


def _block_report(capacity: str, desired: int, max_size: int = 4) -> dict:
    """prod's cost output with its h100-block group bought as `capacity` at these sizes."""
    cfg = stack_config("prod")
    groups = [
        g.model_copy(
            update={
                "capacity": capacity,
                "scaling": g.scaling.model_copy(
                    update={"min_size": 0, "desired_size": desired, "max_size": max_size}
                ),
                # Priced by its own sizes: a window's line is the instances bought, whatever
                # the group's sizes (tests/model/test_reservation_cost.py).
                "reservation_window": None,
            }
        )
        if g.name == "h100-block"
        else g
        for g in cfg.gpu_node_groups
    ]
    return cost_report(cfg.model_copy(update={"gpu_node_groups": groups}), PRICED_ON)


PRICED_ON = date(2026, 7, 20)
# p5.48xlarge, us-east-1 price list 2026-07-20: $55.04/h on demand (a reservation bills the
# on-demand rate), spot at the assumed 60% off (gpu-platform:cost.spot_discount 0.6), a Capacity
# Block $39.33/instance-h (model/catalog_prices.py); × 730 h for one node fewer.
BILLED = {
    "on_demand": ("-$40,179.20/month at desired size", None),
    "spot": ("-$16,071.68/month at desired size", None),
    "reservation": (
        "$0.00/month at desired size: a capacity reservation is billed for every reserved "
        "instance whether it runs or not",
        "-$40,179.20/month at max size",
    ),
    "capacity_block": (
        "$0.00/month at desired size: a Capacity Block is paid up front for the whole block, "
        "whether its instances run or not",
        "-$28,710.90/month at max size",
    ),
}


def test_every_capacity_kind_has_its_billing():
    assert set(BILLED) == set(typing.get_args(CapacityType))


@pytest.mark.parametrize("capacity", sorted(BILLED))
def test_a_size_change_costs_what_its_capacity_kind_bills(capacity):
    """By the instance-hour for on demand and spot; reserved kinds are paid for what is
    reserved (priced at max size), so a desired change within it is $0 and a max change
    (what is reserved) is not."""
    within, reserved = BILLED[capacity]
    text = "\n".join(format_cost_change(_block_report(capacity, 2), _block_report(capacity, 1)))
    assert f"      {within}\n" in text + "\n"
    if reserved is not None:
        text = "\n".join(
            format_cost_change(_block_report(capacity, 2), _block_report(capacity, 2, 3))
        )
        assert f"      {reserved}\n" in text + "\n"
