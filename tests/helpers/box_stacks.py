"""One cluster in a box per shipped stack and test module: out/<stack>/ as the plan writes it
(with the self-test on: tests/helpers/box_cluster.write_out), read back, its Services the pods
reach stood in for by servers of this machine (the Pushgateway, recording what it is sent; a
DCGM exporter of a node without GPUs)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from components.vocabulary import pushgateway_url
from contract.env import SELFTEST_DCGM_URL
from tests.conftest import stack_config
from tests.helpers.box_cluster import Cluster, NoGpuExporter, write_out
from tests.helpers.pushgateway import Gateway


@contextlib.contextmanager
def box(stack: str, folder: Path) -> Iterator[tuple[Cluster, Gateway]]:
    cfg = stack_config(stack)
    cluster = Cluster.of(cfg, write_out(stack, folder / "out" / stack), folder / "box")
    with Gateway() as gateway, NoGpuExporter() as dcgm:
        cluster.serve(pushgateway_url(cfg.namespaces.monitoring), gateway.port)
        for url in {
            e.get("value") for e in _env(selftest_jobset(cluster)) if e["name"] == SELFTEST_DCGM_URL
        }:
            cluster.serve(url, dcgm.port)
        yield cluster, gateway


def selftest_jobset(cluster: Cluster) -> dict[str, Any]:
    """The post-deploy self-test's JobSet, as written to out/<stack>/manifests/."""
    (jobset,) = [
        o
        for o in cluster.manifests
        if o["kind"] == "JobSet" and o["metadata"]["namespace"] == cluster.cfg.namespaces.selftest
    ]
    return jobset


def _env(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    (rj,) = jobset["spec"]["replicatedJobs"]
    return rj["template"]["spec"]["template"]["spec"]["containers"][0]["env"]
