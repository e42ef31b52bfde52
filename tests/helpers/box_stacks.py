"""One cluster in a box per stack and test module: out/<stack>/ as the plan writes it (with the
self-test on: tests/helpers/box_cluster.write_out), read back, the Service the pods push to
stood in for by a Pushgateway of this machine that records what it is sent."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from components.vocabulary import pushgateway_url
from tests.conftest import stack_config
from tests.helpers.box_cluster import Cluster, write_out
from tests.helpers.pushgateway import Gateway


@contextlib.contextmanager
def box(stack: str, folder: Path) -> Iterator[tuple[Cluster, Gateway]]:
    cfg = stack_config(stack)
    cluster = Cluster.of(cfg, write_out(stack, folder / "out" / stack), folder / "box")
    with Gateway() as gateway:
        cluster.serve(pushgateway_url(cfg.namespaces.monitoring), gateway.port)
        yield cluster, gateway


def selftest_jobset(cluster: Cluster) -> dict[str, Any]:
    """The post-deploy self-test's JobSet, as written to out/<stack>/manifests/."""
    (jobset,) = [
        o
        for o in cluster.manifests
        if o["kind"] == "JobSet" and o["metadata"]["namespace"] == cluster.cfg.namespaces.selftest
    ]
    return jobset
