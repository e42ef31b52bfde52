"""The NetworkPolicies the platform declares, through a model of the rule
(tests/controllers/network_policy.py) run over every stack: each selects pods that exist,
admits every pod that must reach them, and refuses a pod of an unrelated namespace.

Who must reach a pod is read from the rendered objects, never from the program: every pod whose
spec names a Service that selects it (`<service>.<namespace>.svc`: the jobs `python -m jobs` and
the plan render, the charts' pods, the program's CronJobs), and Prometheus's pods where a
ServiceMonitor selects that Service. Prometheus's pods are labelled as prometheus-operator
labels them (v0.93.0 pkg/prometheus/server/operator.go makeSelectorLabels, statefulset.go):
app.kubernetes.io/name prometheus, app.kubernetes.io/managed-by prometheus-operator,
app.kubernetes.io/instance, operator.prometheus.io/name and prometheus the Prometheus's name,
operator.prometheus.io/shard "0"; plus its spec.podMetadata.labels."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from tests.conftest import STACKS, planned, rendered, stack_config
from tests.controllers.network_policy import NAMESPACE_NAME, PodAt, admitted, guards, selects
from tests.controllers.pod_security import pod_templates
from tests.helpers.rendered_jobs import burst_jobs, submitted_jobs, workers_of

UNRELATED = "unrelated"


def _pod(ns: str, labels: dict[str, str], ports: dict[str, int] | None = None) -> PodAt:
    return PodAt(ns, {NAMESPACE_NAME: ns}, labels, ports or {})


def _policy(ns: str, selector: dict, peers: list | None, ports: list | None = None) -> dict:
    rule = {**({"from": peers} if peers is not None else {}), **({"ports": ports} if ports else {})}
    return {
        "metadata": {"name": "p", "namespace": ns},
        "spec": {"podSelector": selector, "ingress": [rule]},
    }


TARGET = _pod("monitoring", {"app": "gw"}, {"http": 9091})
GUARD = {"matchLabels": {"app": "gw"}}


def test_an_unguarded_pod_takes_every_source():
    assert admitted([], _pod("x", {}), TARGET, 9091)


def test_a_namespace_peer_admits_every_pod_of_that_namespace_only():
    policy = _policy(
        "monitoring", GUARD, [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME: "team"}}}]
    )
    assert admitted([policy], _pod("team", {"any": "pod"}), TARGET, 9091)
    assert not admitted([policy], _pod("other", {"any": "pod"}), TARGET, 9091)


def test_a_peer_with_both_selectors_needs_both():
    peer = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME: "monitoring"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }
    policy = _policy("monitoring", GUARD, [peer])
    assert admitted(
        [policy], _pod("monitoring", {"app.kubernetes.io/name": "prometheus"}), TARGET, 9091
    )
    assert not admitted([policy], _pod("monitoring", {"app": "grafana"}), TARGET, 9091)
    assert not admitted(
        [policy], _pod("team", {"app.kubernetes.io/name": "prometheus"}), TARGET, 9091
    )


def test_a_pod_selector_alone_means_the_policys_own_namespace():
    policy = _policy("monitoring", GUARD, [{"podSelector": {}}])
    assert admitted([policy], _pod("monitoring", {}), TARGET, 9091)
    assert not admitted([policy], _pod("team", {}), TARGET, 9091)


def test_ports_by_number_or_by_name_and_no_from_admits_every_source():
    assert admitted(
        [_policy("monitoring", GUARD, None, [{"port": 9091}])], _pod("x", {}), TARGET, 9091
    )
    assert admitted(
        [_policy("monitoring", GUARD, None, [{"port": "http"}])], _pod("x", {}), TARGET, 9091
    )
    assert not admitted(
        [_policy("monitoring", GUARD, None, [{"port": 80}])], _pod("x", {}), TARGET, 9091
    )


def test_match_expressions_and_a_policy_of_another_namespace():
    selector = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["gw"]}]}
    assert selects(selector, {"app": "gw"}) and not selects(selector, {"app": "other"})
    assert not guards(_policy("elsewhere", GUARD, []), TARGET)


# --- the stacks ---------------------------------------------------------------------------


def _operator_prometheus_pods(obj: dict[str, Any], namespace_labels: dict[str, str]) -> PodAt:
    name = obj["metadata"]["name"]
    labels = {
        "app.kubernetes.io/name": "prometheus",
        "app.kubernetes.io/managed-by": "prometheus-operator",
        "app.kubernetes.io/instance": name,
        "operator.prometheus.io/name": name,
        "operator.prometheus.io/shard": "0",
        "prometheus": name,
        **((obj["spec"].get("podMetadata") or {}).get("labels") or {}),
    }
    return PodAt(obj["metadata"]["namespace"], namespace_labels, labels, {"web": 9090})


@functools.cache
def cluster(stack: str):
    """(objects by namespace, namespaces' labels, pods with their spec's text) of a stack: the
    plan's objects, every release as rendered, and every job `python -m jobs` renders on it
    (a bursting team's on its worker)."""
    plan = planned(stack)
    objects = [(o["metadata"].get("namespace", ""), o) for o in plan.kubernetes_objects()]
    objects += [
        (o["metadata"].get("namespace", r.namespace), o)
        for r in rendered(stack).releases
        for o in r.objects
    ]
    jobs = [j for _, j in submitted_jobs(stack)]
    jobs += [j for m in STACKS if stack in workers_of(m) for _, j in burst_jobs(m, stack)]
    objects += [(j["metadata"]["namespace"], j) for j in jobs]
    namespaces = {
        o["metadata"]["name"]: {
            **(o["metadata"].get("labels") or {}),
            NAMESPACE_NAME: o["metadata"]["name"],
        }
        for _, o in objects
        if o["kind"] == "Namespace"
    }

    def labels_of(ns: str) -> dict[str, str]:
        return namespaces.get(ns, {NAMESPACE_NAME: ns})

    pods = []
    for ns, obj in objects:
        for meta, spec in pod_templates(obj):
            ports = {
                p["name"]: p["containerPort"]
                for c in spec.get("containers") or ()
                for p in c.get("ports") or ()
                if "name" in p
            }
            pods.append(
                (PodAt(ns, labels_of(ns), meta.get("labels") or {}, ports), json.dumps(spec))
            )
        if obj["kind"] == "Prometheus":
            pods.append((_operator_prometheus_pods(obj, labels_of(ns)), ""))
    return objects, labels_of, pods


def _who_must_reach(stack: str, target: PodAt) -> list[tuple[PodAt, int, str]]:
    """(client, port, why) for each pod that must reach `target`."""
    objects, _, pods = cluster(stack)
    monitors = [o for _, o in objects if o["kind"] == "ServiceMonitor"]
    found = []
    for ns, service in objects:
        selector = service.get("spec", {}).get("selector") if service["kind"] == "Service" else None
        if (
            not selector
            or ns != target.namespace
            or not selects({"matchLabels": selector}, target.labels)
        ):
            continue
        name = service["metadata"]["name"]
        for port in service["spec"].get("ports") or ():
            wanted = port.get("targetPort", port["port"])
            number = target.ports.get(wanted, port["port"]) if isinstance(wanted, str) else wanted
            found += [
                (pod, number, f"names {name}.{ns}.svc")
                for pod, text in pods
                if f"{name}.{ns}.svc" in text
            ]
            for monitor in monitors:
                scope = monitor["spec"].get("namespaceSelector") or {}
                in_scope = scope.get("any") or ns in (
                    scope.get("matchNames") or [monitor["metadata"]["namespace"]]
                )
                if in_scope and selects(
                    monitor["spec"].get("selector"), service["metadata"].get("labels") or {}
                ):
                    found += [
                        (
                            pod,
                            number,
                            f"scrapes {name} (ServiceMonitor {monitor['metadata']['name']})",
                        )
                        for pod, _ in pods
                        if pod.labels.get("app.kubernetes.io/name") == "prometheus"
                        and pod.labels.get("app.kubernetes.io/managed-by") == "prometheus-operator"
                    ]
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_network_policy_admits_its_clients_and_refuses_the_rest(stack):
    objects, _, pods = cluster(stack)
    policies = [o for _, o in objects if o["kind"] == "NetworkPolicy"]
    assert policies, f"{stack}: the platform declares no NetworkPolicy: any pod reaches every pod"
    problems = []
    for policy in policies:
        where = f"NetworkPolicy {policy['metadata']['namespace']}/{policy['metadata']['name']}"
        guarded = [pod for pod, _ in pods if guards(policy, pod)]
        if not guarded:
            problems.append(f"{where} selects no pod of the rendered objects")
        for target in guarded:
            clients = _who_must_reach(stack, target)
            if not clients:
                problems.append(
                    f"{where}: nothing must reach {target.labels}: the scan reads nothing"
                )
            for client, port, why in clients:
                if not admitted(policies, client, target, port):
                    problems.append(
                        f"{where} refuses a pod of {client.namespace} {client.labels} on port "
                        f"{port}, which {why}"
                    )
            # A pod of an unrelated namespace, wearing the labels of every client.
            for client, port, _ in clients:
                stranger = PodAt(UNRELATED, {NAMESPACE_NAME: UNRELATED}, client.labels, {})
                if admitted(policies, stranger, target, port):
                    problems.append(
                        f"{where} admits a pod of namespace {UNRELATED} labelled {client.labels}"
                    )
                    break
    assert problems == [], f"{stack}: " + "; ".join(problems)


@pytest.mark.parametrize("stack", STACKS)
def test_only_the_jobs_prometheus_and_the_sweep_reach_the_pushgateway(stack):
    """Any pod that reaches the Pushgateway can delete every group (Pushgateway README, "DELETE
    method"): its pods are guarded on every stack."""
    objects, _, pods = cluster(stack)
    policies = [o for _, o in objects if o["kind"] == "NetworkPolicy"]
    gateways = [
        p for p, _ in pods if p.labels.get("app.kubernetes.io/name") == "prometheus-pushgateway"
    ]
    assert gateways, stack
    for gateway in gateways:
        assert any(guards(p, gateway) for p in policies), f"{stack}: nothing guards the Pushgateway"
        # prometheus-pushgateway 3.8.0 values.yaml: service.targetPort 9091.
        assert not admitted(policies, _pod(UNRELATED, {}), gateway, 9091), stack


@pytest.mark.parametrize("stack", STACKS)
def test_the_clusters_cni_enforces_the_policies_on_aws(stack):
    """The VPC CNI enforces NetworkPolicies only when its add-on configuration says
    `enableNetworkPolicy: "true"` (EKS user guide, "Restrict Pod network traffic with Kubernetes
    network policies"); otherwise every policy above is inert. An existing cluster's CNI is the
    admin's."""
    addons = [
        r
        for r in planned(stack).of_type("aws:eks/addon:Addon")
        if r.inputs["addonName"] == "vpc-cni"
    ]
    for addon in addons:
        assert json.loads(addon.inputs["configurationValues"])["enableNetworkPolicy"] == "true"
    assert bool(addons) == (stack_config(stack).provider == "aws"), stack
