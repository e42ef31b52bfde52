"""The RBAC model's rules (tests/controllers/rbac.py), each with a case it refuses and one it
lets through, from Kubernetes' "Using RBAC Authorization" page, "Referring to resources": a rule
with `resourceNames` holds only requests for those names; a list (or a create, or a
deletecollection) names no object, so such a rule never holds it."""

from __future__ import annotations

from tests.controllers.rbac import Grant, Request, permits, request_of, rule_allows

# The page's example: a ConfigMap "my-configmap" that the rule lets be got and updated.
NAMED = {
    "apiGroups": [""],
    "resources": ["configmaps"],
    "resourceNames": ["my-configmap"],
    "verbs": ["update", "get"],
}


def test_a_rule_with_resource_names_holds_only_those_names():
    assert rule_allows(NAMED, "get", "", "configmaps", "my-configmap")
    assert not rule_allows(NAMED, "get", "", "configmaps", "other-configmap")


def test_a_rule_with_resource_names_never_holds_a_list():
    listing = {**NAMED, "verbs": ["list"]}
    assert not rule_allows(listing, "list", "", "configmaps")
    assert rule_allows({**listing, "resourceNames": []}, "list", "", "configmaps")


def test_a_request_is_read_as_the_authorizer_reads_it():
    # k8s.io/apiserver requestinfo.go: GET of a collection is list, of a named object get; a
    # cluster-scoped object has no namespace; a subresource is <resource>/<sub>.
    assert request_of("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/shared") == Request(
        "get", "kueue.x-k8s.io", "clusterqueues", "", "shared"
    )
    assert request_of("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/workloads") == (
        Request("list", "kueue.x-k8s.io", "workloads", "training", "")
    )
    assert request_of("PATCH", "/api/v1/nodes/n1") == Request("patch", "", "nodes", "", "n1")
    assert request_of("GET", "/api/v1/namespaces/a/pods?labelSelector=x") == Request(
        "list", "", "pods", "a", ""
    )
    assert request_of("PATCH", "/api/v1/namespaces/a/pods/p/status").resource == "pods/status"


def test_a_cluster_scoped_request_is_held_only_by_a_cluster_wide_grant():
    rule = {**NAMED, "resources": ["nodes"], "resourceNames": []}
    asked = request_of("GET", "/api/v1/nodes/n1")
    assert permits([Grant((rule,), None)], asked)
    assert not permits([Grant((rule,), frozenset({"a"}))], asked)
