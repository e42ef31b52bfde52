"""Custom-resource fields the API server refuses to change once set, read from the CEL transition
rules of every pinned CRD (../shared/crds): the table the program and the diff read, the
replacement every stack declares for them, and what the plan diff says of a day-2 change.

A Kueue ResourceFlavor with a `topologyName` keeps its `topologyName`, `nodeLabels` and
`tolerations`, and a Topology its `levels` (kubernetes-sigs/kueue v0.19.2
apis/kueue/v1beta2/resourceflavor_types.go and topology_types.go, `+kubebuilder:validation:
XValidation` rules): without a replacement, a pool moved from p5 to p6-b200 (another topology)
or new rack labels fail `pulumi up` while the diff calls them updates.
"""

from __future__ import annotations

import copy
import json

import pytest

from components.kubernetes_object import NEVER_REPLACED
from model.immutable_fields import (
    TABLE,
    VALUE,
    VALUE_OR_PRESENCE,
    VALUE_OR_REMOVAL,
    classify,
    derive,
    refused,
    transition_rules,
)
from plan.cli import plan_stack
from plan.diff import PreviousPlan, diff_plans
from plan.diff_report import changes_block, format_diff
from tests.conftest import STACKS, make_project, planned, stack_file_config
from tests.helpers.crds import CRDS, is_custom_resource, schema_path

FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
TOPOLOGY = "kubernetes:kueue.x-k8s.io/v1beta2:Topology"


def _oldself_rules(node) -> int:
    """Every `x-kubernetes-validations` rule that reads oldSelf anywhere in a schema, found by a
    walk of every mapping (not only properties and items), so a rule `derive` would miss
    counts here."""
    if isinstance(node, list):
        return sum(_oldself_rules(n) for n in node)
    if not isinstance(node, dict):
        return 0
    own = sum("oldSelf" in r.get("rule", "") for r in node.get("x-kubernetes-validations") or [])
    return own + sum(_oldself_rules(v) for k, v in node.items() if k != "x-kubernetes-validations")


def test_the_table_is_what_the_pinned_crds_say():
    """model/immutable_fields.json is derived from ../shared/crds: a newer CRD, or an edit to the
    table, fails here (`python -m model.immutable_fields` rewrites it)."""
    assert json.loads(TABLE.read_text()) == derive(CRDS)


@pytest.mark.parametrize("file", sorted(CRDS.glob("*/*.json")), ids=lambda p: p.stem)
def test_every_transition_rule_of_every_crd_is_read(file):
    """Each rule that reads oldSelf is in the table, as an immutable field or as one the API
    server checks otherwise; none is skipped."""
    kind, version = file.stem.rsplit(".", 1)
    rows = derive(CRDS)["kinds"].get(f"kubernetes:{file.parent.name}/{version}:{kind}", {})
    read = len(rows.get("immutable", [])) + len(rows.get("checked", []))
    assert read == _oldself_rules(json.loads(file.read_text()))


def _immutable(token: str) -> set[tuple[str, str, str]]:
    return {
        (r["path"], r["when_set"], r["refuses"]) for r in derive(CRDS)["kinds"][token]["immutable"]
    }


def test_a_resource_flavor_with_a_topology_keeps_its_topology_labels_and_tolerations():
    """Kueue v0.19.2 resourceflavor_types.go, ResourceFlavorSpec's XValidation rules: "topologyName
    is immutable when topologyName is set", "nodeLabels are immutable when topologyName is set",
    "tolerations are immutable when topologyName is set"."""
    for version in ("v1beta1", "v1beta2"):
        assert _immutable(f"kubernetes:kueue.x-k8s.io/{version}:ResourceFlavor") == {
            ("spec.topologyName", "spec.topologyName", VALUE_OR_REMOVAL),
            ("spec.nodeLabels", "spec.topologyName", VALUE_OR_PRESENCE),
            ("spec.tolerations", "spec.topologyName", VALUE_OR_PRESENCE),
        }


@pytest.mark.parametrize(
    ("token", "paths"),
    [
        # Kueue v0.19.2 topology_types.go TopologySpec.Levels "field is immutable".
        (TOPOLOGY, {"spec.levels"}),
        # Kueue v0.19.2 localqueue_types.go ClusterQueue, admissioncheck_types.go ControllerName.
        ("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", {"spec.clusterQueue"}),
        ("kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck", {"spec.controllerName"}),
        # ../shared/crds/README.md, JobSet v0.12.0: immutability on network, successPolicy,
        # failurePolicy, startupPolicy, volumeClaimPolicies, replicatedJobs[].dependsOn.
        (
            "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
            {
                "spec.network",
                "spec.successPolicy",
                "spec.failurePolicy",
                "spec.startupPolicy",
                "spec.volumeClaimPolicies",
                "spec.replicatedJobs[].dependsOn",
            },
        ),
        # Rook v1.20.6 deploy/examples/crds.yaml: "DataDirHostPath is immutable".
        ("kubernetes:ceph.rook.io/v1:CephCluster", {"spec.dataDirHostPath"}),
        # network-operator v26.4.1: nicFirmwareStorage "is immutable once set".
        (
            "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy",
            {
                "spec.nicConfigurationOperator.nicFirmwareStorage.availableStorageSize",
                "spec.nicConfigurationOperator.nicFirmwareStorage.storageClassName",
            },
        ),
    ],
)
def test_the_fields_upstream_marks_immutable(token, paths):
    assert _immutable(token) == {(p, p, VALUE) for p in paths}


def test_other_transition_rules_are_kept_as_checks_not_immutability():
    """Rook's CephCluster `keyGeneration` may only grow and `network.provider` must pass through
    "" to change (Rook v1.20.6 crds.yaml): the API server checks them; neither is immutable."""
    rows = derive(CRDS)["kinds"]["kubernetes:ceph.rook.io/v1:CephCluster"]["checked"]
    assert {r["path"] for r in rows} >= {
        "spec.network.provider",
        "spec.security.cephx.daemon.keyGeneration",
    }
    assert "checked" in classify("spec.x", "self >= oldSelf", "cannot be decreased")


def test_a_rule_under_a_maps_values_is_refused_rather_than_guessed():
    schema = {
        "properties": {
            "spec": {
                "additionalProperties": {"x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
            }
        }
    }
    with pytest.raises(ValueError, match="map's values at spec"):
        transition_rules(schema)


FLAVOR_SPEC = {"nodeLabels": {"pool": "a"}, "topologyName": "t"}


@pytest.mark.parametrize(
    ("before", "after", "refuses"),
    [
        # Kueue's rules hold once topologyName is set ...
        (FLAVOR_SPEC, {**FLAVOR_SPEC, "nodeLabels": {"pool": "b"}}, ["spec.nodeLabels"]),
        (FLAVOR_SPEC, {**FLAVOR_SPEC, "tolerations": [{"key": "k"}]}, ["spec.tolerations"]),
        (FLAVOR_SPEC, {"nodeLabels": {"pool": "a"}}, ["spec.topologyName"]),
        (FLAVOR_SPEC, {**FLAVOR_SPEC, "topologyName": "u"}, ["spec.topologyName"]),
        # ... and not before: a flavor without one may change its labels and gain a topology.
        ({"nodeLabels": {"pool": "a"}}, FLAVOR_SPEC | {"nodeLabels": {"pool": "b"}}, []),
        (FLAVOR_SPEC, {**FLAVOR_SPEC, "nodeTaints": [{"key": "k"}]}, []),
    ],
)
def test_the_flavor_rules_refuse_what_they_say(before, after, refuses):
    found = refused(FLAVOR, {"spec": before}, {"spec": after})
    assert [path for path, _ in found] == refuses


def test_self_equals_old_self_refuses_a_change_but_not_setting_the_field():
    """A transition rule runs only where the old and the new object both hold the field."""
    levels = {"spec": {"levels": [{"nodeLabel": "a"}]}}
    assert refused(TOPOLOGY, levels, {"spec": {"levels": [{"nodeLabel": "b"}]}})
    assert not refused(TOPOLOGY, {"spec": {}}, levels)


# ------------------------------------------------------------------ every stack's declaration


def _has(obj, path: str) -> bool:
    """Whether an object sets a table path (`a[].b`: in any item)."""
    nodes = [obj]
    for step in path.split("."):
        name = step.removesuffix("[]")
        nodes = [n[name] for n in nodes if isinstance(n, dict) and n.get(name) is not None]
        if step.endswith("[]"):
            nodes = [item for n in nodes if isinstance(n, list) for item in n]
    return bool(nodes)


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_a_stack_declares_is_replaced_where_the_crd_refuses_updates(stack):
    """For each custom resource, `replace_on_changes` names every immutable path of its CRD
    whose rule the object arms, and the old object goes first (its name stays: a new object
    created first would be applied onto the old one and deleted with it,
    pulumi/pulumi-kubernetes#4522). A CephCluster is never replaced: Rook would not let it go
    while its filesystem refers to it (components/kubernetes_object.py)."""
    kinds = derive(CRDS)["kinds"]
    for resource in planned(stack).resources:
        obj = resource.inputs
        if not resource.type.startswith("kubernetes:") or not is_custom_resource(obj):
            continue
        assert schema_path(obj["apiVersion"], obj["kind"]).is_file(), resource.type
        armed = sorted(
            r["path"].replace("[]", "[*]")
            for r in kinds.get(resource.type, {}).get("immutable", [])
            if _has(obj, r["when_set"])
        )
        if resource.type in NEVER_REPLACED:
            assert not resource.replace_on_changes, resource.name
            continue
        assert sorted(resource.replace_on_changes) == armed, resource.name
        assert resource.delete_before_replace == bool(armed), resource.name


def test_the_stacks_declare_flavors_and_topologies_that_need_it():
    """The class test above is not vacuous: prod's TAS flavors and its Topology arm the rules."""
    by_type = {r.type: r for r in planned("prod").resources}
    assert set(by_type[FLAVOR].replace_on_changes) == {
        "spec.topologyName",
        "spec.nodeLabels",
        "spec.tolerations",
    }
    assert by_type[TOPOLOGY].replace_on_changes == ("spec.levels",)


# --------------------------------------------------------------------- the diff of a day-2 change


def _previous(stack: str) -> PreviousPlan:
    shipped = planned(stack)
    return PreviousPlan([r.as_json() for r in shipped.resources], shipped.outputs)


def test_a_p5_to_p6_b200_pool_replaces_its_flavor_for_the_new_topology(tmp_path):
    """FACTS.md / EKS instance topology: p5.48xlarge nodes report three network layers,
    p6-b200.48xlarge four, so the pool's flavor names another Topology; its topologyName is
    immutable once set, so the flavor is replaced, deleted first, and the diff says Kueue holds
    it while a ClusterQueue lists it (resourceflavor_controller.go)."""
    config = stack_file_config("prod")
    (group,) = [g for g in config["gpu-platform:gpu_node_groups"] if g["name"] == "h100-ondemand"]
    group["instance_types"] = ["p6-b200.48xlarge"]
    changed = plan_stack("prod", make_project(tmp_path, {"prod": config}))
    text = changes_block(changed, _previous("prod"), "out/prod")
    assert (
        f"  -/+ {FLAVOR} prod-resourceflavor-h100-ondemand (forces replacement: "
        "spec.topologyName; deleted before the new one is created)\n"
        '      ~ spec.topologyName: "aws-network-3-layers" -> "aws-network-4-layers"'
        "  # forces replacement\n"
        "      Kueue keeps it (finalizer kueue.x-k8s.io/resource-in-use) while a ClusterQueue "
        "lists it as a flavor: the delete waits until none does\n"
    ) in text
    assert f"  + {TOPOLOGY} prod-topology-aws-network-4-layers\n" in text


def test_new_rack_labels_and_a_new_gpu_label_replace_the_topology_and_the_flavor(tmp_path):
    """onprem: a level added to `scheduling.topology_levels` changes the Topology's levels, and
    a pool's new node selector its flavor's nodeLabels; both are immutable (Kueue v0.19.2)."""
    # Kueue places by the levels once the admin says the nodes carry them (components/topology).
    labelled = stack_file_config("onprem")
    labelled["gpu-platform:scheduling"]["topology_labels_applied"] = True
    config = copy.deepcopy(labelled)
    config["gpu-platform:scheduling"]["topology_levels"] = [
        "network.example.internal/spine",
        "network.example.internal/row",
        "network.example.internal/rack",
    ]
    pool = config["gpu-platform:existing"]["gpu_pools"][0]
    pool["node_selector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    burst = stack_file_config("burst")
    for side in ("before", "after"):
        (tmp_path / side).mkdir()
    before = plan_stack(
        "onprem", make_project(tmp_path / "before", {"onprem": labelled, "burst": burst})
    )
    changed = plan_stack(
        "onprem", make_project(tmp_path / "after", {"onprem": config, "burst": burst})
    )
    previous = PreviousPlan([r.as_json() for r in before.resources], before.outputs)
    text = changes_block(changed, previous, "out/onprem")
    assert (
        f"  -/+ {TOPOLOGY} onprem-topology-onprem-network (forces replacement: spec.levels; "
        "deleted before the new one is created)\n"
        '      ~ spec.levels[1].nodeLabel: "network.example.internal/rack" -> '
        '"network.example.internal/row"  # forces replacement\n'
    ) in text
    assert (
        f"  -/+ {FLAVOR} onprem-resourceflavor-a100 (forces replacement: spec.nodeLabels; "
        "deleted before the new one is created)\n"
        '      ~ spec.nodeLabels.nvidia.com/gpu.product: "NVIDIA-A100-SXM4-80GB" -> '
        '"NVIDIA-H100-80GB-HBM3"  # forces replacement\n'
    ) in text
    assert "refused by the API server" not in text


def test_an_immutable_change_nothing_replaces_is_called_refused():
    """Without `replace_on_changes` (a Helm release's objects, a CephCluster), the update is
    one the API server refuses: the diff says so rather than plan an update that fails."""
    old = {
        "urn": "u",
        "type": TOPOLOGY,
        "name": "t",
        "protect": False,
        "inputs": {"spec": {"levels": [{"nodeLabel": "a"}]}},
    }
    new = {**old, "inputs": {"spec": {"levels": [{"nodeLabel": "b"}]}}}
    (found,) = diff_plans([old], [new])
    assert found.action == "update"
    text = format_diff([found], "x")
    assert (
        "      refused by the API server: spec.levels: field is immutable (immutable in the CRD, "
        "and nothing replaces the object on it: `pulumi up` fails here)\n"
    ) in text
    assert "1 of the changes the API server refuses (see `refused by the API server`): t" in text


def test_a_ceph_clusters_data_dir_change_is_refused_and_its_provider_change_checked():
    """onprem's CephCluster declares no replacement (NEVER_REPLACED): a new `dataDirHostPath`
    is an update the API server refuses ("DataDirHostPath is immutable", Rook v1.20.6), and a
    new network provider one it checks (it must pass through "")."""
    (cluster,) = [r for r in planned("onprem").resources if r.type.endswith(":CephCluster")]
    assert not cluster.replace_on_changes
    old = cluster.as_json()
    spec = {**old["inputs"]["spec"], "dataDirHostPath": "/srv/rook"}
    spec["network"] = {**spec["network"], "provider": "host"}
    new = {**old, "inputs": {**old["inputs"], "spec": spec}}
    (found,) = diff_plans([old], [new])
    text = format_diff([found], "out/onprem")
    assert (
        "      refused by the API server: spec.dataDirHostPath: DataDirHostPath is immutable"
        in (text)
    )
    assert (
        "      checked by the API server: spec.network.provider: network provider must be "
        "disabled (reverted to empty string) before a new provider is enabled"
    ) in text
