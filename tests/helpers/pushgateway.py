"""A Pushgateway stand-in on 127.0.0.1 for the self-test's tests: it records every request the
self-test sends (method, path, content type, body) and answers with the status it is given."""

from __future__ import annotations

from tests.helpers.loopback import LoopbackServer, QuietHandler


class Gateway(LoopbackServer):
    """A Pushgateway stand-in on 127.0.0.1: records each request, answers with `code`."""

    def __init__(self, code: int = 200, answer: str = ""):
        received = self.received = []

        class Handler(QuietHandler):
            def do_PUT(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                received.append((self.command, self.path, self.headers["Content-Type"], body))
                self.send_response(code)
                self.end_headers()
                self.wfile.write(answer.encode())

        super().__init__(Handler)
