"""A training job's live figures in Prometheus' text exposition format (version 0.0.4), served
by each pod's local rank 0 on the container port `metrics` (8000, which the job builder names);
the platform's PodMonitor scrapes it and the training-job dashboard reads it. Prometheus adds
`namespace` and `pod`; every series here carries `recipe`, the dashboard's grouping label (a
team's job gives its own name). No client library: five gauges, written by the standard
library's HTTP server. Beside them, every rank's last step time
(contract/training_metrics.RANK_STEP_SECONDS, labelled `rank` and `node`), gathered at each log
point, so the straggler view sees each node's ranks from one scrape of the node's rank 0."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from contract.training_metrics import RANK_STEP_SECONDS

METRICS_PORT = 8000
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
GAUGES = {
    "gpu_platform_training_step": "The last optimizer step finished.",
    "gpu_platform_training_loss": "The last step's loss, averaged over every rank.",
    "gpu_platform_training_step_seconds": "Wall time of the last step.",
    "gpu_platform_training_samples_per_second": "Samples per second over the whole job.",
    "gpu_platform_training_gpu_memory_bytes": "Peak memory allocated on the job's fullest GPU.",
}


RANK_STEP_HELP = "Wall time of each rank's last step, by rank and node."


def exposition(
    recipe: str, values: dict[str, float], ranks: dict[tuple[int, str], float] | None = None
) -> str:
    """The gauges set so far; one not yet set is left out rather than reported as 0."""
    lines = []
    for name, help_text in GAUGES.items():
        if name not in values:
            continue
        lines += [
            f"# HELP {name} {help_text}",
            f"# TYPE {name} gauge",
            f'{name}{{recipe="{recipe}"}} {float(values[name])!r}',
        ]
    if ranks:
        name = RANK_STEP_SECONDS
        lines += [f"# HELP {name} {RANK_STEP_HELP}", f"# TYPE {name} gauge"]
        lines += [
            f'{name}{{recipe="{recipe}",rank="{rank}",node="{node}"}} {float(v)!r}'
            for (rank, node), v in sorted(ranks.items())
        ]
    return "\n".join(lines) + "\n"


class MetricsServer:
    """The current figures over HTTP at /metrics, from a daemon thread; `port` 0 takes a free
    port (tests and the smoke), read back from `.port`."""

    def __init__(self, recipe: str, port: int = METRICS_PORT) -> None:
        self.recipe = recipe
        self.values: dict[str, float] = {}
        self.ranks: dict[tuple[int, str], float] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = server.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:  # scrapes every 15 s would flood the log
                pass

        self._http = ThreadingHTTPServer(("", port), Handler)
        self.port = self._http.server_address[1]
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def update(self, **values: float) -> None:
        with self._lock:
            self.values.update({f"gpu_platform_training_{k}": v for k, v in values.items()})

    def update_ranks(self, step_seconds: dict[tuple[int, str], float]) -> None:
        """Every rank's last step time, by (rank, node)."""
        with self._lock:
            self.ranks = dict(step_seconds)

    def render(self) -> str:
        with self._lock:
            return exposition(self.recipe, dict(self.values), dict(self.ranks))
