"""A Pushgateway stand-in on 127.0.0.1 for the self-test's tests: it records every request the
self-test sends (method, path, content type, body) and answers with the status it is given."""

from __future__ import annotations

import http.server
import threading


class Gateway:
    """A Pushgateway stand-in on 127.0.0.1: records each request, answers with `code`."""

    def __init__(self, code: int = 200, answer: str = ""):
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PUT(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                received.append((self.command, self.path, self.headers["Content-Type"], body))
                self.send_response(code)
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
