"""The small controllers' pod (components/scheduling/controller.py): what every one of them
(the quarantine watcher, the idle reclaimer, the reservation controller) runs under."""

from __future__ import annotations

from components.scheduling.controller import controller_deployment, controller_pod, granted
from tests.controllers.pod_security import pod_templates, violations

IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest@sha256:" + "0" * 64


def test_a_controller_runs_its_module_as_its_account_under_restricted():
    pod = controller_pod("watch", IMAGE, "selftest.watch", {"A": "1"}, "watcher")
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "selftest.watch"]
    assert container["env"] == [{"name": "A", "value": "1"}]
    assert pod["serviceAccountName"] == "watcher"
    deployment = controller_deployment("watcher", "ns", {"app.kubernetes.io/name": "watcher"}, pod)
    assert [violations(p, "restricted") for p in pod_templates(deployment)] == [[]]


def test_pod_fields_a_job_needs_are_kept():
    pod = controller_pod("reconcile", IMAGE, "selftest.reservation", {}, "r", restartPolicy="Never")
    assert pod["restartPolicy"] == "Never"


def test_a_role_is_granted_cluster_wide_or_in_each_namespace_named():
    """A ClusterRole's rights hold everywhere through a ClusterRoleBinding, or only in the
    namespaces of its RoleBindings (Kubernetes docs, "Using RBAC Authorization": a RoleBinding
    may reference a ClusterRole, granting its permissions within the RoleBinding's namespace)."""
    labels = {"app.kubernetes.io/part-of": "gpu-platform"}
    (everywhere,) = granted("reader", "watcher", "selftest", labels)
    assert everywhere["kind"] == "ClusterRoleBinding"
    assert "namespace" not in everywhere["metadata"]
    some = granted("reader", "watcher", "selftest", labels, ["team-a", "team-b"])
    assert [(b["kind"], b["metadata"]["namespace"]) for b in some] == [
        ("RoleBinding", "team-a"),
        ("RoleBinding", "team-b"),
    ]
    for binding in [everywhere, *some]:
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "reader",
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "watcher", "namespace": "selftest"}
        ]
