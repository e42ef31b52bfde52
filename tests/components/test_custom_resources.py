"""Custom resources: every one a stack declares is valid against the schema its operator's pinned
release serves (../shared/crds), and the validator itself catches what it must."""

from __future__ import annotations

import json

import pytest

from tests.conftest import STACKS, planned, rendered
from tests.helpers import crds
from tests.helpers.plan_out import manifests, stack_out
from tests.helpers.rendered_jobs import platform_jobs, submitted_jobs

GOOD_FILESYSTEM = {
    "apiVersion": "ceph.rook.io/v1",
    "kind": "CephFilesystem",
    "metadata": {"name": "fs", "namespace": "rook-ceph"},
    "spec": {
        "metadataPool": {"replicated": {"size": 3}},
        "dataPools": [{"name": "replicated", "replicated": {"size": 3}}],
        "metadataServer": {"activeCount": 1, "activeStandby": True},
    },
}


def with_spec(obj: dict, **spec) -> dict:
    return {**obj, "spec": {**obj["spec"], **spec}}


def test_a_valid_resource_passes():
    assert crds.errors(GOOD_FILESYSTEM) == []


@pytest.mark.parametrize(
    ("spec", "detail"),
    [
        pytest.param({"metadataServr": {"activeCount": 1}}, "'metadataServr' was unexpected",
                     id="misspelt-field"),
        pytest.param({"metadataPool": {"replicated": {"sise": 3}}}, "'sise' was unexpected",
                     id="misspelt-nested-field"),
        pytest.param({"metadataServer": {"activeCount": "one"}}, "is not of type 'integer'",
                     id="wrong-type"),
        pytest.param({"dataPools": [{"failureDomain": "host", "replicated": {}}]},
                     "'size' is a required property", id="missing-required"),
    ],
)  # fmt: skip
def test_a_broken_resource_fails(spec, detail):
    found = crds.errors(with_spec(GOOD_FILESYSTEM, **spec))
    assert any(detail in e for e in found), found


def test_nulls_are_pruned_as_the_api_server_does():
    assert crds.errors(with_spec(GOOD_FILESYSTEM, preserveFilesystemOnDelete=None)) == []


def test_go_case_insensitive_patterns_compile():
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "r"},
        "spec": {"groups": [{"name": "g", "partial_response_strategy": "ABORT", "rules": []}]},
    }
    assert crds.errors(rule) == []
    rule["spec"]["groups"][0]["partial_response_strategy"] = "maybe"
    assert any("does not match" in e for e in crds.errors(rule))


def test_built_in_kinds_are_not_custom():
    for api_version in ("v1", "apps/v1", "storage.k8s.io/v1", "autoscaling/v2"):
        assert not crds.is_custom_resource({"apiVersion": api_version})
    for api_version in ("ceph.rook.io/v1", "kueue.x-k8s.io/v1beta2", "k8s.cni.cncf.io/v1"):
        assert crds.is_custom_resource({"apiVersion": api_version})


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_of_every_stack_is_valid(stack):
    """What `python -m plan` writes to out/<stack>/manifests, as the API server would take it:
    schema and CEL rules."""
    checked = 0
    for obj in manifests(stack_out(stack)):
        if not crds.is_custom_resource(obj):
            continue
        path = crds.schema_path(obj["apiVersion"], obj["kind"])
        assert path.is_file(), f"{stack}: {obj['kind']} has no schema at {path}"
        assert crds.errors(obj) == [], stack
        checked += 1
    # Every stack has at least its alert rules and Kueue's queues: none means none was found.
    assert checked, f"{stack} declares no custom resource: nothing was checked"


# Charts whose custom resources shared/crds holds, by the repository its README names.
CHART_OF_REPOSITORY = {
    "rook/rook": "rook-ceph",
    "kubernetes-sigs/kueue": "kueue",
    "NVIDIA/gpu-operator": "gpu-operator",
    "Mellanox/network-operator": "network-operator",
}


def test_operator_charts_are_pinned_to_the_releases_the_schemas_come_from():
    """The schemas are only right for the release they were read from (README, "Versions to
    pin"): a chart bump without new schemas would validate against the wrong ones."""
    from model.versions import CHARTS

    pinned = {}
    for line in (crds.CRDS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 2 and cells[0] in CHART_OF_REPOSITORY:
            pinned[CHART_OF_REPOSITORY[cells[0]]] = cells[1].removeprefix("v")
    assert pinned["rook-ceph"] == "1.20.6"
    checked = [name for name in pinned if name in CHARTS]
    assert checked, "no chart of an operator with schemas is installed"
    for name in checked:
        assert CHARTS[name].version.removeprefix("v") == pinned[name], name


# ------------------------------------------------------------------------------ CEL rules

# kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/resourceflavor_types.go, the CRD's rule on
# ResourceFlavor.spec (../shared/crds/kueue.x-k8s.io/ResourceFlavor.v1beta2.json).
TOPOLOGY_RULE = "!has(self.topologyName) || self.nodeLabels.size() >= 1"
TOPOLOGY_MESSAGE = "at least one nodeLabel is required when topology is set"


def resource_flavor(**spec) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "f"},
        "spec": spec,
    }


def test_a_crds_cel_rule_refuses_what_the_api_server_refuses():
    assert crds.errors(resource_flavor(topologyName="t", nodeLabels={"pool": "a"})) == []
    assert crds.errors(resource_flavor(nodeLabels={})) == []
    assert crds.errors(resource_flavor(topologyName="t", nodeLabels={})) == [
        f"ResourceFlavor f: spec: Invalid value: {TOPOLOGY_MESSAGE} "
        f"(CRD kueue.x-k8s.io/v1beta2 ResourceFlavor, rule {TOPOLOGY_RULE!r})"
    ]
    # No nodeLabels at all: the rule fails to evaluate, which the API server refuses too
    # (validation.go: "<error> evaluating rule: <message>").
    (missing,) = crds.errors(resource_flavor(topologyName="t"))
    assert f'"nodeLabels" evaluating rule: {TOPOLOGY_MESSAGE}' in missing, missing


def test_a_rule_on_list_items_is_evaluated_on_each_item_with_its_path():
    """ResourceFlavor.spec.tolerations (Kueue v0.19.2): `self` is the list there."""
    ok = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    bad = {"key": "k", "operator": "Exists", "value": "v", "effect": "NoSchedule"}
    assert crds.errors(resource_flavor(tolerations=[ok])) == []
    (found,) = crds.errors(resource_flavor(tolerations=[ok, bad]))
    assert found.startswith(
        "ResourceFlavor f: spec.tolerations: Invalid value: a value must be empty when "
        "'operator' is 'Exists'"
    ), found


def test_the_schemas_defaults_are_applied_before_the_rules_read_them():
    """ClusterQueue.spec.preemption's rule reads reclaimWithinCohort, which the schema
    defaults to Never (Kueue v0.19.2): without defaulting the rule could not evaluate."""
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {"preemption": {"withinClusterQueue": "LowerPriority"}},
    }
    assert crds.errors(queue) == []
    queue["spec"]["preemption"]["borrowWithinCohort"] = {"policy": "LowerPriority"}
    (found,) = crds.errors(queue)
    assert "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never" in found, found


def test_a_root_rule_sees_the_objects_name():
    """GPUCluster (NVIDIA gpu-operator v26.7.0): a singleton by `self.metadata.name`."""
    cluster = {"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "spec": {}}
    assert crds.cel_errors({**cluster, "metadata": {"name": "gpu-cluster"}}) == []
    (found,) = crds.cel_errors({**cluster, "metadata": {"name": "other"}})
    assert found.startswith(
        "GPUCluster other: (root): Invalid value: GPUCluster is a singleton, metadata.name "
        "must be 'gpu-cluster'"
    ), found


def schema_with(*rules: dict) -> dict:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer"}},
                "x-kubernetes-validations": list(rules),
            }
        },
    }


OBJ = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}


def test_transition_rules_are_skipped_on_create_unless_old_self_is_optional():
    """Kubernetes "Validation rules": a rule naming oldSelf runs only on update; with
    optionalOldSelf it runs on create too, oldSelf being optional.none()."""
    thing = {**OBJ, "spec": {"size": 3}}
    transition = {"rule": "self.size == oldSelf.size", "message": "immutable"}
    assert crds.cel_errors(thing, schema_with(transition)) == []
    optional = {
        "rule": "oldSelf.hasValue() && self.size == oldSelf.value().size",
        "message": "only on update",
        "optionalOldSelf": True,
    }
    (found,) = crds.cel_errors(thing, schema_with(optional))
    assert "spec: Invalid value: only on update" in found, found
    optional["messageExpression"] = "oldSelf.hasValue() ? 'changed' : 'no old value'"
    (found,) = crds.cel_errors(thing, schema_with(optional))
    assert "spec: Invalid value: no old value" in found, found
    creatable = {**optional, "rule": "!oldSelf.hasValue() || self.size >= oldSelf.value().size"}
    assert crds.cel_errors(thing, schema_with(creatable)) == []


def test_the_detail_is_the_message_expression_then_the_message_then_the_rule():
    """validation.go at the Kubernetes pin: messageExpression's string, else message, else
    `failed rule: <rule>`; `fieldPath` is added to the path."""
    thing = {**OBJ, "spec": {"size": 30}}
    rule = {"rule": "self.size < 10", "fieldPath": ".size"}
    assert crds.cel_errors(thing, schema_with(rule)) == [
        "Thing t: spec.size: Invalid value: failed rule: self.size < 10 "
        "(CRD example.com/v1 Thing, rule 'self.size < 10')"
    ]
    rule["message"] = "too big"
    assert "Invalid value: too big (" in crds.cel_errors(thing, schema_with(rule))[0]
    rule["messageExpression"] = "'size ' + string(self.size) + ' is over 9'"
    assert "Invalid value: size 30 is over 9 (" in crds.cel_errors(thing, schema_with(rule))[0]
    rule["reason"] = "FieldValueForbidden"
    assert (
        "spec.size: Forbidden: size 30 is over 9 (" in crds.cel_errors(thing, schema_with(rule))[0]
    )


def test_a_rule_calling_a_function_the_runtime_lacks_fails_loudly_naming_it():
    """Kubernetes' quantity library (`isQuantity`) is not CEL's: a rule that calls it is never
    passed unread."""
    thing = {**OBJ, "spec": {"size": 1}}
    with pytest.raises(crds.CelLibraryError, match="undeclared reference to 'isQuantity'"):
        crds.cel_errors(thing, schema_with({"rule": "isQuantity(string(self.size))"}))


def every_crd_schema():
    for path in sorted(crds.CRDS.rglob("*.json")):
        kind, version = path.name.split(".")[:2]
        yield f"{path.parent.name}/{version}", kind


def test_every_rule_of_every_crd_compiles_and_the_walk_reaches_it():
    """Each rule of ../shared/crds compiles with the runtime's libraries (a CRD bump that
    brings a Kubernetes-only function fails here, naming it), and every rule in a schema sits
    where the walk of an object reaches it (properties, items, additionalProperties)."""
    compiled = 0
    for api_version, kind in every_crd_schema():
        schema = crds.crd_schema(api_version, kind)
        reached = list(crds.rules_of(schema))
        total = sum(len(s.get("x-kubernetes-validations", [])) for s in _subschemas(schema))
        assert len(reached) == total, f"{api_version} {kind}: a rule the walk never reaches"
        for where, rule in reached:
            crds.compile_rule(f"{api_version} {kind}", where, json.dumps(rule, sort_keys=True))
            compiled += 1
    # ../shared/crds at this pin: 79 rules, 35 of them transition rules.
    assert compiled == 79


def _subschemas(schema):
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _subschemas(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _subschemas(value)


def test_the_burst_flavor_on_onprem_passes_its_crds_cel_rule():
    """The manager's burst flavor names the workers' Topology: Kueue's CRD then wants node
    labels (at main: `ResourceFlavor burst-burst: spec: Invalid value: NOT_FOUND: Key not
    found in map : "nodeLabels" evaluating rule: at least one nodeLabel is required when
    topology is set`)."""
    (flavor,) = [
        o
        for o in planned("onprem").kubernetes_objects()
        if o["kind"] == "ResourceFlavor" and o["metadata"]["name"] == "burst-burst"
    ]
    assert flavor["spec"]["topologyName"]
    assert crds.errors(flavor) == []


CRD_KIND = "CustomResourceDefinition"


def chart_crd_schemas(stack: str) -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> schema of every CRD the stack's releases bring themselves."""
    found = {}
    for _, crd in rendered(stack).objects():
        if crd["kind"] == CRD_KIND:
            for version in crd["spec"]["versions"]:
                key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                found[key] = version["schema"]["openAPIV3Schema"]
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_the_releases_render_and_the_jobs_are_valid(stack):
    """The custom resources the stack's Helm releases render and the jobs the platform and
    `python -m jobs` render (JobSets), against ../shared/crds (schema and CEL rules), or
    against the CEL rules of the CRD its own chart brings where ../shared/crds has none."""
    own = chart_crd_schemas(stack)
    objects = [o for _, o in rendered(stack).objects()] + platform_jobs(stack)
    objects += [j for _, j in submitted_jobs(stack)]
    found, checked = [], 0
    for obj in objects:
        if not crds.is_custom_resource(obj):
            continue
        checked += 1
        if crds.schema_path(obj["apiVersion"], obj["kind"]).is_file():
            found += crds.errors(obj)
        else:
            key = (obj["apiVersion"], obj["kind"])
            assert key in own, f"{stack}: no schema for {key}, in ../shared/crds or a chart"
            found += crds.cel_errors(obj, own[key])
    assert checked, f"{stack}: no custom resource rendered"
    assert found == []
