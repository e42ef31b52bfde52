"""The plan diff without a cloud: an earlier plan's resources.json against this plan, printed as
`terraform plan` prints one, secrets masked, ignore_changes not drift, protected changes flagged."""

from __future__ import annotations

import copy
import json

from infra.plan.cli import main
from infra.plan.diff import ABSENT, Change, ResourceDiff, attribute_changes, diff_plans, format_diff
from tests.conftest import find, planned

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
        "Diff: 0 to create, 0 to update, 0 to delete."
    )


def test_the_desired_size_the_autoscaler_owns_is_not_drift():
    """components/nodes.py registers node groups with ignore_changes scalingConfig.desiredSize:
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
    assert "Diff: 1 to create, 1 to update, 1 to delete." in text
    assert "Protected resources changed: prod-fsx-key (update), prod-old-key (delete)." in text


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
        "Diff: 0 to create, 1 to update, 0 to delete.\n"
    ) in out


def test_against_a_folder_without_a_plan_exits_2(tmp_path, capsys):
    assert (
        main(["onprem", "--quiet", "--out", str(tmp_path / "now"), "--against", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"error: --against {tmp_path}: not a plan's resources.json")
