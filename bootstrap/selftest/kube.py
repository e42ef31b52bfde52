"""The Kubernetes API from inside a pod, standard library only: the self-test reads its node's
labels (which topology domain it ran in) and, with quarantine on, cordons, labels and taints its
node; the quarantine watcher (selftest/watch.py) lists the failed preflights of team pods; the
idle reclaimer (selftest/reclaim.py) lists and deactivates Kueue Workloads.

In a pod the API server is https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, and the
pod's ServiceAccount token and the cluster's CA are mounted under
/var/run/secrets/kubernetes.io/serviceaccount (Kubernetes docs, "Accessing the Kubernetes API
from a Pod"). The token is read again for every request: the kubelet rotates projected tokens.
SELFTEST_KUBE_API_URL and SELFTEST_KUBE_SERVICEACCOUNT override both, for a stand-in server."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
URL_ENV, ACCOUNT_ENV = "SELFTEST_KUBE_API_URL", "SELFTEST_KUBE_SERVICEACCOUNT"
# JSON merge patch (RFC 7386): the fields given replace the node's, nothing else changes.
MERGE_PATCH = "application/merge-patch+json"
TIMEOUT_S = 10.0


class KubeError(Exception):
    """The API is out of reach from here, or it refused: the message says which and why."""


@dataclass(frozen=True)
class ApiServer:
    url: str
    account: Path

    @classmethod
    def in_cluster(cls, env: dict[str, str]) -> ApiServer:
        """The API server this pod reaches; KubeError when this is not a pod with a token."""
        account = Path(env.get(ACCOUNT_ENV) or SERVICE_ACCOUNT)
        url = env.get(URL_ENV)
        if not url:
            host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
            if not host:
                raise KubeError("not in a Kubernetes pod (no KUBERNETES_SERVICE_HOST)")
            url = f"https://{f'[{host}]' if ':' in host else host}:{port or 443}"
        if not (account / "token").is_file():
            raise KubeError(
                f"no ServiceAccount token at {account / 'token'} "
                "(automountServiceAccountToken: false?)"
            )
        return cls(url.rstrip("/"), account)

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https:"):
            return None
        ca = self.account / "ca.crt"
        return ssl.create_default_context(cafile=str(ca) if ca.is_file() else None)

    def request(
        self, method: str, path: str, body: dict | None = None, content_type: str | None = None
    ) -> dict[str, Any]:
        token = (self.account / "token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=self._context()) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as error:
            raise KubeError(f"{method} {path}: HTTP {error.code}: {_message(error)}") from None
        except (OSError, ValueError) as error:  # URLError, TLS, timeouts; a non-JSON answer
            raise KubeError(f"{method} {self.url}{path}: {error}") from None

    def get_node(self, name: str) -> dict[str, Any]:
        return self.request("GET", _node_path(name))

    def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", _node_path(name), patch, MERGE_PATCH)

    def patch_node_as_read(
        self, name: str, make_patch: Callable[[dict[str, Any]], dict[str, Any]], tries: int = 3
    ) -> dict[str, Any]:
        """Read the node, patch it with `make_patch(node)`, again if it changed in between (the
        patch carries the resourceVersion read, so the API answers 409 to a stale one)."""
        for tries_left in reversed(range(tries)):
            try:
                return self.patch_node(name, make_patch(self.get_node(name)))
            except KubeError as error:
                if not tries_left or "HTTP 409" not in str(error):
                    raise
        raise AssertionError("unreachable")  # the last try returns or raises

    def nodes(self, label_selector: str) -> list[dict[str, Any]]:
        """The nodes that carry the labels."""
        query = urllib.parse.urlencode({"labelSelector": label_selector})
        return self.request("GET", f"/api/v1/nodes?{query}").get("items") or []

    def failed_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        """The namespace's pods in phase Failed that carry the labels (the API's list with a
        label and a field selector: `status.phase` is one the API serves for pods)."""
        query = urllib.parse.urlencode(
            {"labelSelector": label_selector, "fieldSelector": "status.phase=Failed"}
        )
        ns = urllib.parse.quote(namespace, safe="")
        return self.request("GET", f"/api/v1/namespaces/{ns}/pods?{query}").get("items") or []

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's Kueue Workloads."""
        return self.request("GET", workloads_path(namespace)).get("items") or []

    def get_workload(self, namespace: str, name: str) -> dict[str, Any]:
        return self.request("GET", _workload_path(namespace, name))

    def patch_workload(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", _workload_path(namespace, name), patch, MERGE_PATCH)


# Kueue 0.19.2 serves kueue.x-k8s.io/v1beta2 (v1beta1 is deprecated).
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"


def workloads_path(namespace: str) -> str:
    return f"{KUEUE_API}/namespaces/{urllib.parse.quote(namespace, safe='')}/workloads"


def _workload_path(namespace: str, name: str) -> str:
    return f"{workloads_path(namespace)}/{urllib.parse.quote(name, safe='')}"


def _node_path(name: str) -> str:
    return f"/api/v1/nodes/{urllib.parse.quote(name, safe='')}"


def _message(error: urllib.error.HTTPError) -> str:
    """The API's Status message (`{"kind": "Status", "message": ...}`), else its raw answer."""
    text = error.read().decode(errors="replace")
    try:
        return json.loads(text).get("message") or text
    except ValueError:
        return text or str(error.reason)
