"""A Prometheus stand-in on 127.0.0.1: every instant query (`GET /api/v1/query?query=...`) is
answered with one vector, as the HTTP API does (prometheus.io/docs/prometheus/latest/querying/
api/, "Expression queries": `{"status": "success", "data": {"resultType": "vector", "result":
[{"metric": {...}, "value": [<unix time>, "<value as a string>"]}, ...]}}`), and each query it
was asked is recorded, with the `time` it was asked at (None when the query gave none)."""

from __future__ import annotations

import json
import urllib.parse

from tests.helpers.loopback import LoopbackServer, QuietHandler

ANSWERED_AT = 1796428800  # 2026-12-05T00:00:00Z


def sample(value: float, **labels: str) -> dict:
    """One series of an instant vector."""
    return {"metric": labels, "value": [ANSWERED_AT, repr(float(value))]}


class Prometheus(LoopbackServer):
    def __init__(self, result: list[dict]):
        queries = self.queries = []
        times = self.times = []

        class Handler(QuietHandler):
            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                if url.path != "/api/v1/query":
                    self.send_response(404)
                    self.end_headers()
                    return
                params = urllib.parse.parse_qs(url.query)
                queries.append(params["query"][0])
                times.append(params.get("time", [None])[0])
                body = {"status": "success", "data": {"resultType": "vector", "result": result}}
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

        super().__init__(Handler)
