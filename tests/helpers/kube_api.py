"""A Kubernetes API server stand-in on 127.0.0.1 for the self-test's tests, over TLS with a
certificate made for the test, as a pod sees the real one: its ServiceAccount folder holds the
token and the CA (`ca.crt`). It records every request (method, path, headers, JSON body) and
answers from a table of (method, path with its query) -> (status, JSON document), which its
owner may change while it serves (`answers`: the cluster in a box lists its failed pods)."""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.parse
from pathlib import Path

from tests.helpers.loopback import LoopbackServer, QuietHandler
from tests.helpers.tools import openssl

TOKEN = "eyJhbGciOiJSUzI1NiJ9.test-token"


class ApiServer(LoopbackServer):
    def __init__(self, folder: Path, answers: dict[tuple[str, str], tuple[int, dict]]):
        self.account = folder / "serviceaccount"
        self.account.mkdir(parents=True)
        (self.account / "token").write_text(TOKEN + "\n")
        key, cert = folder / "server.key", self.account / "ca.crt"
        subprocess.run(
            [openssl(), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1",
             "-addext", "basicConstraints=critical,CA:TRUE"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        received = self.received = []
        self.answers = answers

        class Handler(QuietHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                received.append(
                    (self.command, self.path, dict(self.headers), json.loads(body or "null"))
                )
                status, doc = answers.get((self.command, self.path), (404, NOT_FOUND))
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PATCH = _answer

        super().__init__(Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)

    def env(self) -> dict[str, str]:
        """What the kubelet gives a pod: the API's Service address (and the mounted account,
        whose usual path the test cannot write)."""
        return {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.port),
            "SELFTEST_KUBE_SERVICEACCOUNT": str(self.account),
        }


# The API server's answer for an object it does not hold (a metav1.Status).
NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "NotFound",
    "code": 404,
    "message": "the server could not find the requested resource",
}


def node(name: str, labels: dict[str, str]) -> dict:
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "labels": labels}}


def merge_patched(target: object, patch: object) -> object:
    """`target` as the API server leaves it after a JSON merge patch (RFC 7386, section 2
    MergePatch): an object merges key by key, a null removes the key, anything else (a list
    too) replaces what was there."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patched(merged.get(key), value)
    return merged


def failed_pods_path(namespace: str, label_selector: str) -> str:
    """The API's list of a namespace's failed pods that carry the labels, as a client asks for
    it: a label and a field selector (`status.phase`, one the API serves for pods), URL-encoded."""
    query = urllib.parse.urlencode(
        {"labelSelector": label_selector, "fieldSelector": "status.phase=Failed"}
    )
    return f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/pods?{query}"
