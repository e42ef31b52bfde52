"""The tests' loopback networking: a free port, and one way to stand up an HTTP server on
127.0.0.1 (a Pushgateway, a Kubernetes API server, a DCGM exporter): it serves `handler` on a
free port from a daemon thread for the length of a `with` block, and logs nothing."""

from __future__ import annotations

import http.server
import socket
import threading

# How often a serving thread looks for a shutdown: `socketserver`'s default of 0.5 s is what
# every server's shutdown waited out (7 s of a `make test` worker in tests/plan/test_charts.py's
# chart repositories alone); a wake-up every 10 ms costs the thread nothing measurable.
SHUTDOWN_POLL_S = 0.01


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now: for a process group's rendezvous, or
    as an address that refuses connections."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class QuietHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass


class LoopbackServer:
    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]):
        self.server = http.server.HTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        threading.Thread(
            target=self.server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True
        ).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
