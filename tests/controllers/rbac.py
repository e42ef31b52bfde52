"""A model of who may do what to an object in a namespace: Kubernetes RBAC and, on EKS, the access
policies of access entries, evaluated over the objects a stack declares and its charts render.

RBAC, from kubernetes/kubernetes `pkg/apis/rbac/v1/evaluation_helpers.go` (VerbMatches,
APIGroupMatches, ResourceMatches: a rule matches when its verbs, API groups and resources each hold
the request's or `*`; ResourceNameMatches: a rule with `resourceNames` matches only a request for
one of those names, so never a list or a create, which name none) and the "Using RBAC
Authorization" page: a RoleBinding grants its role's rules in its own namespace only, a
ClusterRoleBinding in every namespace; a ClusterRole with an `aggregationRule` holds the rules of
every ClusterRole whose labels match one of its selectors
(`pkg/controller/clusterroleaggregation`). Kubernetes' user-facing `edit` and `view` aggregate the
ClusterRoles labelled `rbac.authorization.k8s.io/aggregate-to-edit` and `aggregate-to-view`
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go); their own rules (system:aggregate-to-
edit, system:aggregate-to-view) name only built-in API groups and are left out here, since the
model is asked only about the platform's custom resources and about namespaces.

EKS, from the user guide: "Associate access policies with access entries" (an association's
access scope is the cluster or a list of namespaces) and "Review access policy permissions"
(the rules of each policy, below as far as the platform's questions reach); access policies and
RBAC are both consulted, so a principal holds the union of its associations and of the bindings
of the Kubernetes groups its access entry names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

AGGREGATES_TO = {
    "edit": "rbac.authorization.k8s.io/aggregate-to-edit",
    "view": "rbac.authorization.k8s.io/aggregate-to-view",
}

_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]
# EKS user guide, "Review access policy permissions" (awsdocs/amazon-eks-user-guide
# latest/ug/manage-access/k8s-access/access-policy-reference.adoc): rows of AmazonEKSEditPolicy
# and AmazonEKSViewPolicy. Every row of both names a built-in API group (apps, autoscaling,
# batch, discovery.k8s.io, extensions, networking.k8s.io, policy, core); none names
# jobset.x-k8s.io or kueue.x-k8s.io. The batch and pod rows are copied whole.
EKS_POLICIES: dict[str, list[dict[str, Any]]] = {
    "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy": [
        {"apiGroups": ["batch"], "resources": ["cronjobs", "jobs"], "verbs": _WRITE},
        {
            "apiGroups": ["batch"],
            "resources": ["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
            "verbs": _READ,
        },
        {
            "apiGroups": [""],
            "resources": ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"],
            "verbs": _WRITE,
        },
    ],
    "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy": [
        {
            "apiGroups": ["batch"],
            "resources": ["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
            "verbs": _READ,
        },
    ],
}


@dataclass(frozen=True)
class Grant:
    rules: tuple[dict[str, Any], ...]
    # The namespaces it holds in; None: every namespace.
    namespaces: frozenset[str] | None


def _holds(values: Iterable[str], wanted: str) -> bool:
    values = list(values)
    return "*" in values or wanted in values


def rule_allows(rule: dict[str, Any], verb: str, group: str, resource: str, name: str = "") -> bool:
    """Whether `rule` lets a request through; `name`: the object it names ("" for a list or a
    create)."""
    names = rule.get("resourceNames") or []
    return (
        _holds(rule.get("verbs", []), verb)
        and _holds(rule.get("apiGroups", []), group)
        and _holds(rule.get("resources", []), resource)
        and (not names or name in names)
    )


def allowed(
    grants: Iterable[Grant], verb: str, group: str, resource: str, ns: str, name: str = ""
) -> bool:
    return any(
        (g.namespaces is None or ns in g.namespaces)
        and any(rule_allows(r, verb, group, resource, name) for r in g.rules)
        for g in grants
    )


@dataclass(frozen=True)
class Request:
    """What the API server's authorizer is asked about one request (k8s.io/apiserver
    pkg/endpoints/request/requestinfo.go, RequestInfoFactory.NewRequestInfo): a GET of a
    collection is `list`, of one object `get`; PATCH `patch`; a cluster-scoped object's
    namespace is ""."""

    verb: str
    group: str
    resource: str
    namespace: str
    name: str


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def request_of(method: str, path: str) -> Request:
    """The authorizer's attributes of `method` on `path` (/api/v1/... or /apis/<group>/<v>/...,
    its query left out)."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    verb = ("get" if name else "list") if method == "GET" else _VERBS[method]
    return Request(verb, group, resource, namespace, name)


def account_grants(objects: Iterable[dict[str, Any]], account: str, namespace: str) -> list[Grant]:
    """What the ServiceAccount `namespace`/`account` holds through the bindings among
    `objects`: a ClusterRoleBinding's role everywhere, a RoleBinding's in its namespace."""
    cluster = Cluster(objects)
    found = []
    for binding in cluster.bindings:
        if not any(
            s.get("kind") == "ServiceAccount"
            and s.get("name") == account
            and s.get("namespace") == namespace
            for s in binding.get("subjects") or []
        ):
            continue
        found.append(cluster.binding_grant(binding))
    return found


def permits(grants: Iterable[Grant], request: Request) -> bool:
    return allowed(
        grants, request.verb, request.group, request.resource, request.namespace, request.name
    )


class Cluster:
    """The RBAC objects a cluster holds: the plan's and its charts' rendered ones."""

    def __init__(self, objects: Iterable[dict[str, Any]]):
        objects = list(objects)
        self.cluster_roles = {
            o["metadata"]["name"]: o for o in objects if o.get("kind") == "ClusterRole"
        }
        self.bindings = [
            o for o in objects if o.get("kind") in ("RoleBinding", "ClusterRoleBinding")
        ]

    def role_rules(self, name: str) -> tuple[dict[str, Any], ...]:
        """A ClusterRole's rules, aggregated ones included; `edit` and `view` are Kubernetes'
        own, aggregating every ClusterRole labelled for them."""
        if name in AGGREGATES_TO:
            label = AGGREGATES_TO[name]
            return tuple(
                rule
                for role in self.cluster_roles.values()
                if role["metadata"].get("labels", {}).get(label) == "true"
                for rule in role.get("rules") or []
            )
        return tuple(self.cluster_roles.get(name, {}).get("rules") or [])

    def group_grants(self, groups: Iterable[str]) -> list[Grant]:
        groups = set(groups)
        found = []
        for binding in self.bindings:
            names = {s["name"] for s in binding.get("subjects") or [] if s.get("kind") == "Group"}
            if not names & groups or binding["roleRef"]["kind"] != "ClusterRole":
                continue
            found.append(self.binding_grant(binding))
        return found

    def binding_grant(self, binding: dict[str, Any]) -> Grant:
        """What a binding gives: its role's rules, only in its namespace for a RoleBinding."""
        scope = (
            frozenset({binding["metadata"]["namespace"]})
            if binding["kind"] == "RoleBinding"
            else None
        )
        return Grant(self.role_rules(binding["roleRef"]["name"]), scope)


def eks_grants(cluster: Cluster, resources: Iterable[Any], principal: str) -> list[Grant]:
    """What an IAM principal holds on EKS: its access policy associations, each over its
    scope, and the bindings of the groups its access entry names."""
    found, groups = [], []
    for r in resources:
        if r.inputs.get("principalArn") != principal:
            continue
        if r.type == "aws:eks/accessEntry:AccessEntry":
            groups += r.inputs.get("kubernetesGroups", [])
        elif r.type == "aws:eks/accessPolicyAssociation:AccessPolicyAssociation":
            scope = r.inputs["accessScope"]
            namespaces = frozenset(scope["namespaces"]) if scope["type"] == "namespace" else None
            found.append(Grant(tuple(EKS_POLICIES.get(r.inputs["policyArn"], [])), namespaces))
    return found + cluster.group_grants(groups)
