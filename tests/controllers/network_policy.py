"""A model of how a NetworkPolicy admits traffic to the pods it selects (ingress only: the
platform declares no egress policy), written from the Kubernetes "Network Policies" page
(kubernetes.io/docs/concepts/services-networking/network-policies/, "The two sorts of pod
isolation", "Behavior of to and from selectors") and the API reference of
networking.k8s.io/v1 NetworkPolicySpec:

- a pod is isolated for ingress once any policy with `Ingress` in its policyTypes (the default
  when it has `ingress`) selects it; then only what some rule of some such policy admits reaches
  it;
- a rule admits a source that matches any one of its `from` peers (none: every source), on any
  one of its `ports` (none: every port);
- a peer with `namespaceSelector` and `podSelector` admits pods matching both; with only
  `podSelector`, pods of the policy's own namespace; with only `namespaceSelector`, every pod
  of the namespaces it selects; `ipBlock` is not used by the platform and admits nothing here;
- a label selector is `matchLabels` and `matchExpressions` (In, NotIn, Exists, DoesNotExist),
  all of which must hold; an empty selector selects everything.

Namespaces carry `kubernetes.io/metadata.name: <name>`, which the API server sets on every
namespace (Kubernetes docs, "Well-Known Labels, Annotations and Taints").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.controllers.label_selector import label_selector_matches

NAMESPACE_NAME = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class PodAt:
    """A pod as a policy sees it: its namespace's labels and its own, and its ports by name."""

    namespace: str
    namespace_labels: dict[str, str]
    labels: dict[str, str]
    ports: dict[str, int]


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A policy's selector; an absent one is empty, and an empty one selects everything."""
    return label_selector_matches(selector or {}, labels)


def guards(policy: dict[str, Any], pod: PodAt) -> bool:
    """Whether `policy` isolates `pod` for ingress."""
    spec = policy["spec"]
    types = spec.get("policyTypes") or ["Ingress"]
    return (
        "Ingress" in types
        and policy["metadata"].get("namespace") == pod.namespace
        and selects(spec.get("podSelector"), pod.labels)
    )


def _peer_admits(peer: dict[str, Any], policy_namespace: str, source: PodAt) -> bool:
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        namespace_ok = selects(peer["namespaceSelector"], source.namespace_labels)
    else:
        namespace_ok = source.namespace == policy_namespace
    return namespace_ok and selects(peer.get("podSelector"), source.labels)


def _port_admits(ports: list[dict[str, Any]] | None, target: PodAt, port: int) -> bool:
    if not ports:
        return True
    for p in ports:
        wanted = p.get("port")
        number = target.ports.get(wanted) if isinstance(wanted, str) else wanted
        if (
            wanted is None
            or number == port
            or (p.get("endPort") and number <= port <= p["endPort"])
        ):
            return True
    return False


def admitted(policies: list[dict[str, Any]], source: PodAt, target: PodAt, port: int) -> bool:
    """Whether `source` reaches `target` on `port` under every policy of the cluster."""
    guarding = [p for p in policies if guards(p, target)]
    if not guarding:
        return True
    return any(
        all(
            [
                not rule.get("from")
                or any(
                    _peer_admits(peer, p["metadata"]["namespace"], source) for peer in rule["from"]
                ),
                _port_admits(rule.get("ports"), target, port),
            ]
        )
        for p in guarding
        for rule in p["spec"].get("ingress") or ()
    )
