"""A Pushgateway stand-in on 127.0.0.1 for the self-test's and the sweep's tests: it records every
request it is sent (method, path, content type, body), answers with the status it is given, and
lists `groups` at `GET /api/v1/metrics` as the Pushgateway's API does (pushgateway v1.11.3
api/v1/api.go: `{"status": "success", "data": [<group>, ...]}`)."""

from __future__ import annotations

import json

from tests.helpers.loopback import LoopbackServer, QuietHandler


class Gateway(LoopbackServer):
    """A Pushgateway stand-in on 127.0.0.1: records each request, answers with `code`."""

    def __init__(self, code: int = 200, answer: str = "", groups: list | None = None):
        received = self.received = []

        class Handler(QuietHandler):
            def do_PUT(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                received.append((self.command, self.path, self.headers["Content-Type"], body))
                self._answer(code, answer)

            def do_DELETE(self):
                received.append((self.command, self.path, None, ""))
                self._answer(code, "")

            def do_GET(self):
                received.append((self.command, self.path, None, ""))
                listed = self.path == "/api/v1/metrics"
                body = json.dumps({"status": "success", "data": groups or []})
                self._answer(200 if listed else 404, body if listed else "")

            def _answer(self, status: int, text: str):
                self.send_response(status)
                self.end_headers()
                self.wfile.write(text.encode())

        super().__init__(Handler)
