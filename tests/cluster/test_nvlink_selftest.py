"""The post-deploy self-test on a GB200 NVL72 pool (issue 41 §2): its run of two nodes comes with
a ComputeDomain whose channel both pods claim, so the all-reduce across them goes over NVLink,
and the two ranks, run on the CPU as torchrun agents of one rank each ("nodes" node-a and node-b)
with the environment the rendered pod carries, hold that all-reduce to NVLink's floor, not
EFA's.

Literals: the ComputeDomain and claim shapes of ../shared/PINS.md ("Claim shapes"); the floor,
1800 GB/s NVLink per GPU (NVIDIA GB200 NVL72 datasheet) at the share 460 of 900 GB/s the H100
floor reaches over its NVLink (shared/FACTS.md "Self-test numbers"; NVIDIA H100 datasheet):
920 GB/s, which no CPU reaches."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.scheduling.training_job import render
from components.selftest.job import selftest_spec
from model.config import parse_config
from tests.helpers.selftest_process import agents
from tests.helpers.selftest_stacks import IMAGE
from tests.helpers.varied_stacks import GB200_CONFIG, GB200_STACK

ROOT = Path(__file__).resolve().parents[2]
INTER = "collectives.allreduce_busbw_inter_node"
JUDGED_BY = (
    "SELFTEST_FLOORS", "SELFTEST_FLOOR_SOURCES", "SELFTEST_INSTANCE_TYPE", "SELFTEST_FABRIC",
    "SELFTEST_NODES",
)  # fmt: skip


def rendered() -> list[dict]:
    raw = {k.split(":", 1)[1]: v for k, v in GB200_CONFIG.items()}
    cfg = parse_config({**raw, "selftest": {"image": IMAGE, "nodes": 2}}, GB200_STACK)
    return render(selftest_spec(cfg))


def pod_spec(jobset: dict) -> dict:
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def test_the_run_comes_with_a_compute_domain_whose_channel_both_pods_claim():
    jobset, domain = rendered()
    assert domain["kind"] == "ComputeDomain"
    assert domain["metadata"]["namespace"] == jobset["metadata"]["namespace"]
    assert domain["spec"]["numNodes"] == 0
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    spec = pod_spec(jobset)
    assert spec["resourceClaims"] == [
        {"name": "imex-channel", "resourceClaimTemplateName": template}
    ]
    (trainer,) = spec["containers"]
    assert trainer["resources"]["claims"] == [{"name": "imex-channel"}]
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 2


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[list[int], str, dict]:
    """Both agents of the rendered run, on the CPU, with what the rendered container says of the
    hardware and its floors (the rest names the cluster's services); its report."""
    out = tmp_path_factory.mktemp("nvlink-selftest")
    (trainer,) = pod_spec(rendered()[0])["containers"]
    values = {e["name"]: e["value"] for e in trainer["env"] if "value" in e}
    judged = {k: values[k] for k in JUDGED_BY}
    args = ["--checks", "collectives", "--sizes", "1024,65536", "--iters", "3"]
    return agents({"node-a": judged, "node-b": judged}, args, out)


def test_the_all_reduce_across_the_two_nodes_is_held_to_nvlinks_floor(report):
    _, output, found = report
    (row,) = [c for c in found["checks"] if c["name"] == INTER]
    assert row["threshold"] == 920.0, output[-3000:]
    assert "NVLink" in row["source"] and "p6e-gb200.36xlarge: 1800 GB/s" in row["source"]
    # A CPU's gloo is far below NVLink: the verdict is the floor's, not a skip.
    assert row["status"] == "FAIL"
    assert "under the 920.0 GB/s floor" in row["reason"]
