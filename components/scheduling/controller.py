"""The platform's small controllers that run in the self-test image (the quarantine watcher,
components/selftest/access.py; the idle reclaimer, components/selftest/reclaim.py; the
reservation controller, reservation.py; the node-join check's account,
components/selftest/node_join.py): one container running `python -m selftest.<module>` as the
image's user, under Pod Security `restricted`, with the little CPU and memory an API client and a
Prometheus query take; and each one's account, with a ClusterRole granted cluster-wide or, where
its rights belong to some namespaces only, by a RoleBinding in each."""

from __future__ import annotations

from typing import Any

from components.scheduling.training_job import RUN_AS, security_context

RBAC = "rbac.authorization.k8s.io/v1"
RESOURCES = {
    "requests": {"cpu": "10m", "memory": "64Mi"},
    "limits": {"cpu": "100m", "memory": "128Mi"},
}


def controller_pod(
    name: str, image: str | None, module: str, env: dict[str, str], account: str, **spec: Any
) -> dict[str, Any]:
    """The pod spec of one controller: container `name` runs `python -m <module>` with `env`,
    as `account`; `spec` adds pod fields (a Job's restartPolicy)."""
    container = {
        "name": name,
        "image": image,
        "command": ["python", "-m", module],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": RESOURCES,
        "securityContext": security_context(),
    }
    return {
        "serviceAccountName": account,
        **spec,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
    }


def controller_deployment(
    name: str, namespace: str, labels: dict[str, str], pod: dict[str, Any]
) -> dict[str, Any]:
    """One replica of a controller that loops on its own (a Deployment, not a CronJob: no Job
    for Kueue to leave alone), its pods selected by `app.kubernetes.io/name`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def service_account(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
    }


def cluster_role(name: str, rules: list[dict], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": dict(labels)},
        "rules": rules,
    }


def granted(
    role: str,
    account: str,
    namespace: str,
    labels: dict[str, str],
    where: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The ClusterRole `role` bound to the ServiceAccount `account` of `namespace`, each binding
    named as the role: cluster-wide (a ClusterRoleBinding), or given `where`, a RoleBinding in
    each of those namespaces, so the role's rights hold there alone."""
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}
    subjects = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    if where is None:
        metadata = {"name": role, "labels": dict(labels)}
        return [
            {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": metadata,
             "roleRef": ref, "subjects": subjects}
        ]  # fmt: skip
    return [
        {"apiVersion": RBAC, "kind": "RoleBinding",
         "metadata": {"name": role, "namespace": ns, "labels": dict(labels)},
         "roleRef": ref, "subjects": subjects}
        for ns in where
    ]  # fmt: skip
